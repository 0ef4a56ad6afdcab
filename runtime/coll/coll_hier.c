/* runtime/coll/coll_hier.c: the collectives that have a hierarchical form
 * (allreduce, reduce, broadcast): the choice among their algorithms
 * (plan.c says why) and the compositions over the node, leader and lane
 * sub-communicators. Above the flat algorithms (coll_allreduce.c,
 * coll_reduce.c, coll_bcast.c, coll_fbox.c, coll_direct.c, coll_staged.c),
 * which never call back up: a composition calls this file's entries on
 * the sub-communicators, whose shape (one node, or one rank per node)
 * takes a flat algorithm there. */
#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>

/* ---- allreduce ---- */

/* Lanes (every node holds as many ranks, above LOOM_SMALL_BYTES, plan.c):
 * the node's reduce-scatter (direct reads, else the ring) leaves each rank
 * one block of the node's sum, its lane (one rank per node) allreduces
 * that block across nodes (all lanes at once: every rank carries
 * 1/local_size of the inter-node volume), the node's allgather spreads
 * the blocks. Each element is reduced by one chain of ranks and copied
 * from there: bit-identical everywhere. */
static int lanes_allreduce(struct loom_comm *c, const char *s, char *buf, size_t n,
			   loom_dtype_t dt, loom_op_t op, struct loom_opctx *o)
{
	struct loom_opctx so = *o;
	struct loom_comm *nc;
	size_t es = loom_dtype_size(dt), off = 0, cnt = n;
	int rc = loom_comm_ensure_hier(c), L, fallback = 1, direct = 0;
	if (rc)
		return rc;
	nc = c->nodec;
	L = nc->size;
	if (L > 1) {
		/* Local rank j carries block j on its lane, on every node: the
		 * direct reads leave it there, and so does the ring here (k = 0).
		 * Whether a node can read its peers is that node's own answer;
		 * with the ring's usual block j + 1 a node without direct reads
		 * put other blocks on the lanes than its peers (wrong sums). */
		so.seq = loom_op_enter(nc);
		/* direct reads take the inputs where they are: a copy of s into
		 * buf first would be a read and a write of every byte more */
		if (loom_plan_direct(c->w->transport, L, 1, n * es))
			rc = loom_direct_rs(nc, s, buf, n, dt, op, &so, &fallback);
		if (!rc && !fallback) {
			direct = 1;
		} else if (!rc) {
			if (s != buf && n)
				memcpy(buf, s, n * es);
			rc = loom_ring_rs(nc, buf, n, dt, op, &so, 0);
		}
		if (rc)
			return rc;
		off = loom_blk_off(n, L, nc->rank);
		cnt = loom_blk_cnt(n, L, nc->rank);
	} else if (s != buf && n) {
		memcpy(buf, s, n * es);
	}
	so.seq = loom_op_enter(c->lanec);
	if ((rc = loom_coll_allreduce(c->lanec, buf + off * es, buf + off * es, cnt, dt, op, &so)))
		return rc;
	if (L > 1) {
		so.seq = loom_op_enter(nc);
		rc = direct ? loom_direct_ag(nc, buf, n, es, &so, &fallback)
			    : loom_ring_ag(nc, buf, n, es, &so, 0);
	}
	return rc;
}

static int hier_allreduce(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
			  struct loom_opctx *o)
{
	struct loom_opctx so = *o;
	int rc = loom_comm_ensure_hier(c);
	if (rc)
		return rc;
	if (c->nodec->size > 1) {
		so.seq = loom_op_enter(c->nodec);
		if ((rc = loom_coll_reduce(c->nodec, buf, buf, n, dt, op, 0, &so)))
			return rc;
	}
	if (c->leaderc && c->leaderc->size > 1) {
		so.seq = loom_op_enter(c->leaderc);
		if ((rc = loom_coll_allreduce(c->leaderc, buf, buf, n, dt, op, &so)))
			return rc;
	}
	if (c->nodec->size > 1) {
		so.seq = loom_op_enter(c->nodec);
		rc = loom_coll_bcast(c->nodec, buf, n * loom_dtype_size(dt), 0, &so);
	}
	return rc;
}

int loom_coll_allreduce(struct loom_comm *c, const void *s, void *r, size_t n, loom_dtype_t dt,
			loom_op_t op, struct loom_opctx *o)
{
	size_t bytes = n * loom_dtype_size(dt);
	int alg = loom_plan_allreduce(c->w->transport, c->size, c->nnodes, loom_comm_max_local(c),
				      bytes, n);
	if (alg == LOOM_ALG_STAGED) {  /* both read s where it is */
		int rc, fallback = 1;
		if (!loom_staged_wanted(c, bytes, o, &rc)) {
			if (rc)
				return rc;
			rc = loom_direct_allreduce(c, s, r, n, dt, op, o, &fallback);
		}
		return rc || !fallback ? rc : loom_staged_allreduce(c, s, r, n, dt, op, o);
	}
	if (alg == LOOM_ALG_DIRECT) { /* reads s where it is */
		int fallback, rc = loom_direct_allreduce(c, s, r, n, dt, op, o, &fallback);
		if (rc || !fallback)
			return rc;
	}
	/* the lanes copy s into r themselves where they need it */
	if (alg == LOOM_ALG_LANES_RS)
		return lanes_allreduce(c, s, r, n, dt, op, o);
	if (s != r && bytes)
		memcpy(r, s, bytes);
	switch (alg) {
	case LOOM_ALG_TRIVIAL: return LOOM_SUCCESS;
	case LOOM_ALG_FBOX: return loom_fbox_allreduce(c, r, n, dt, op, o);
	case LOOM_ALG_HIER: return hier_allreduce(c, r, n, dt, op, o);
	case LOOM_ALG_RD: return loom_rd_allreduce(c, r, n, dt, op, o);
	default: return loom_ring_allreduce(c, r, n, dt, op, o);  /* also direct's fallback */
	}
}

