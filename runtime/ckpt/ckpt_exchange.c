/* runtime/ckpt/ckpt_exchange.c: the collective side of a save or load: the
 * state of the operation, gathering the plan's inputs from every rank,
 * and the two-phase exchange: rounds over the aggregators' windows, each
 * rank's pieces sent (save) or received (load) packed or one message
 * each. */
#include "config.h"
#include "util/util.h"
#include "ckpt/ckpt_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* one operation                                                       */

int loom_ck_op_alloc(loom_ckpt_t *ck, ck_op_t *op, int algo)
{
	memset(op, 0, sizeof *op);
	op->sums.algo = algo;
	op->bytes = calloc((size_t)ck->nt + 1, sizeof *op->bytes);
	op->fnames = calloc((size_t)ck->nt + 1, sizeof *op->fnames);
	op->fds = malloc(sizeof *op->fds * ((size_t)ck->nt + 1));
	/* all of them, also on failure: loom_ck_op_free must not close a
	 * descriptor the program owns */
	for (int i = 0; op->fds && i < ck->nt; i++)
		op->fds[i] = -1;
	return op->bytes && op->fnames && op->fds ? LOOM_SUCCESS : LOOM_ERR_NOMEM;
}

void loom_ck_op_free(loom_ckpt_t *ck, ck_op_t *op)
{
	for (int i = 0; op->fds && i < ck->nt; i++)
		if (op->fds[i] >= 0)
			close(op->fds[i]);
	for (int i = 0; op->fnames && i < ck->nt; i++)
		free(op->fnames[i]);
	free(op->fds);
	free(op->fnames);
	free(op->bytes);
	free(op->sums.sums);
	free(op->owner);
	loom_ck_plan_free(&op->p);
}

int loom_ck_op_sum_chunks(loom_ckpt_t *ck, ck_op_t *op)
{
	size_t n = (size_t)op->p.cbase[ck->nt];
	if (n == 0)
		return LOOM_SUCCESS;
	/* each chunk is summed by one aggregator, zero elsewhere */
	return loom_allreduce(op->sums.sums, op->sums.sums, n, LOOM_INT64, LOOM_SUM, ck->comm);
}

void loom_ck_op_stats(loom_ckpt_t *ck, const ck_op_t *op)
{
	ck->st.bytes = 0;
	for (int i = 0; op->bytes && i < ck->nt; i++)
		ck->st.bytes += op->bytes[i];
	ck->st.aggregators = op->p.naggr;
	ck->st.rounds = op->p.rounds;
}

/* ------------------------------------------------------------------ */
/* gathering the plan                                                  */

/* LOOM_CKPT_DIRECT_BYTES: see loom_ck_plan_direct */
#define DIRECT_MIN_DEFAULT (32L << 10)

int loom_ck_plan_make(loom_ckpt_t *ck, ckpt_plan_t *p, const uint64_t *bytes, uint64_t chunk,
		 const ck_domains_t *given)
{
	ckpt_plan_in_t in;
	int32_t lr, *lrs = calloc((size_t)ck->size, sizeof *lrs);
	int64_t *desc = NULL, *all = NULL, mine[3], most[3];
	uint64_t window;
	int rc;
	memset(p, 0, sizeof *p);
	if ((rc = loom_ck_agree(ck, lrs ? LOOM_SUCCESS : LOOM_ERR_NOMEM)))
		goto out;
	/* aggregators are picked node by node, by local rank */
	lr = loom_comm_local_rank(ck->comm);
	if ((rc = loom_allgather(&lr, lrs, 1, LOOM_INT32, ck->comm)))
		goto out;
	memset(&in, 0, sizeof in);
	in.want_aggr = loom_env_long("ckpt", "LOOM_CKPT_AGGREGATORS", 0, 0, 1000000);
	window = (uint64_t)loom_env_long("ckpt", "LOOM_CKPT_BUFFER_MB", 32, 1, 1 << 20) << 20;
	if (getenv("LOOM_CKPT_BUFFER_BYTES")) /* for tests: tiny windows */
		window = (uint64_t)loom_env_long("ckpt", "LOOM_CKPT_BUFFER_BYTES", 1 << 20, 1, 1L << 40);
	/* the largest block count, window and direct threshold: both ends of
	 * every message must cut the same pieces, so one value for all ranks
	 * even if their environments differ */
	mine[0] = loom_ck_plan_nblocks(ck->t, ck->nt);
	mine[1] = (int64_t)window;
	mine[2] = loom_env_long("ckpt", "LOOM_CKPT_DIRECT_BYTES", DIRECT_MIN_DEFAULT, 1, 1L << 40);
	if ((rc = loom_allreduce(mine, most, 3, LOOM_INT64, LOOM_MAX, ck->comm)))
		goto out;
	in.ndesc = most[0];
	if (in.ndesc > 0) { /* everyone's blocks */
		desc = malloc(sizeof *desc * (size_t)in.ndesc * CKPT_DESC_W);
		all = malloc(sizeof *all * (size_t)in.ndesc * CKPT_DESC_W * (size_t)ck->size);
		if ((rc = loom_ck_agree(ck, desc && all ? LOOM_SUCCESS : LOOM_ERR_NOMEM)))
			goto out;
		loom_ck_plan_pack(ck->t, ck->nt, desc, in.ndesc);
		if ((rc = loom_allgather(desc, all, (size_t)in.ndesc * CKPT_DESC_W, LOOM_INT64,
					 ck->comm)))
			goto out;
	}
	in.nranks = ck->size;
	in.rank = ck->rank;
	in.nt = ck->nt;
	in.t = ck->t;
	in.bytes = bytes;
	in.chunk = chunk;
	in.local_rank = lrs;
	in.window = (uint64_t)most[1];
	in.direct_min = (uint64_t)most[2];
	in.desc = all;
	if (given) {
		in.naggr_given = given->naggr;
		in.aggr_given = given->aggr;
		in.dom_given = given->dom;
	}
	/* after the last collective of the plan: a rank that failed here
	 * (out of memory) must not leave the others in the exchange */
	rc = loom_ck_agree(ck, loom_ck_plan_build(p, &in));
out:
	free(desc);
	free(all);
	free(lrs);
	return rc;
}

