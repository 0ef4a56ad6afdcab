/* runtime/coll/coll_allreduce.c: allreduce by recursive doubling (small; ranks
 * above the largest power of two fold into a partner first), by ring
 * (reduce-scatter then allgather; large), or hierarchically (reduce in the
 * node, allreduce among node leaders, broadcast in the node). Every rank
 * ends with bit-identical results, and the order of reduction depends only
 * on the communicator's shape and the size, so reruns are bit-identical. */
#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>

static int rd_allreduce(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
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
static int ring_rs_k(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
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
static int ring_ag_k(struct loom_comm *c, char *buf, size_t n, size_t es, struct loom_opctx *o,
		     int k)
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

static int ring_rs(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
		   struct loom_opctx *o)
{
	return ring_rs_k(c, buf, n, dt, op, o, 1);
}

static int ring_ag(struct loom_comm *c, char *buf, size_t n, size_t es, struct loom_opctx *o)
{
	return ring_ag_k(c, buf, n, es, o, 1);
}

/* The allgather half of a TCP ring whose receives are all posted before
 * the reduce-scatter begins, under a tag of their own. A left neighbour
 * that ends its reduce-scatter first sends on at once; a receive not yet
 * posted then costs an early-message buffer and a second copy of every
 * byte (2 ranks, 64 MiB: a third of the bytes arrived so). Safe: the
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

static int ring_allreduce(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
			  struct loom_opctx *o)
{
	struct loom_opctx so = *o;
	struct loom_xctx xg;
	size_t es = loom_dtype_size(dt);
	int N = c->size, rc, *h;
	/* both ends of a hop see the same transport, so they agree on the tag */
	if (loom_comm_uses_shm(c, (c->rank + N - 1) % N) || loom_comm_uses_shm(c, (c->rank + 1) % N) ||
	    !(h = malloc((size_t)N * sizeof *h))) {
		rc = ring_rs(c, buf, n, dt, op, o);
		return rc ? rc : ring_ag(c, buf, n, es, &so);
	}
	loom_x_begin_o(&xg, c, &so, so.seq | LOOM_TAG_PHASE2);
	ring_ag_post(c, &xg, buf, n, es, h);
	rc = ring_rs(c, buf, n, dt, op, o);
	if (rc)
		loom_x_abandon(&xg);
	else
		rc = ring_ag_run(c, &xg, buf, n, es, h);
	free(h);
	return rc;
}

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
		/* direct reads take the inputs where they are: at 64 MiB the copy
		 * of s into buf was a fifth of a rank's time (4 ranks, 2 nodes) */
		if (loom_plan_direct(c->w->transport, L, 1, n * es))
			rc = loom_direct_rs(nc, s, buf, n, dt, op, &so, &fallback);
		if (!rc && !fallback) {
			direct = 1;
		} else if (!rc) {
			if (s != buf && n)
				memcpy(buf, s, n * es);
			rc = ring_rs_k(nc, buf, n, dt, op, &so, 0);
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
			    : ring_ag_k(nc, buf, n, es, &so, 0);
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
	case LOOM_ALG_RD: return rd_allreduce(c, r, n, dt, op, o);
	default: return ring_allreduce(c, r, n, dt, op, o);  /* also direct's fallback */
	}
}
