/* runtime/dp/dp.c: the data-parallel gradient helper (loom_dp_*).
 *
 * Gradients are registered in forward order and grouped into buckets in
 * backward order (the last registered tensor is in bucket 0), each bucket
 * holding whole tensors up to the cap; a tensor bigger than the cap gets a
 * bucket of its own. When every tensor of a bucket is marked ready its
 * non-blocking reduction starts, but never before the buckets ahead of it:
 * every rank starts the same operations in the same order whatever order
 * its own ready() calls came in.
 *
 * Built on the public API only (loom_iallreduce / loom_iallgather /
 * loom_test / loom_wait), so it works over any communicator and backend.
 */
#include "config.h"
#include "loom.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct dp_tensor {
	float *grad;
	size_t count;
	int bucket;
	size_t off;     /* elements, inside the bucket */
	int ready;
};

struct dp_bucket {
	int first, last;        /* tensor indices, last >= first; filled last..first */
	size_t count;           /* elements */
	void *wire;             /* count elements of the wire dtype */
	void *gather;           /* LOOM_DP_ORDERED: size * count */
	loom_request_t *req;
	int nready, ntensors;
	int started, done;
	double t_start;
};

struct loom_dp {
	loom_comm_t *comm;
	int rank, size;
	unsigned flags;
	size_t cap;             /* bytes on the wire per bucket */
	loom_dtype_t wire_dt;
	struct dp_tensor *t;
	int nt, tcap;
	struct dp_bucket *b;
	int nb;
	int planned;
	int next_start;         /* first bucket not yet started */
	int next_done;          /* first bucket not yet complete */
	int err;
	/* statistics */
	int inflight;
	double busy_since, comm_s, wait_s;
	long steps;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* round to nearest even; NaN stays NaN */
static uint16_t f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static float bf16_to_f32(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

float loom_dp_bf16_round(float x)
{
	return bf16_to_f32(f32_to_bf16(x));
}

static int bucket_cap_from_env(size_t *cap)
{
	const char *s = getenv("LOOM_BUCKET_MB");
	char *end;
	double mb;
	if (!s || !*s) {
		*cap = (size_t)25 << 20;
		return LOOM_SUCCESS;
	}
	errno = 0;
	mb = strtod(s, &end);
	if (errno || end == s || *end || !(mb > 0) || mb > 1024.0 * 1024.0) {
		fprintf(stderr, "loom: LOOM_BUCKET_MB='%s': expected a positive number of MiB\n", s);
		return LOOM_ERR_INVALID;
	}
	*cap = (size_t)(mb * (double)(1 << 20));
	if (*cap == 0)
		*cap = 1;
	return LOOM_SUCCESS;
}

int loom_dp_create(loom_comm_t *comm, size_t bucket_bytes, unsigned flags, loom_dp_t **dp)
{
	struct loom_dp *d;
	int rc;
	if (!dp)
		return LOOM_ERR_INVALID;
	*dp = NULL;
	if (!comm || loom_comm_size(comm) < 1 ||
	    (flags & ~(unsigned)(LOOM_DP_BF16_WIRE | LOOM_DP_ORDERED)))
		return LOOM_ERR_INVALID;
	d = calloc(1, sizeof *d);
	if (!d)
		return LOOM_ERR_NOMEM;
	d->comm = comm;
	d->rank = loom_comm_rank(comm);
	d->size = loom_comm_size(comm);
	d->flags = flags;
	d->wire_dt = (flags & LOOM_DP_BF16_WIRE) ? LOOM_BFLOAT16 : LOOM_FLOAT32;
	if (bucket_bytes)
		d->cap = bucket_bytes;
	else if ((rc = bucket_cap_from_env(&d->cap)) != LOOM_SUCCESS) {
		free(d);
		return rc;
	}
	*dp = d;
	return LOOM_SUCCESS;
}

int loom_dp_add(loom_dp_t *dp, float *grad, size_t count, int *index)
{
	if (!dp || !grad || count == 0 || dp->planned)
		return LOOM_ERR_INVALID;
	if (dp->nt == dp->tcap) {
		int nc = dp->tcap ? 2 * dp->tcap : 16;
		struct dp_tensor *nt = realloc(dp->t, (size_t)nc * sizeof *nt);
		if (!nt)
			return LOOM_ERR_NOMEM;
		dp->t = nt;
		dp->tcap = nc;
	}
	memset(&dp->t[dp->nt], 0, sizeof dp->t[dp->nt]);
	dp->t[dp->nt].grad = grad;
	dp->t[dp->nt].count = count;
	if (index)
		*index = dp->nt;
	dp->nt++;
	return LOOM_SUCCESS;
}

/* Buckets in backward order; whole tensors; a tensor over the cap alone. */
static int plan(struct loom_dp *d)
{
	size_t es = loom_dtype_size(d->wire_dt), gmul;
	int i;
	if (d->planned)
		return d->err;
	if (d->nt == 0)
		return LOOM_ERR_INVALID;
	d->planned = 1;
	d->b = calloc((size_t)d->nt, sizeof *d->b);
	if (!d->b)
		return d->err = LOOM_ERR_NOMEM;
	d->nb = 0;
	for (i = d->nt - 1; i >= 0; i--) {
		struct dp_bucket *cur = d->nb ? &d->b[d->nb - 1] : NULL;
		size_t bytes = d->t[i].count * es;
		if (!cur || (cur->count * es + bytes > d->cap)) {
			cur = &d->b[d->nb++];
			cur->last = i;
			cur->first = i;
			cur->count = 0;
		}
		cur->first = i;
		d->t[i].bucket = (int)(cur - d->b);
		d->t[i].off = cur->count;
		cur->count += d->t[i].count;
		cur->ntensors++;
	}
	gmul = (d->flags & LOOM_DP_ORDERED) ? (size_t)d->size : 0;
	for (i = 0; i < d->nb; i++) {
		struct dp_bucket *b = &d->b[i];
		b->wire = malloc(b->count * es);
		if (!b->wire)
			return d->err = LOOM_ERR_NOMEM;
		if (gmul) {
			b->gather = malloc(b->count * es * gmul);
			if (!b->gather)
				return d->err = LOOM_ERR_NOMEM;
		}
	}
	return LOOM_SUCCESS;
}

int loom_dp_bucket_count(loom_dp_t *dp)
{
	int rc;
	if (!dp)
		return LOOM_ERR_INVALID;
	if ((rc = plan(dp)) != LOOM_SUCCESS)
		return rc;
	return dp->nb;
}

int loom_dp_bucket_of(loom_dp_t *dp, int index)
{
	int rc;
	if (!dp || index < 0 || index >= dp->nt)
		return LOOM_ERR_INVALID;
	if ((rc = plan(dp)) != LOOM_SUCCESS)
		return rc;
	return dp->t[index].bucket;
}

size_t loom_dp_bucket_bytes(loom_dp_t *dp, int bucket)
{
	if (!dp || plan(dp) != LOOM_SUCCESS || bucket < 0 || bucket >= dp->nb)
		return 0;
	return dp->b[bucket].count * loom_dtype_size(dp->wire_dt);
}

static void mark_busy(struct loom_dp *d, double t, int delta)
{
	if (delta > 0 && d->inflight++ == 0)
		d->busy_since = t;
	if (delta < 0 && --d->inflight == 0)
		d->comm_s += t - d->busy_since;
}

/* Note buckets whose reduction has completed (they complete in order). */
static void poll_done(struct loom_dp *d)
{
	while (d->next_done < d->next_start) {
		struct dp_bucket *b = &d->b[d->next_done];
		int done = 0, rc = loom_test(b->req, &done);
		if (!done && rc == LOOM_SUCCESS)
			return;
		b->req = NULL;
		b->done = 1;
		if (rc != LOOM_SUCCESS && !d->err)
			d->err = rc;
		mark_busy(d, now(), -1);
		d->next_done++;
	}
}

static int start_bucket(struct loom_dp *d, struct dp_bucket *b)
{
	int rc;
	if (d->flags & LOOM_DP_ORDERED)
		rc = loom_iallgather(b->wire, b->gather, b->count, d->wire_dt, d->comm, &b->req);
	else
		rc = loom_iallreduce(b->wire, b->wire, b->count, d->wire_dt, LOOM_SUM, d->comm,
				     &b->req);
	b->started = 1;
	if (rc != LOOM_SUCCESS) {
		b->req = NULL;
		b->done = 1;
		return rc;
	}
	b->t_start = now();
	mark_busy(d, b->t_start, +1);
	return LOOM_SUCCESS;
}

static int start_ready_buckets(struct loom_dp *d)
{
	while (d->next_start < d->nb && d->b[d->next_start].nready == d->b[d->next_start].ntensors) {
		struct dp_bucket *b = &d->b[d->next_start];
		int rc = start_bucket(d, b);
		d->next_start++;
		if (rc != LOOM_SUCCESS) {
			d->next_done = d->next_start;
			return d->err = rc;
		}
	}
	return LOOM_SUCCESS;
}

static void stage(struct loom_dp *d, struct dp_tensor *t)
{
	struct dp_bucket *b = &d->b[t->bucket];
	size_t i;
	if (d->wire_dt == LOOM_BFLOAT16) {
		uint16_t *w = (uint16_t *)b->wire + t->off;
		for (i = 0; i < t->count; i++)
			w[i] = f32_to_bf16(t->grad[i]);
	} else {
		memcpy((float *)b->wire + t->off, t->grad, t->count * sizeof(float));
	}
}

int loom_dp_ready(loom_dp_t *dp, int index)
{
	int rc;
	struct dp_tensor *t;
	if (!dp || index < 0 || index >= dp->nt)
		return LOOM_ERR_INVALID;
	if ((rc = plan(dp)) != LOOM_SUCCESS)
		return rc;
	if (dp->err)
		return dp->err;
	t = &dp->t[index];
	if (t->ready)
		return LOOM_ERR_INVALID;
	t->ready = 1;
	stage(dp, t);
	dp->b[t->bucket].nready++;
	poll_done(dp);
	return start_ready_buckets(dp);
}

int loom_dp_poll(loom_dp_t *dp)
{
	if (!dp)
		return LOOM_ERR_INVALID;
	if (dp->planned)
		poll_done(dp);
	return dp->err;
}

/* the reduced bucket, as averaged fp32, back into the tensors */
static void write_back(struct loom_dp *d, struct dp_bucket *b)
{
	float fn = (float)d->size;
	int ti;
	for (ti = b->first; ti <= b->last; ti++) {
		struct dp_tensor *t = &d->t[ti];
		float *g = t->grad;
		size_t i;
		if (d->flags & LOOM_DP_ORDERED) {
			/* rank order, fp32: ((g0 + g1) + g2) ... then / n */
			for (i = 0; i < t->count; i++) {
				size_t e = t->off + i;
				float acc;
				int r;
				if (d->wire_dt == LOOM_BFLOAT16) {
					const uint16_t *G = b->gather;
					acc = bf16_to_f32(G[e]);
					for (r = 1; r < d->size; r++)
						acc += bf16_to_f32(G[(size_t)r * b->count + e]);
				} else {
					const float *G = b->gather;
					acc = G[e];
					for (r = 1; r < d->size; r++)
						acc += G[(size_t)r * b->count + e];
				}
				g[i] = acc / fn;
			}
		} else if (d->wire_dt == LOOM_BFLOAT16) {
			const uint16_t *w = (const uint16_t *)b->wire + t->off;
			for (i = 0; i < t->count; i++)
				g[i] = bf16_to_f32(w[i]) / fn;
		} else {
			const float *w = (const float *)b->wire + t->off;
			for (i = 0; i < t->count; i++)
				g[i] = w[i] / fn;
		}
	}
}

int loom_dp_finish(loom_dp_t *dp)
{
	int rc, i;
	double t0, t;
	if (!dp)
		return LOOM_ERR_INVALID;
	if ((rc = plan(dp)) != LOOM_SUCCESS)
		return rc;
	/* a tensor never marked ready is taken as ready now */
	for (i = dp->nt - 1; i >= 0 && !dp->err; i--)
		if (!dp->t[i].ready) {
			dp->t[i].ready = 1;
			stage(dp, &dp->t[i]);
			dp->b[dp->t[i].bucket].nready++;
			start_ready_buckets(dp);
		}
	poll_done(dp);
	t0 = now();
	while (dp->next_done < dp->next_start) {
		struct dp_bucket *b = &dp->b[dp->next_done];
		rc = loom_wait(b->req);
		t = now();
		b->req = NULL;
		b->done = 1;
		if (rc != LOOM_SUCCESS && !dp->err)
			dp->err = rc;
		mark_busy(dp, t, -1);
		dp->next_done++;
	}
	dp->wait_s += now() - t0;
	if (!dp->err)
		for (i = 0; i < dp->nb; i++)
			write_back(dp, &dp->b[i]);
	/* ready for the next step */
	for (i = 0; i < dp->nt; i++)
		dp->t[i].ready = 0;
	for (i = 0; i < dp->nb; i++) {
		dp->b[i].nready = 0;
		dp->b[i].started = dp->b[i].done = 0;
	}
	dp->next_start = dp->next_done = 0;
	dp->steps++;
	return dp->err;
}

int loom_dp_stats(loom_dp_t *dp, loom_dp_stats_t *st)
{
	int i;
	if (!dp || !st)
		return LOOM_ERR_INVALID;
	memset(st, 0, sizeof *st);
	st->steps = dp->steps;
	st->comm_s = dp->comm_s;
	st->wait_s = dp->wait_s;
	st->overlap = dp->comm_s > 0 ? 1.0 - dp->wait_s / dp->comm_s : 0.0;
	if (st->overlap < 0)
		st->overlap = 0;
	if (st->overlap > 1)
		st->overlap = 1;
	if (dp->planned) {
		st->buckets = dp->nb;
		for (i = 0; i < dp->nb; i++)
			st->wire_bytes += dp->b[i].count * loom_dtype_size(dp->wire_dt);
	}
	return LOOM_SUCCESS;
}

int loom_dp_stats_reset(loom_dp_t *dp)
{
	if (!dp)
		return LOOM_ERR_INVALID;
	dp->comm_s = dp->wait_s = 0;
	dp->steps = 0;
	return LOOM_SUCCESS;
}

int loom_dp_broadcast_params(loom_dp_t *dp, float *params, size_t count)
{
	if (!dp || (!params && count))
		return LOOM_ERR_INVALID;
	if (count == 0)
		return LOOM_SUCCESS;
	return loom_broadcast(params, params, count, LOOM_FLOAT32, 0, dp->comm);
}

int loom_dp_free(loom_dp_t *dp)
{
	int i;
	if (!dp)
		return LOOM_ERR_INVALID;
	if (dp->planned) {
		for (i = dp->next_done; i < dp->next_start; i++)
			if (dp->b[i].req)
				loom_wait(dp->b[i].req);
		for (i = 0; i < dp->nb; i++) {
			free(dp->b[i].wire);
			free(dp->b[i].gather);
		}
	}
	free(dp->b);
	free(dp->t);
	free(dp);
	return LOOM_SUCCESS;
}
