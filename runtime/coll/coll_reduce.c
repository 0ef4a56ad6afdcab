/* runtime/coll/coll_reduce.c: reduce to a root by binomial tree (small), by
 * ring reduce-scatter then a gather of the blocks at the root (large),
 * hierarchically (reduce to each node's leader, reduce among leaders,
 * hand the result to the root if it is not its node's leader), or by the
 * allreduce of the same size where that is the lanes (large, across nodes
 * of equal size) or the staged slots (large, in one node). send is never
 * written; recv is touched at the root only. */
#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>

static int tree_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
		       loom_op_t op, int root, struct loom_opctx *o)
{
	size_t bytes = n * loom_dtype_size(dt);
	int N = c->size, vr = loom_mod(c->rank - root, N), mask, rc = 0;
	char *acc = c->rank == root ? r : malloc(bytes ? bytes : 1);
	struct loom_xctx x;
	if (!acc)
		return LOOM_ERR_NOMEM;
	if (acc != s)
		memmove(acc, s, bytes);
	loom_x_begin_o(&x, c, o, o->seq);
	for (mask = 1; mask < N && !rc; mask <<= 1) {
		if (vr & mask) {
			loom_x_send(&x, loom_mod((vr & ~mask) + root, N), acc, bytes);
			rc = loom_x_wait(&x, -1);
			break;
		}
		if (vr + mask < N) {
			loom_x_recv_reduce(&x, loom_mod(vr + mask + root, N), acc, n, dt, op);
			rc = loom_x_wait(&x, -1);
		}
	}
	if (rc)
		loom_x_abandon(&x);
	else
		rc = loom_x_end(&x);
	if (acc != r)
		free(acc);
	return rc;
}

static int ring_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
		       loom_op_t op, int root, struct loom_opctx *o)
{
	size_t es = loom_dtype_size(dt), bytes = n * es;
	int N = c->size, me = c->rank, right = (me + 1) % N, left = (me + N - 1) % N, st, rc = 0;
	char *acc = malloc(bytes ? bytes : 1);
	struct loom_xctx x;
	if (!acc)
		return LOOM_ERR_NOMEM;
	memcpy(acc, s, bytes);
	loom_x_begin_o(&x, c, o, o->seq);
	for (st = 0; st < N - 1 && !rc; st++) {
		int sb = loom_mod(me - st, N), rb = loom_mod(me - st - 1, N);
		loom_x_send(&x, right, acc + loom_blk_off(n, N, sb) * es, loom_blk_cnt(n, N, sb) * es);
		loom_x_recv_reduce(&x, left, acc + loom_blk_off(n, N, rb) * es,
				   loom_blk_cnt(n, N, rb), dt, op);
		rc = loom_x_wait(&x, -1);
	}
	/* rank j now holds block j+1 fully reduced */
	if (!rc) {
		int mine = (me + 1) % N, j;
		if (me != root) {
			loom_x_send(&x, root, acc + loom_blk_off(n, N, mine) * es,
				    loom_blk_cnt(n, N, mine) * es);
		} else {
			memcpy(r + loom_blk_off(n, N, mine) * es, acc + loom_blk_off(n, N, mine) * es,
			       loom_blk_cnt(n, N, mine) * es);
			for (j = 0; j < N; j++) {
				int b = (j + 1) % N;
				if (j != root)
					loom_x_recv(&x, j, r + loom_blk_off(n, N, b) * es,
						    loom_blk_cnt(n, N, b) * es);
			}
		}
		rc = loom_x_wait(&x, -1);
	}
	if (rc)
		loom_x_abandon(&x);
	else
		rc = loom_x_end(&x);
	free(acc);
	return rc;
}

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
	char *out = r, *own = NULL;
	int rc;
	if (c->rank != root) {
		if (bytes > REDUCE_KEEP_MAX) {
			out = own = malloc(bytes);
		} else {
			if (c->reduce_out_len < bytes) {
				free(c->reduce_out);  /* grown, not copied: nothing in it is kept */
				c->reduce_out = malloc(bytes);
				c->reduce_out_len = c->reduce_out ? bytes : 0;
			}
			out = c->reduce_out;
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
		return ring_reduce(c, s, r, n, dt, op, root, o);
	}
	case LOOM_ALG_HIER: return hier_reduce(c, s, r, n, dt, op, root, o);
	case LOOM_ALG_LANES_RS:
	case LOOM_ALG_STAGED: return allreduce_reduce(c, s, r, n, dt, op, root, o);
	case LOOM_ALG_TREE: return tree_reduce(c, s, r, n, dt, op, root, o);
	default: return ring_reduce(c, s, r, n, dt, op, root, o);
	}
}