/* ---- reduce ---- */

static int hier_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
		       loom_op_t op, int root, struct loom_opctx *o)
{
	struct loom_opctx so = *o;
	size_t bytes = n * loom_dtype_size(dt);
	int rc = loom_comm_ensure_hier(c), rootnode = loom_comm_node_pos(c, root);
	int leader = c->local_rank == 0, on_root_node = loom_comm_node_pos(c, c->rank) == rootnode;
	char *acc = NULL;
	if (rc)
		return rc;
	if (leader) {
		acc = c->rank == root ? r : malloc(bytes ? bytes : 1);
		if (!acc)
			return LOOM_ERR_NOMEM;
	}
	if (c->nodec->size > 1) {
		so.seq = loom_op_enter(c->nodec);
		rc = loom_coll_reduce(c->nodec, s, acc, n, dt, op, 0, &so);
	} else if (acc != s) {
		memmove(acc, s, bytes);
	}
	if (!rc && leader && c->leaderc->size > 1) {
		so.seq = loom_op_enter(c->leaderc);
		rc = loom_coll_reduce(c->leaderc, acc, acc, n, dt, op, rootnode, &so);
	}
	if (!rc && on_root_node && loom_comm_leader(c, rootnode) != root) {
		struct loom_xctx x;
		so.seq = loom_op_enter(c->nodec);
		loom_x_begin_o(&x, c->nodec, &so, so.seq);
		if (leader)
			loom_x_send(&x, loom_comm_local_idx(c, root), acc, bytes);
		else if (c->rank == root)
			loom_x_recv(&x, 0, r, bytes);
		rc = loom_x_end(&x);
	}
	if (acc && acc != r)
		free(acc);
	return rc;
}

/* A large reduce across nodes of equal size, or in one node: the lanes or
 * the staged allreduce (plan.c),
 * into the root's buffer there and into a kept one elsewhere (a fresh
 * 16 MiB each call would be 4,096 page faults). Above REDUCE_KEEP_MAX a
 * non-root takes it for the call only, as the leaders' reduce takes its
 * own accumulators. */
#define REDUCE_KEEP_MAX (64u << 20)
static int allreduce_reduce(struct loom_comm *c, const char *s, char *r, size_t n,
			    loom_dtype_t dt, loom_op_t op, int root, struct loom_opctx *o)
{
	size_t bytes = n * loom_dtype_size(dt);
	struct loom_coll_state *st;
	char *out = r, *own = NULL;
	int rc;
	if (c->rank != root) {
		if (bytes > REDUCE_KEEP_MAX) {
			out = own = malloc(bytes);
		} else if ((st = loom_coll_state_of(c))) {
			if (st->reduce_out_len < bytes) {
				free(st->reduce_out);  /* grown, not copied: nothing in it is kept */
				st->reduce_out = malloc(bytes);
				st->reduce_out_len = st->reduce_out ? bytes : 0;
			}
			out = st->reduce_out;
		} else {
			out = NULL;
		}
		if (!out)
			return LOOM_ERR_NOMEM;
	}
	rc = loom_coll_allreduce(c, s, out, n, dt, op, o);
	free(own);
	return rc;
}

int loom_coll_reduce(struct loom_comm *c, const void *s, void *r, size_t n, loom_dtype_t dt,
		     loom_op_t op, int root, struct loom_opctx *o)
{
	size_t bytes = n * loom_dtype_size(dt);
	switch (loom_plan_reduce(c->w->transport, c->size, c->nnodes, loom_comm_max_local(c), bytes,
				 n)) {
	case LOOM_ALG_TRIVIAL:
		if (s != r && bytes)
			memmove(r, s, bytes);
		return LOOM_SUCCESS;
	case LOOM_ALG_FBOX: return loom_fbox_reduce(c, s, r, n, dt, op, root, o);
	case LOOM_ALG_SLOTS: return loom_slots_reduce(c, s, r, n, dt, op, root, o);
	case LOOM_ALG_DIRECT: {
		int fallback, rc = loom_direct_reduce(c, s, r, n, dt, op, root, o, &fallback);
		if (rc || !fallback)
			return rc;
		return loom_ring_reduce(c, s, r, n, dt, op, root, o);
	}
	case LOOM_ALG_HIER: return hier_reduce(c, s, r, n, dt, op, root, o);
	case LOOM_ALG_LANES_RS:
	case LOOM_ALG_STAGED: return allreduce_reduce(c, s, r, n, dt, op, root, o);
	case LOOM_ALG_TREE: return loom_tree_reduce(c, s, r, n, dt, op, root, o);
	default: return loom_ring_reduce(c, s, r, n, dt, op, root, o);
	}
}

/* ---- broadcast ---- */

/* a node's part of a hierarchical broadcast: plan.c says why it differs */
static int node_bcast(struct loom_comm *nc, char *buf, size_t bytes, int root,
		      struct loom_opctx *o)
{
	if (loom_plan_bcast_node_part(nc->w->transport, nc->size, bytes) == LOOM_ALG_TREE)
		return loom_tree_bcast(nc, buf, bytes, root, o);
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
	case LOOM_ALG_TREE: return loom_tree_bcast(c, buf, bytes, root, o);
	default: return loom_chain_bcast(c, buf, bytes, root, o);
	}
}

int loom_coll_bcast(struct loom_comm *c, void *buf, size_t bytes, int root, struct loom_opctx *o)
{
	return loom_coll_bcast_from(c, NULL, buf, bytes, root, o);
}