/* ------------------------------------------------------------------ */
/* moving pieces                                                       */

typedef struct {
	char *dst;        /* pack: send buffer; unpack: receive buffer */
	uint64_t pos;
	uint64_t lo;      /* window start */
	char *win;        /* window buffer (aggregator) */
	loom_ckpt_t *ck;
	int to_window;    /* 1: local data -> window/pack; 0: window/pack -> local */
} packst_t;

/* own data <-> packed buffer */
static void pack_fn(void *arg, uint64_t v, uint64_t len, const ckpt_vrun_t *r)
{
	packst_t *s = arg;
	if (s->to_window)
		memcpy(s->dst + s->pos, loom_ck_run_src(s->ck, r, v, len), len);
	else
		memcpy(loom_ck_run_ptr(s->ck, r, v), s->dst + s->pos, len);
	s->pos += len;
}

/* packed buffer <-> window */
static void unpack_fn(void *arg, uint64_t v, uint64_t len, const ckpt_vrun_t *r)
{
	packst_t *s = arg;
	(void)r;
	if (s->to_window)
		memcpy(s->win + (v - s->lo), s->dst + s->pos, len);
	else
		memcpy(s->dst + s->pos, s->win + (v - s->lo), len);
	s->pos += len;
}

/* own data <-> window directly (this rank is the aggregator) */
static void self_fn(void *arg, uint64_t v, uint64_t len, const ckpt_vrun_t *r)
{
	packst_t *s = arg;
	if (s->to_window)
		memcpy(s->win + (v - s->lo), loom_ck_run_src(s->ck, r, v, len), len);
	else
		memcpy(loom_ck_run_ptr(s->ck, r, v), s->win + (v - s->lo), len);
}

/* the requests of one round */
typedef struct {
	loom_request_t **q;
	int n, cap;
} reqv_t;

/* start an isend (send) or irecv of len bytes with peer, kept in v */
static int reqv_post(reqv_t *v, loom_comm_t *comm, int send, void *buf, uint64_t len, int peer)
{
	int rc;
	if (v->n == v->cap) {
		int nc = v->cap ? 2 * v->cap : 64;
		loom_request_t **nq = realloc(v->q, sizeof *nq * (size_t)nc);
		if (!nq)
			return LOOM_ERR_NOMEM;
		v->q = nq;
		v->cap = nc;
	}
	rc = send ? loom_isend(buf, len, LOOM_INT8, peer, comm, &v->q[v->n])
		  : loom_irecv(buf, len, LOOM_INT8, peer, comm, &v->q[v->n]);
	if (!rc)
		v->n++;
	return rc;
}

/* one message per piece: window side (aggregator) or rank side */
typedef struct {
	loom_ckpt_t *ck;
	reqv_t *reqs;
	char *win;
	uint64_t lo;
	int peer, send, window_side, rc;
} directst_t;

