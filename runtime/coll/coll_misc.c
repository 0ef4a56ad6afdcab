/* runtime/coll/coll_misc.c: alltoall (pairwise exchange: in step k rank r sends
 * to r+k and receives from r-k, all steps in flight at once) and barrier
 * (dissemination: ceil(log2 N) rounds of one-byte messages). */
#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>

int loom_coll_alltoall(struct loom_comm *c, const void *sv, void *rv, size_t bytes,
		       struct loom_opctx *o)
{
	const char *s = sv;
	char *r = rv, *copy = NULL;
	int N = c->size, me = c->rank, k;
	struct loom_xctx x;
	if (loom_plan_fbox(c->w->transport, N, c->nnodes, (size_t)N * bytes))
		return loom_fbox_alltoall(c, sv, rv, bytes, o);
	if (s == r && N > 1) {
		copy = malloc((size_t)N * bytes + 1);
		if (!copy)
			return LOOM_ERR_NOMEM;
		memcpy(copy, s, (size_t)N * bytes);
		s = copy;
	}
	/* it copies my own block too, past the caches */
	if (!copy && N > 1 && loom_plan_staged(c->w->transport, N, c->nnodes, (size_t)N * bytes, 0)) {
		int rc, fallback = 1;
		if (!loom_staged_wanted(c, (size_t)N * bytes, o, &rc)) {
			if (rc)
				return rc;
			memmove(r + (size_t)me * bytes, s + (size_t)me * bytes, bytes);
			rc = loom_direct_alltoall(c, s, r, bytes, o, &fallback);
		}
		return rc || !fallback ? rc : loom_staged_alltoall(c, s, r, bytes, o);
	}
	if (s != r && bytes)
		memmove(r + (size_t)me * bytes, s + (size_t)me * bytes, bytes);
	if (N == 1)
		return LOOM_SUCCESS;
	if (!copy && loom_plan_direct(c->w->transport, N, c->nnodes, (size_t)N * bytes)) {
		int fallback;
		k = loom_direct_alltoall(c, s, r, bytes, o, &fallback);
		if (k || !fallback)
			return k;
	}
	loom_x_begin_o(&x, c, o, o->seq);
	for (k = 1; k < N; k++) {
		int to = (me + k) % N, from = (me + N - k) % N;
		loom_x_recv(&x, from, r + (size_t)from * bytes, bytes);
		loom_x_send(&x, to, s + (size_t)to * bytes, bytes);
	}
	k = loom_x_end(&x);
	free(copy);
	return k;
}

int loom_coll_barrier(struct loom_comm *c, struct loom_opctx *o)
{
	int N = c->size, me = c->rank, k, rc = 0;
	char out = 1, in[64];
	struct loom_xctx x;
	if (N == 1)
		return LOOM_SUCCESS;
	if (loom_plan_fbox(c->w->transport, N, c->nnodes, 0))
		return loom_fbox_barrier(c, o);
	loom_x_begin_o(&x, c, o, o->seq);
	for (k = 1; k < N && !rc; k <<= 1) {
		loom_x_send(&x, (me + k) % N, &out, 1);
		loom_x_recv(&x, (me + N - k) % N, &in[0], 1);
		rc = loom_x_wait(&x, -1);
	}
	if (rc) {
		loom_x_abandon(&x);
		return rc;
	}
	return loom_x_end(&x);
}
