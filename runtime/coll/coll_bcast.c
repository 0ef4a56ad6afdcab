/* runtime/coll/coll_bcast.c: broadcast by binomial tree (small), pipelined
 * chain (large: each rank forwards a segment while it receives the next),
 * or hierarchically (in the root's node, then among leaders, then in the
 * other nodes). Works in place on buf. */
#include "coll/coll.h"

#include <string.h>

#define CHAIN_SEG (256u * 1024)

static int tree_bcast(struct loom_comm *c, char *buf, size_t bytes, int root, struct loom_opctx *o)
{
	int N = c->size, vr = loom_mod(c->rank - root, N), mask = 1, rc = 0;
	struct loom_xctx x;
	loom_x_begin_o(&x, c, o, o->seq);
	while (mask < N) {
		if (vr & mask) {
			loom_x_recv(&x, loom_mod(vr - mask + root, N), buf, bytes);
			rc = loom_x_wait(&x, -1);
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0 && !rc; mask >>= 1)
		if (vr + mask < N)
			loom_x_send(&x, loom_mod(vr + mask + root, N), buf, bytes);
	if (rc) {
		loom_x_abandon(&x);
		return rc;
	}
	return loom_x_end(&x);
}

static int chain_bcast(struct loom_comm *c, char *buf, size_t bytes, int root,
		       struct loom_opctx *o)
{
	int N = c->size, vr = loom_mod(c->rank - root, N), rc = 0;
	int prev = loom_mod(vr - 1 + root, N), next = loom_mod(vr + 1 + root, N);
	size_t off;
	struct loom_xctx x;
	loom_x_begin_o(&x, c, o, o->seq);
	for (off = 0; off < bytes && !rc; off += CHAIN_SEG) {
		size_t l = bytes - off < CHAIN_SEG ? bytes - off : CHAIN_SEG;
		if (vr > 0) {
			int h = loom_x_recv(&x, prev, buf + off, l);
			if (h < 0 || (rc = loom_x_wait(&x, h)))
				break;
		}
		if (vr < N - 1)
			loom_x_send(&x, next, buf + off, l);
	}
	if (rc || x.status) {
		loom_x_abandon(&x);
		return rc ? rc : x.status;
	}
	return loom_x_end(&x);
}

/* a node's part of a hierarchical broadcast: plan.c says why it differs */
static int node_bcast(struct loom_comm *nc, char *buf, size_t bytes, int root,
		      struct loom_opctx *o)
{
	if (loom_plan_bcast_node_part(nc->w->transport, nc->size, bytes) == LOOM_ALG_TREE)
		return tree_bcast(nc, buf, bytes, root, o);
	return loom_coll_bcast(nc, buf, bytes, root, o);
}

static int hier_bcast(struct loom_comm *c, char *buf, size_t bytes, int root, struct loom_opctx *o)
{
	struct loom_opctx so = *o;
	int rc = loom_comm_ensure_hier(c), rootnode = loom_comm_node_pos(c, root);
	int mine = loom_comm_node_pos(c, c->rank) == rootnode;
	if (rc)
		return rc;
	if (mine && c->nodec->size > 1) {
		so.seq = loom_op_enter(c->nodec);
		if ((rc = node_bcast(c->nodec, buf, bytes, loom_comm_local_idx(c, root), &so)))
			return rc;
	}
	if (c->leaderc && c->leaderc->size > 1) {
		so.seq = loom_op_enter(c->leaderc);
		if ((rc = loom_coll_bcast(c->leaderc, buf, bytes, rootnode, &so)))
			return rc;
	}
	if (!mine && c->nodec->size > 1) {
		so.seq = loom_op_enter(c->nodec);
		rc = node_bcast(c->nodec, buf, bytes, 0, &so);
	}
	return rc;
}

int loom_coll_bcast_from(struct loom_comm *c, const void *src, void *buf, size_t bytes, int root,
			 struct loom_opctx *o)
{
	const char *s = src, *b = buf;
	int copy = c->rank == root && s && s != b && bytes;
	int alg = loom_plan_bcast(c->w->transport, c->size, c->nnodes, loom_comm_max_local(c), bytes);
	if (alg == LOOM_ALG_DIRECT) {
		/* the readers read the root's source while the root copies it
		 * into its own buffer, when the two do not overlap; else the
		 * root's buffer is filled before anyone reads it */
		int apart = copy && (s + bytes <= b || b + bytes <= s), fallback, rc;
		if (copy && !apart) {
			memmove(buf, src, bytes);
			copy = 0;
		}
		rc = loom_direct_bcast(c, apart ? s : NULL, buf, bytes, root, o, &fallback);
		if (rc || !fallback)
			return rc;
		alg = LOOM_ALG_CHAIN;  /* direct reads refused here: the rings */
	}
	if (copy)
		memmove(buf, src, bytes);
	switch (alg) {
	case LOOM_ALG_TRIVIAL: return LOOM_SUCCESS;
	case LOOM_ALG_FBOX: return loom_fbox_bcast(c, buf, bytes, root, o);
	case LOOM_ALG_HIER: return hier_bcast(c, buf, bytes, root, o);
	case LOOM_ALG_TREE: return tree_bcast(c, buf, bytes, root, o);
	default: return chain_bcast(c, buf, bytes, root, o);
	}
}

int loom_coll_bcast(struct loom_comm *c, void *buf, size_t bytes, int root, struct loom_opctx *o)
{
	return loom_coll_bcast_from(c, NULL, buf, bytes, root, o);
}
