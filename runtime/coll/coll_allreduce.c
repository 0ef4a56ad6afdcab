/* runtime/coll/coll_allreduce.c: the flat allreduces, in place on buf: by
 * recursive doubling (small; ranks above the largest power of two fold
 * into a partner first) and by ring (reduce-scatter then allgather;
 * large), whose halves the lanes of coll_hier.c use too. Every rank ends
 * with bit-identical results, and the order of reduction depends only on
 * the communicator's shape and the size, so reruns are bit-identical. */
#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>

int loom_rd_allreduce(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
			struct loom_opctx *o)
{
	size_t es = loom_dtype_size(dt), bytes = n * es;
	int size = c->size, rank = c->rank, p = 1, rem, newrank, mask, rc;
	struct loom_xctx x;
	char small[256], *tmp = bytes <= sizeof small ? small : malloc(bytes);
	if (!tmp)
		return LOOM_ERR_NOMEM;
	while (p * 2 <= size)
		p *= 2;
	rem = size - p;
	loom_x_begin_o(&x, c, o, o->seq);
	if (rank < 2 * rem) {
		if (rank % 2 == 0) {
			loom_x_send(&x, rank + 1, buf, bytes);
			newrank = -1;
		} else {
			loom_x_recv_reduce(&x, rank - 1, buf, n, dt, op);
			newrank = rank / 2;
		}
		if ((rc = loom_x_wait(&x, -1)))
			goto out;
	} else {
		newrank = rank - rem;
	}
	if (newrank >= 0) {
		for (mask = 1; mask < p; mask <<= 1) {
			int pn = newrank ^ mask, peer = pn < rem ? pn * 2 + 1 : pn + rem;
			loom_x_send(&x, peer, buf, bytes);
			loom_x_recv(&x, peer, tmp, bytes);
			if ((rc = loom_x_wait(&x, -1)))
				goto out;
			/* lower rank's partial first, so both partners compute the same */
			if (peer < rank) {
				loom_reduce_local(tmp, buf, n, dt, op);
				memcpy(buf, tmp, bytes);
			} else {
				loom_reduce_local(buf, tmp, n, dt, op);
			}
		}
	}
	if (rank < 2 * rem) {
		if (rank % 2)
			loom_x_send(&x, rank - 1, buf, bytes);
		else
			loom_x_recv(&x, rank + 1, buf, bytes);
		if ((rc = loom_x_wait(&x, -1)))
			goto out;
	}
	rc = LOOM_SUCCESS;
out:
	rc = rc ? (loom_x_abandon(&x), rc) : loom_x_end(&x);
	if (tmp != small)
		free(tmp);
	return rc;
}

/* the ring's reduce-scatter: afterwards rank r holds block (r+k) % N of
 * buf reduced over all ranks (k = 1 the ring's own; k = 0 where the
 * lanes need block r, as the direct reads leave it) */
int loom_ring_rs(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
		 struct loom_opctx *o, int k)
{
	size_t es = loom_dtype_size(dt);
	int N = c->size, r = c->rank, right = (r + 1) % N, left = (r + N - 1) % N, s, rc = 0;
	struct loom_xctx x;
	loom_x_begin_o(&x, c, o, o->seq);
	for (s = 0; s < N - 1 && !rc; s++) {
		int sb = loom_mod(r - s + k - 1, N), rb = loom_mod(r - s + k - 2, N);
		loom_x_send(&x, right, buf + loom_blk_off(n, N, sb) * es, loom_blk_cnt(n, N, sb) * es);
		loom_x_recv_reduce(&x, left, buf + loom_blk_off(n, N, rb) * es, loom_blk_cnt(n, N, rb),
				   dt, op);
		rc = loom_x_wait(&x, -1);
	}
	if (rc) {
		loom_x_abandon(&x);
		return rc;
	}
	return loom_x_end(&x);
}

/* the ring's allgather: from rank r holding block (r+k) % N, everyone all */
int loom_ring_ag(struct loom_comm *c, char *buf, size_t n, size_t es, struct loom_opctx *o, int k)
{
	int N = c->size, r = c->rank, right = (r + 1) % N, left = (r + N - 1) % N, s, rc = 0;
	struct loom_xctx x;
	loom_x_begin_o(&x, c, o, o->seq);
	for (s = 0; s < N - 1 && !rc; s++) {
		int sb = loom_mod(r - s + k, N), rb = loom_mod(r - s + k - 1, N);
		loom_x_send(&x, right, buf + loom_blk_off(n, N, sb) * es, loom_blk_cnt(n, N, sb) * es);
		loom_x_recv(&x, left, buf + loom_blk_off(n, N, rb) * es, loom_blk_cnt(n, N, rb) * es);
		rc = loom_x_wait(&x, -1);
	}
	if (rc) {
		loom_x_abandon(&x);
		return rc;
	}
	return loom_x_end(&x);
}

/* The allgather half of a TCP ring whose receives are all posted before
 * the reduce-scatter begins, under a tag of their own. A left neighbour
 * that ends its reduce-scatter first sends on at once; a receive not yet
 * posted then costs an early-message buffer and a second copy of every
 * byte that arrives so. Safe: the
 * finished block b reaches this rank only after this rank's own
 * reduce-scatter sent b on (it is upstream in b's chain), and nothing
 * here reads b after that send. */
static void ring_ag_post(struct loom_comm *c, struct loom_xctx *x, char *buf, size_t n, size_t es,
			 int *h)
{
	int N = c->size, r = c->rank, left = (r + N - 1) % N, s;
	for (s = 0; s < N - 1; s++) {
		int rb = loom_mod(r - s, N);
		h[s] = loom_x_recv(x, left, buf + loom_blk_off(n, N, rb) * es,
				   loom_blk_cnt(n, N, rb) * es);
	}
}

static int ring_ag_run(struct loom_comm *c, struct loom_xctx *x, char *buf, size_t n, size_t es,
		       const int *h)
{
	int N = c->size, r = c->rank, right = (r + 1) % N, s, rc = 0;
	for (s = 0; s < N - 1 && !rc; s++) {
		int sb = loom_mod(r - s + 1, N);
		if (s > 0 && (rc = loom_x_wait(x, h[s - 1])))
			break;
		loom_x_send(x, right, buf + loom_blk_off(n, N, sb) * es, loom_blk_cnt(n, N, sb) * es);
	}
	if (rc) {
		loom_x_abandon(x);
		return rc;
	}
	return loom_x_end(x);
}

int loom_ring_allreduce(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
			struct loom_opctx *o)
{
	struct loom_opctx so = *o;
	struct loom_xctx xg;
	size_t es = loom_dtype_size(dt);
	int N = c->size, rc, *h;
	/* both ends of a hop see the same transport, so they agree on the tag */
	if (loom_comm_uses_shm(c, (c->rank + N - 1) % N) || loom_comm_uses_shm(c, (c->rank + 1) % N) ||
	    !(h = malloc((size_t)N * sizeof *h))) {
		rc = loom_ring_rs(c, buf, n, dt, op, o, 1);
		return rc ? rc : loom_ring_ag(c, buf, n, es, &so, 1);
	}
	loom_x_begin_o(&xg, c, &so, so.seq | LOOM_TAG_PHASE2);
	ring_ag_post(c, &xg, buf, n, es, h);
	rc = loom_ring_rs(c, buf, n, dt, op, o, 1);
	if (rc)
		loom_x_abandon(&xg);
	else
		rc = ring_ag_run(c, &xg, buf, n, es, h);
	free(h);
	return rc;
}

