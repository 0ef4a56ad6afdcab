/* runtime/ckpt/ckpt_plan.c: the plan of a save or load, as pure functions of
 * the gathered inputs (no communicator, no I/O): the virtual byte space,
 * the aggregators and their domains, every rank's runs, and the pieces
 * of them that fall in an aggregator's window. Unit tested by
 * runtime/ckpt/test/ckpt_plan.c; gathered by loom_ck_plan_make (ckpt_exchange.c). */
#include "config.h"
#include "loom.h"
#include "ckpt/ckpt_nocomm.h"

#include <stdlib.h>
#include <string.h>

int64_t loom_ck_plan_nblocks(const ckpt_tensor_t *t, int nt)
{
	int64_t n = 0;
	for (int i = 0; i < nt; i++)
		n += t[i].nb;
	return n;
}

void loom_ck_plan_pack(const ckpt_tensor_t *t, int nt, int64_t *desc, int64_t ndesc)
{
	int64_t k = 0;
	for (int i = 0; i < nt; i++)
		for (int b = 0; b < t[i].nb; b++, k++) {
			int64_t *d = desc + k * CKPT_DESC_W;
			d[0] = i;
			d[1] = b;
			for (int x = 0; x < CKPT_MAX_NDIM; x++) {
				d[2 + x] = (int64_t)t[i].b[b].off[x];
				d[2 + CKPT_MAX_NDIM + x] = (int64_t)t[i].b[b].ext[x];
			}
		}
	for (; k < ndesc; k++)
		desc[k * CKPT_DESC_W] = -1;
}

void loom_ck_plan_free(ckpt_plan_t *p)
{
	if (p->runs)
		for (int r = 0; r < p->nranks; r++)
			free(p->runs[r]);
	free(p->runs);
	free(p->nruns);
	free(p->maxlen);
	free(p->base);
	free(p->cbase);
	free(p->aggr);
	free(p->dom);
}

/* Aggregators: local rank 0 of each node, or `want` ranks taken node by
 * node (local rank 0s first, then 1s...); rank 0 if no rank has local
 * rank 0. aggr (nranks entries) is first a mark per rank, then compacted
 * in place into the ascending list: entry n is written after entry r >= n
 * was read. Returns the count. */
static int pick_aggregators(int nranks, const int32_t *lrs, long want, int *aggr)
{
	int n = 0;
	if (want > nranks)
		want = nranks;
	memset(aggr, 0, sizeof *aggr * (size_t)nranks);
	if (want == 0) {
		for (int r = 0; r < nranks; r++)
			aggr[r] = lrs[r] == 0;
	} else {
		for (int level = 0; n < want; level++)
			for (int r = 0; r < nranks && n < want; r++)
				if (lrs[r] == level && !aggr[r]) {
					aggr[r] = 1;
					n++;
				}
	}
	n = 0;
	for (int r = 0; r < nranks; r++)
		if (aggr[r])
			aggr[n++] = r;
	if (n == 0) /* odd local ranks: fall back to rank 0 */
		aggr[n++] = 0;
	return n;
}

/* rank r's runs, merged and sorted, from its block descriptors */
typedef struct {
	ckpt_vrun_t *v;
	long n, cap;
	uint64_t base;
	int tensor, block;
	int oom;
} runacc_t;

static void acc_run(void *arg, const ckpt_run_t *r)
{
	runacc_t *a = arg;
	if (a->oom)
		return;
	if (a->n == a->cap) {
		long nc = a->cap ? 2 * a->cap : 64;
		ckpt_vrun_t *nv = realloc(a->v, sizeof *nv * (size_t)nc);
		if (!nv) {
			a->oom = 1;
			return;
		}
		a->v = nv;
		a->cap = nc;
	}
	ckpt_vrun_t *x = &a->v[a->n];
	/* merge with the previous run when contiguous in file and buffer */
	if (a->n > 0 && x[-1].tensor == a->tensor && x[-1].block == a->block &&
	    x[-1].v + x[-1].len == a->base + r->foff && x[-1].loff + x[-1].len == r->loff) {
		x[-1].len += r->len;
		return;
	}
	x->v = a->base + r->foff;
	x->len = r->len;
	x->loff = r->loff;
	x->tensor = a->tensor;
	x->block = a->block;
	a->n++;
}

static int cmp_vrun(const void *a, const void *b)
{
	const ckpt_vrun_t *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	if (x->tensor != y->tensor)
		return x->tensor - y->tensor;
	return x->block - y->block;
}

