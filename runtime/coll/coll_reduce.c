/* runtime/coll/coll_reduce.c: the flat reduces to a root: by binomial tree
 * (small), or by ring reduce-scatter then a gather of the blocks at the
 * root (large). send is never written; recv is touched at the root only. */
#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>

int loom_tree_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
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

int loom_ring_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
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