static void direct_fn(void *arg, uint64_t v, uint64_t len, const ckpt_vrun_t *r)
{
	directst_t *d = arg;
	if (d->rc)
		return;
	d->rc = reqv_post(d->reqs, d->ck->comm, d->send,
			  d->window_side ? d->win + (v - d->lo) :
			  d->send ? (char *)loom_ck_run_src(d->ck, r, v, len) : loom_ck_run_ptr(d->ck, r, v),
			  len, d->peer);
}

static int grow(char **buf, uint64_t *cap, uint64_t need)
{
	if (need <= *cap)
		return 0;
	char *nb = realloc(*buf, need);
	if (!nb)
		return -1;
	*buf = nb;
	*cap = need;
	return 0;
}

/* ------------------------------------------------------------------ */
/* the exchange, round by round                                        */

typedef struct {
	loom_ckpt_t *ck;
	ck_op_t *op;
	const ckpt_plan_t *p;
	int writing;
	char *win, *win2;          /* this round's window, the writer's */
	uint64_t wincap, win2cap;
	char **sbuf;               /* rank side: packed pieces, per aggregator */
	uint64_t *scap, *slen;
	char **rbuf;               /* aggregator side: packed pieces, per rank */
	uint64_t *rcap, *rlen;
	reqv_t reqs;
	ck_writer_t writer;
	ckpt_cover_t cover;
	uint64_t mlo, mhi;         /* this round's own window (aggregators) */
} exch_t;

static int exch_alloc(exch_t *x, loom_ckpt_t *ck, ck_op_t *op, int writing)
{
	size_t na = (size_t)op->p.naggr, nr = (size_t)ck->size;
	memset(x, 0, sizeof *x);
	x->ck = ck;
	x->op = op;
	x->p = &op->p;
	x->writing = writing;
	x->sbuf = calloc(na, sizeof *x->sbuf);
	x->scap = calloc(na, sizeof *x->scap);
	x->slen = calloc(na, sizeof *x->slen);
	x->rbuf = calloc(nr, sizeof *x->rbuf);
	x->rcap = calloc(nr, sizeof *x->rcap);
	x->rlen = calloc(nr, sizeof *x->rlen);
	return x->sbuf && x->scap && x->slen && x->rbuf && x->rcap && x->rlen ? LOOM_SUCCESS
									     : LOOM_ERR_NOMEM;
}

static void exch_free(exch_t *x)
{
	loom_ck_writer_join(&x->writer, x->op);
	free(x->cover.iv);
	free(x->win);
	free(x->win2);
	for (int j = 0; x->sbuf && j < x->p->naggr; j++)
		free(x->sbuf[j]);
	for (int r = 0; x->rbuf && r < x->ck->size; r++)
		free(x->rbuf[r]);
	free(x->sbuf);
	free(x->rbuf);
	free(x->scap);
	free(x->rcap);
	free(x->slen);
	free(x->rlen);
	free(x->reqs.q);
}

/* An aggregator's window of round k: holes zeroed (save), or read from
 * the files and summed (load; not after a failure, when the sums are
 * never used and may not exist). */
static int own_window(exch_t *x, int k)
{
	ck_op_t *op = x->op;
	if (x->p->my_aggr < 0)
		return LOOM_SUCCESS;
	loom_ck_plan_window(x->p, x->p->my_aggr, k, &x->mlo, &x->mhi);
	if (grow(&x->win, &x->wincap, x->mhi - x->mlo + 1))
		return LOOM_ERR_NOMEM;
	if (x->writing) {
		loom_ck_plan_zero_holes(x->p, &x->cover, x->win, x->mlo, x->mhi);
	} else if (x->mhi > x->mlo && !op->io_rc) {
		op->io_rc = loom_ck_window_io(op, x->win, x->mlo, x->mhi, 0, op->why, sizeof op->why);
		if (!op->io_rc)
			loom_ck_sums_feed(x->p, &op->sums, x->win, x->mlo, x->mhi - x->mlo);
	}
	return LOOM_SUCCESS;
}

/* A packed buffer and rank who's pieces in [lo, hi): filled from them
 * (before a send) or spread back into them (after a receive). On the
 * window side the pieces are in the window, else in this rank's blocks. */
static void copy_packed(exch_t *x, int who, uint64_t lo, uint64_t hi, char *buf, int window_side,
			int fill)
{
	packst_t s = { buf, 0, lo, x->win, x->ck, window_side ? !fill : fill };
	loom_ck_plan_pieces(x->p, who, lo, hi, window_side ? unpack_fn : pack_fn, &s);
}

/* Posts rank who's pieces in [lo, hi) to or from peer: one message each,
 * or packed into *buf (*len bytes, 0 when direct: nothing to unpack). */