static int rank_runs(ckpt_plan_t *p, int r, const ckpt_plan_in_t *in)
{
	runacc_t a;
	int rc = LOOM_SUCCESS;
	memset(&a, 0, sizeof a);
	for (int64_t k = 0; k < in->ndesc; k++) {
		const int64_t *d = in->desc + ((int64_t)r * in->ndesc + k) * CKPT_DESC_W;
		uint64_t off[CKPT_MAX_NDIM], ext[CKPT_MAX_NDIM];
		if (d[0] < 0)
			break;
		if (d[0] >= in->nt) {
			rc = LOOM_ERR_MISMATCH;
			break;
		}
		const ckpt_tensor_t *t = &in->t[d[0]];
		for (int x = 0; x < CKPT_MAX_NDIM; x++) {
			off[x] = (uint64_t)d[2 + x];
			ext[x] = (uint64_t)d[2 + CKPT_MAX_NDIM + x];
		}
		a.base = p->base[d[0]];
		a.tensor = (int)d[0];
		a.block = (int)d[1];
		if (loom_ck_block_runs(t->ndim, t->shape, off, ext, t->esize, acc_run, &a) < 0) {
			rc = LOOM_ERR_MISMATCH;
			break;
		}
	}
	if (a.oom)
		rc = LOOM_ERR_NOMEM;
	if (a.n > 1)
		qsort(a.v, (size_t)a.n, sizeof *a.v, cmp_vrun);
	p->runs[r] = a.v;
	p->nruns[r] = a.n;
	for (long i = 0; i < a.n; i++)
		if (a.v[i].len > p->maxlen[r])
			p->maxlen[r] = a.v[i].len;
	return rc;
}

int loom_ck_plan_build(ckpt_plan_t *p, const ckpt_plan_in_t *in)
{
	int rc = LOOM_SUCCESS;
	size_t n = (size_t)in->nranks;
	memset(p, 0, sizeof *p);
	p->nranks = in->nranks;
	p->nt = in->nt;
	p->chunk = in->chunk;
	p->base = calloc((size_t)in->nt + 1, sizeof *p->base);
	p->cbase = calloc((size_t)in->nt + 1, sizeof *p->cbase);
	p->runs = calloc(n, sizeof *p->runs);
	p->nruns = calloc(n, sizeof *p->nruns);
	p->maxlen = calloc(n, sizeof *p->maxlen);
	p->aggr = calloc(n, sizeof *p->aggr);
	if (!p->base || !p->cbase || !p->runs || !p->nruns || !p->maxlen || !p->aggr)
		return LOOM_ERR_NOMEM;
	for (int i = 0; i < in->nt; i++) {
		p->base[i + 1] = p->base[i] + in->bytes[i];
		p->cbase[i + 1] = p->cbase[i] + loom_ck_nchunks(in->bytes[i], in->chunk);
	}
	if (in->naggr_given > 0) {
		if (in->naggr_given > in->nranks)
			return LOOM_ERR_INVALID;
		p->naggr = in->naggr_given;
		for (int j = 0; j < p->naggr; j++)
			p->aggr[j] = in->aggr_given[j];
	} else {
		p->naggr = pick_aggregators(in->nranks, in->local_rank, in->want_aggr, p->aggr);
	}
	p->my_aggr = -1;
	for (int j = 0; j < p->naggr; j++)
		if (p->aggr[j] == in->rank)
			p->my_aggr = j;
	if (!(p->dom = calloc((size_t)p->naggr + 1, sizeof *p->dom)))
		return LOOM_ERR_NOMEM;
	if (in->naggr_given > 0)
		memcpy(p->dom, in->dom_given, sizeof *p->dom * ((size_t)p->naggr + 1));
	else
		loom_ck_domains((size_t)in->nt, in->bytes, in->chunk, p->naggr, p->dom);
	p->window = in->window;
	p->direct_min = in->direct_min;
	for (int j = 0; j < p->naggr; j++) {
		uint64_t d = p->dom[j + 1] - p->dom[j];
		int k = (int)((d + p->window - 1) / p->window);
		if (k > p->rounds)
			p->rounds = k;
	}
	for (int r = 0; r < in->nranks && !rc; r++)
		rc = rank_runs(p, r, in);
	return rc;
}

void loom_ck_plan_window(const ckpt_plan_t *p, int j, int k, uint64_t *lo, uint64_t *hi)
{
	uint64_t d0 = p->dom[j], d1 = p->dom[j + 1];
	*lo = d0 + (uint64_t)k * p->window;
	if (*lo > d1)
		*lo = d1;
	*hi = *lo + p->window < d1 ? *lo + p->window : d1;
}

int loom_ck_plan_tensor_of(const ckpt_plan_t *p, uint64_t v)
{
	int a = 0, b = p->nt - 1;
	while (a < b) { /* last tensor with base <= v and a non-empty file */
		int m = (a + b + 1) / 2;
		if (p->base[m] <= v)
			a = m;
		else
			b = m - 1;
	}
	while (a < p->nt - 1 && p->base[a + 1] <= v)
		a++;
	return a;
}

uint64_t loom_ck_plan_pieces(const ckpt_plan_t *p, int r, uint64_t lo, uint64_t hi,
			  ckpt_piece_fn fn, void *arg)
{
	const ckpt_vrun_t *v = p->runs[r];
	long n = p->nruns[r], a = 0, b = n;
	uint64_t tot = 0;
	if (n == 0 || lo >= hi)
		return 0;
	/* runs are sorted by start and none is longer than maxlen: the first
	 * one that can reach lo starts at lo - maxlen or later */
	uint64_t from = lo > p->maxlen[r] ? lo - p->maxlen[r] : 0;
	while (a < b) {
		long m = (a + b) / 2;
		if (v[m].v < from)
			a = m + 1;
		else
			b = m;
	}
	for (long i = a; i < n && v[i].v < hi; i++) {
		uint64_t s = v[i].v > lo ? v[i].v : lo;
		uint64_t e = v[i].v + v[i].len < hi ? v[i].v + v[i].len : hi;
		if (s >= e)
			continue;
		if (fn)
			fn(arg, s, e - s, &v[i]);
		tot += e - s;
	}
	return tot;
}

