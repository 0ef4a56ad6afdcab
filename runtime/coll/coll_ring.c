/* runtime/coll/coll_ring.c: allgather and reduce_scatter by ring (N-1 steps,
 * each rank sends to its right neighbour while receiving from its left;
 * over shm both ranks of a pair copy/reduce at once). */
#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>

int loom_coll_allgather(struct loom_comm *c, const void *s, void *rv, size_t bytes,
			struct loom_opctx *o)
{
	char *r = rv, *mine = r + (size_t)c->rank * bytes;
	const char *sc = s;
	int N = c->size, me = c->rank, right = (me + 1) % N, left = (me + N - 1) % N, st, rc = 0;
	struct loom_xctx x;
	if (N > 1 && loom_plan_staged(c->w->transport, N, c->nnodes, (size_t)N * bytes, 0)) {
		/* mine is read where the caller passed it when that lies
		 * outside r, else from its place in r */
		int apart = sc + bytes <= r || r + (size_t)N * bytes <= sc, fallback = 1;
		if (!apart && sc != mine && bytes)
			memmove(mine, s, bytes);
		if (!apart)
			sc = mine;
		if (!loom_staged_wanted(c, (size_t)N * bytes, o, &rc)) {
			if (rc)
				return rc;
			rc = loom_direct_allgather(c, apart ? sc : NULL, r, bytes, o, &fallback);
			if (rc || !fallback)
				return rc;
		}
		return loom_staged_allgather(c, sc, r, bytes, o);
	}
	if (N > 1 && loom_plan_direct(c->w->transport, N, c->nnodes, (size_t)N * bytes)) {
		/* the peers read my part at s while I copy it into place, when
		 * s lies outside r (else it is put in place first) */
		int fallback, apart = sc + bytes <= r || r + (size_t)N * bytes <= sc;
		if (!apart && sc != mine && bytes)
			memmove(mine, s, bytes);
		rc = loom_direct_allgather(c, apart ? sc : NULL, r, bytes, o, &fallback);
		if (rc || !fallback)
			return rc;
		if (!apart)
			sc = mine;  /* in place already */
	}
	if (sc != mine && bytes)
		memmove(mine, sc, bytes);
	if (N == 1)
		return LOOM_SUCCESS;
	if (loom_plan_fbox(c->w->transport, N, c->nnodes, bytes))
		return loom_fbox_allgather(c, mine, r, bytes, o);
	loom_x_begin_o(&x, c, o, o->seq);
	for (st = 0; st < N - 1 && !rc; st++) {
		int sb = loom_mod(me - st, N), rb = loom_mod(me - st - 1, N);
		loom_x_send(&x, right, r + (size_t)sb * bytes, bytes);
		loom_x_recv(&x, left, r + (size_t)rb * bytes, bytes);
		rc = loom_x_wait(&x, -1);
	}
	if (rc) {
		loom_x_abandon(&x);
		return rc;
	}
	return loom_x_end(&x);
}

int loom_coll_reduce_scatter(struct loom_comm *c, const void *s, void *r, size_t n,
			     loom_dtype_t dt, loom_op_t op, struct loom_opctx *o)
{
	size_t es = loom_dtype_size(dt), bb = n * es;
	int N = c->size, me = c->rank, right = (me + 1) % N, left = (me + N - 1) % N, st, rc = 0;
	struct loom_xctx x;
	char *acc;
	if (N == 1) {
		if (s != r && bb)
			memmove(r, s, bb);
		return LOOM_SUCCESS;
	}
	if (loom_plan_fbox(c->w->transport, N, c->nnodes, (size_t)N * bb))
		return loom_fbox_reduce_scatter(c, s, r, n, dt, op, o);
	if (loom_plan_direct(c->w->transport, N, c->nnodes, (size_t)N * bb) && s != r) {
		int fallback;
		rc = loom_direct_reduce_scatter(c, s, r, n, dt, op, o, &fallback);
		if (rc || !fallback)
			return rc;
	}
	acc = malloc((size_t)N * bb + 1);
	if (!acc)
		return LOOM_ERR_NOMEM;
	memcpy(acc, s, (size_t)N * bb);
	loom_x_begin_o(&x, c, o, o->seq);
	for (st = 0; st < N - 1 && !rc; st++) {
		int sb = loom_mod(me - st - 1, N), rb = loom_mod(me - st - 2, N);
		loom_x_send(&x, right, acc + (size_t)sb * bb, bb);
		loom_x_recv_reduce(&x, left, acc + (size_t)rb * bb, n, dt, op);
		rc = loom_x_wait(&x, -1);
	}
	if (rc)
		loom_x_abandon(&x);
	else
		rc = loom_x_end(&x);
	if (!rc)
		memcpy(r, acc + (size_t)me * bb, bb);
	free(acc);
	return rc;
}