static int post_pieces(exch_t *x, int who, int peer, uint64_t lo, uint64_t hi, int send,
		       int window_side, char **buf, uint64_t *cap, uint64_t *len)
{
	if (loom_ck_plan_direct(x->p, who, lo, hi, len)) {
		directst_t d = { x->ck, &x->reqs, x->win, lo, peer, send, window_side, 0 };
		*len = 0;
		loom_ck_plan_pieces(x->p, who, lo, hi, direct_fn, &d);
		return d.rc;
	}
	if (!*len)
		return LOOM_SUCCESS;
	if (grow(buf, cap, *len))
		return LOOM_ERR_NOMEM;
	if (send)
		copy_packed(x, who, lo, hi, *buf, window_side, 1);
	return reqv_post(&x->reqs, x->ck->comm, send, *buf, *len, peer);
}

/* aggregator side: receive from (save) or send to (load) every rank */
static int post_aggregator(exch_t *x)
{
	int rc = LOOM_SUCCESS;
	if (x->p->my_aggr < 0)
		return LOOM_SUCCESS;
	for (int r = 0; r < x->ck->size && !rc; r++)
		if (r != x->ck->rank)
			rc = post_pieces(x, r, r, x->mlo, x->mhi, !x->writing, 1, &x->rbuf[r],
					 &x->rcap[r], &x->rlen[r]);
	return rc;
}

/* every rank: its pieces to (save) or from (load) each aggregator */
static int post_rank(exch_t *x, int k)
{
	loom_ckpt_t *ck = x->ck;
	const ckpt_plan_t *p = x->p;
	int rc = LOOM_SUCCESS;
	for (int j = 0; j < p->naggr && !rc; j++) {
		uint64_t lo, hi;
		loom_ck_plan_window(p, j, k, &lo, &hi);
		if (p->aggr[j] == ck->rank) {
			packst_t s = { NULL, 0, lo, x->win, ck, x->writing };
			loom_ck_plan_pieces(p, ck->rank, lo, hi, self_fn, &s);
			continue;
		}
		rc = post_pieces(x, ck->rank, p->aggr[j], lo, hi, x->writing, 0, &x->sbuf[j],
				 &x->scap[j], &x->slen[j]);
	}
	return rc;
}

/* all of the round's requests, also after a failure: none is left behind */
static int wait_all(exch_t *x, int rc)
{
	for (int i = 0; i < x->reqs.n; i++) {
		int w = loom_wait(x->reqs.q[i]);
		if (w && !rc)
			rc = w;
	}
	x->reqs.n = 0;
	return rc;
}

/* load: unpack what the aggregators sent into this rank's blocks */
static void unpack_received(exch_t *x, int k)
{
	const ckpt_plan_t *p = x->p;
	for (int j = 0; j < p->naggr; j++) {
		uint64_t lo, hi;
		loom_ck_plan_window(p, j, k, &lo, &hi);
		if (p->aggr[j] != x->ck->rank && x->slen[j])
			copy_packed(x, x->ck->rank, lo, hi, x->sbuf[j], 0, 0);
	}
}

/* save, aggregator: unpack into the window, hand it to the writer; the
 * next round fills the other buffer */
static void window_to_writer(exch_t *x)
{
	for (int r = 0; r < x->ck->size; r++)
		if (r != x->ck->rank && x->rlen[r])
			copy_packed(x, r, x->mlo, x->mhi, x->rbuf[r], 1, 0);
	if (loom_ck_writer_start(&x->writer, x->op, x->win, x->mlo, x->mhi)) {
		char *t = x->win;
		uint64_t c = x->wincap;
		x->win = x->win2;
		x->wincap = x->win2cap;
		x->win2 = t;
		x->win2cap = c;
	}
}

int loom_ck_exchange(loom_ckpt_t *ck, ck_op_t *op, int writing)
{
	exch_t x;
	int rc = exch_alloc(&x, ck, op, writing);
	for (int k = 0; k < op->p.rounds && rc == LOOM_SUCCESS; k++) {
		x.mlo = x.mhi = 0;
		if (!(rc = own_window(&x, k)) && !(rc = post_aggregator(&x)))
			rc = post_rank(&x, k);
		if ((rc = wait_all(&x, rc)))
			break;
		if (!writing)
			unpack_received(&x, k);
		else if (op->p.my_aggr >= 0 && x.mhi > x.mlo)
			window_to_writer(&x);
		memset(x.slen, 0, sizeof *x.slen * (size_t)op->p.naggr);
		memset(x.rlen, 0, sizeof *x.rlen * (size_t)ck->size);
	}
	exch_free(&x);
	return rc;
}