typedef struct {
	uint64_t n, bytes;
} tally_t;

static void tally_fn(void *arg, uint64_t v, uint64_t len, const ckpt_vrun_t *r)
{
	tally_t *t = arg;
	(void)v;
	(void)r;
	t->n++;
	t->bytes += len;
}

/* Pieces of at least direct_min bytes on average go as one message each,
 * straight between the rank's buffer and the window; smaller ones are
 * packed, since a message per few bytes would cost more than the two
 * copies it saves. */
int loom_ck_plan_direct(const ckpt_plan_t *p, int r, uint64_t lo, uint64_t hi, uint64_t *bytes)
{
	tally_t t = { 0, 0 };
	loom_ck_plan_pieces(p, r, lo, hi, tally_fn, &t);
	*bytes = t.bytes;
	return t.n > 0 && t.bytes / t.n >= p->direct_min;
}

int loom_ck_plan_touches(const ckpt_plan_t *p, int rank, int t, int independent)
{
	if (independent)
		for (long i = 0; i < p->nruns[rank]; i++)
			if (p->runs[rank][i].tensor == t)
				return 1;
	if (p->my_aggr >= 0) {
		uint64_t d0 = p->dom[p->my_aggr], d1 = p->dom[p->my_aggr + 1];
		if (d0 < p->base[t + 1] && p->base[t] < d1)
			return 1;
	}
	return 0;
}

static void cover_fn(void *arg, uint64_t v, uint64_t len, const ckpt_vrun_t *r)
{
	ckpt_cover_t *c = arg;
	(void)r;
	if (c->oom)
		return;
	if (c->n == c->cap) {
		long nc = c->cap ? 2 * c->cap : 256;
		void *ni = realloc(c->iv, sizeof *c->iv * (size_t)nc);
		if (!ni) {
			c->oom = 1;
			return;
		}
		c->iv = ni;
		c->cap = nc;
	}
	c->iv[c->n][0] = v;
	c->iv[c->n][1] = v + len;
	c->n++;
}

static int cmp_iv(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Only the holes: the pieces overwrite the rest, so clearing it all would
 * be one more pass over every byte written. Out of memory: all of it. */
void loom_ck_plan_zero_holes(const ckpt_plan_t *p, ckpt_cover_t *c, char *win, uint64_t lo,
			  uint64_t hi)
{
	uint64_t at = lo;
	c->n = 0;
	c->oom = 0;
	for (int r = 0; r < p->nranks; r++)
		loom_ck_plan_pieces(p, r, lo, hi, cover_fn, c);
	if (c->oom) {
		memset(win, 0, hi - lo);
		return;
	}
	qsort(c->iv, (size_t)c->n, sizeof *c->iv, cmp_iv);
	for (long i = 0; i < c->n; i++) {
		if (c->iv[i][0] > at)
			memset(win + (at - lo), 0, c->iv[i][0] - at);
		if (c->iv[i][1] > at)
			at = c->iv[i][1];
	}
	if (hi > at)
		memset(win + (at - lo), 0, hi - at);
}

/* chunk k of tensor t: [*lo, *hi) in the virtual space */
static void chunk_span(const ckpt_plan_t *p, int t, uint64_t k, uint64_t *lo, uint64_t *hi)
{
	*lo = p->base[t] + k * p->chunk;
	*hi = *lo + p->chunk < p->base[t + 1] ? *lo + p->chunk : p->base[t + 1];
}

void loom_ck_plan_chunk_owners(const ckpt_plan_t *p, int32_t *owner)
{
	for (uint64_t c = 0; c < p->cbase[p->nt]; c++)
		owner[c] = -1;
	for (int r = 0; r < p->nranks; r++)
		for (long i = 0; i < p->nruns[r]; i++) {
			const ckpt_vrun_t *run = &p->runs[r][i];
			int t = run->tensor;
			uint64_t in = run->v - p->base[t], lo, hi;
			/* the first chunk that starts inside the run, then on */
			for (uint64_t k = (in + p->chunk - 1) / p->chunk;
			     p->cbase[t] + k < p->cbase[t + 1]; k++) {
				chunk_span(p, t, k, &lo, &hi);
				if (hi > run->v + run->len)
					break;
				if (owner[p->cbase[t] + k] < 0)
					owner[p->cbase[t] + k] = r;
			}
		}
}

uint64_t loom_ck_plan_mean_piece(const ckpt_plan_t *p)
{
	uint64_t bytes = 0, n = 0;
	for (int r = 0; r < p->nranks; r++)
		for (long i = 0; i < p->nruns[r]; i++) {
			bytes += p->runs[r][i].len;
			n++;
		}
	return n ? bytes / n : 0;
}
