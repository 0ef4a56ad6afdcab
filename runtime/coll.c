/* runtime/coll.c: the collectives' public entry points: argument checks,
 * dispatch through the backend table, one operation at a time per
 * communicator (after the non-blocking ones already started), LOOM_CHECK,
 * 16-bit floats reduced in fp32, and AVG. */
#include "loom_internal.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *loom_opdesc_name(int kind)
{
	static const char *n[] = { "?", "allreduce", "broadcast", "reduce", "allgather",
				   "reduce_scatter", "alltoall", "barrier" };
	return kind >= 1 && kind <= LOOM_OP_BARRIER ? n[kind] : "?";
}

uint64_t loom_op_enter(struct loom_comm *c)
{
	return atomic_fetch_add(&c->seq, 1) + 1;
}

static int is_reduction(int kind)
{
	return kind == LOOM_OP_ALLREDUCE || kind == LOOM_OP_REDUCE || kind == LOOM_OP_REDUCE_SCATTER;
}

int loom_op_validate(const struct loom_comm *c, const struct loom_opdesc *d)
{
	size_t es;
	if (!c)
		return LOOM_ERR_INVALID;
	if (d->kind == LOOM_OP_BARRIER)
		return LOOM_SUCCESS;
	if (!loom_dtype_ok(d->dt))
		return LOOM_ERR_INVALID;
	if (is_reduction(d->kind) && !loom_op_ok(d->op))
		return LOOM_ERR_INVALID;
	if ((d->kind == LOOM_OP_BCAST || d->kind == LOOM_OP_REDUCE) &&
	    (d->root < 0 || d->root >= c->size))
		return LOOM_ERR_INVALID;
	es = loom_dtype_size(d->dt);
	if (d->count > ((size_t)-1 / 2) / es / (size_t)c->size)
		return LOOM_ERR_INVALID;
	if (d->count == 0)
		return LOOM_SUCCESS;
	switch (d->kind) {
	case LOOM_OP_BCAST:
		if (!d->r || (c->rank == d->root && !d->s))
			return LOOM_ERR_INVALID;
		break;
	case LOOM_OP_REDUCE:
		if (!d->s || (c->rank == d->root && !d->r))
			return LOOM_ERR_INVALID;
		break;
	default:
		if (!d->s || !d->r)
			return LOOM_ERR_INVALID;
	}
	return LOOM_SUCCESS;
}

struct ckhdr {
	int32_t kind, dt, op, root;
	uint64_t count;
};

static void ck_text(char *out, size_t cap, const struct ckhdr *h)
{
	int red = is_reduction(h->kind), rooted = h->kind == LOOM_OP_BCAST || h->kind == LOOM_OP_REDUCE;
	if (h->kind == LOOM_OP_BARRIER) {
		snprintf(out, cap, "barrier");
		return;
	}
	snprintf(out, cap, "%s(count=%llu, %s%s%s, root=%d)", loom_opdesc_name(h->kind),
		 (unsigned long long)h->count, loom_dtype_name((loom_dtype_t)h->dt),
		 red ? ", " : "", red ? loom_op_name((loom_op_t)h->op) : "", rooted ? h->root : -1);
	if (!rooted) {
		char *p = strstr(out, ", root=-1");
		if (p)
			strcpy(p, ")");
	}
}

/* LOOM_CHECK=1: every rank sends its call's signature to every other */
static int check_call(struct loom_comm *c, const struct loom_opdesc *d, struct loom_opctx *o)
{
	struct ckhdr mine, *tab;
	struct loom_xctx x;
	int i, rc, nd = 0;
	char line[600], a[128], b[128];
	size_t len;
	memset(&mine, 0, sizeof mine);
	mine.kind = d->kind;
	if (d->kind != LOOM_OP_BARRIER) {
		mine.dt = d->dt;
		mine.count = d->count;
		mine.op = is_reduction(d->kind) ? (int32_t)d->op : -1;
		mine.root = d->kind == LOOM_OP_BCAST || d->kind == LOOM_OP_REDUCE ? d->root : -1;
	}
	tab = calloc((size_t)c->size, sizeof *tab);
	if (!tab)
		return LOOM_ERR_NOMEM;
	tab[c->rank] = mine;
	loom_x_begin_o(&x, c, o, o->seq | LOOM_TAG_CHECK);
	for (i = 0; i < c->size; i++)
		if (i != c->rank) {
			loom_x_send(&x, i, &mine, sizeof mine);
			loom_x_recv(&x, i, &tab[i], sizeof tab[i]);
		}
	rc = loom_x_end(&x);
	if (rc) {
		free(tab);
		return rc;
	}
	ck_text(a, sizeof a, &tab[0]);
	len = (size_t)snprintf(line, sizeof line, "ranks ");
	for (i = 1; i < c->size; i++)
		if (memcmp(&tab[i], &tab[0], sizeof tab[0])) {
			if (!nd)
				ck_text(b, sizeof b, &tab[i]);
			if (len + 16 < sizeof line)
				len += (size_t)snprintf(line + len, sizeof line - len, "%s%d", nd ? "," : "", i);
			nd++;
		}
	if (nd) {
		LOOM_ERR("LOOM_CHECK: comm %s seq %llu: %s differ from rank 0: rank 0 called %s, rank %s called %s",
			 c->name, (unsigned long long)o->seq, line, a,
			 strchr(line, ' ') + 1, b);
		rc = LOOM_ERR_MISMATCH;
	}
	free(tab);
	return rc;
}

static int run16(struct loom_comm *c, const struct loom_opdesc *d, loom_op_t op,
		 struct loom_opctx *o)
{
	size_t n = d->count, nin = d->kind == LOOM_OP_REDUCE_SCATTER ? n * (size_t)c->size : n;
	float *a = malloc(nin * sizeof(float) + 4), *b = NULL;
	int rc;
	if (!a)
		return LOOM_ERR_NOMEM;
	loom_to_f32(a, d->s, nin, d->dt);
	if (d->kind == LOOM_OP_ALLREDUCE) {
		rc = loom_coll_allreduce(c, a, a, n, LOOM_FLOAT32, op, o);
		b = a;
	} else if (d->kind == LOOM_OP_REDUCE) {
		rc = loom_coll_reduce(c, a, a, n, LOOM_FLOAT32, op, d->root, o);
		b = c->rank == d->root ? a : NULL;
	} else {
		b = malloc(n * sizeof(float) + 4);
		rc = b ? loom_coll_reduce_scatter(c, a, b, n, LOOM_FLOAT32, op, o) : LOOM_ERR_NOMEM;
	}
	if (!rc && b) {
		if (d->op == LOOM_AVG)
			loom_avg_finish(b, n, LOOM_FLOAT32, c->size);
		loom_from_f32(d->r, b, n, d->dt);
	}
	if (b != a)
		free(b);
	free(a);
	return rc;
}

int loom_op_run(struct loom_comm *c, const struct loom_opdesc *d)
{
	struct loom_opctx o;
	size_t es = loom_dtype_size(d->dt), n = d->count;
	loom_op_t op = d->op == LOOM_AVG ? LOOM_SUM : d->op;
	int rc = atomic_load(&c->failed);
	if (rc)
		return rc;
	o.name = loom_opdesc_name(d->kind);
	o.seq = loom_op_enter(c);
	o.deadline = loom_now() + c->timeout;
	o.top = c;
	o.topseq = o.seq;
	LOOM_TRACE("comm %s seq %llu: %s count %zu %s", c->name, (unsigned long long)o.seq, o.name,
		   n, d->kind == LOOM_OP_BARRIER ? "" : loom_dtype_name(d->dt));
	if (c->check && c->size > 1 && (rc = check_call(c, d, &o)))
		return rc;
	if (d->kind != LOOM_OP_BARRIER && n == 0)
		return LOOM_SUCCESS;
	if (is_reduction(d->kind) && loom_dtype_is16(d->dt)) {
		rc = run16(c, d, op, &o);
	} else {
		switch (d->kind) {
		case LOOM_OP_ALLREDUCE:
			rc = loom_coll_allreduce(c, d->s, d->r, n, d->dt, op, &o);
			if (!rc && d->op == LOOM_AVG)
				loom_avg_finish(d->r, n, d->dt, c->size);
			break;
		case LOOM_OP_REDUCE:
			rc = loom_coll_reduce(c, d->s, d->r, n, d->dt, op, d->root, &o);
			if (!rc && d->op == LOOM_AVG && c->rank == d->root)
				loom_avg_finish(d->r, n, d->dt, c->size);
			break;
		case LOOM_OP_REDUCE_SCATTER:
			rc = loom_coll_reduce_scatter(c, d->s, d->r, n, d->dt, op, &o);
			if (!rc && d->op == LOOM_AVG)
				loom_avg_finish(d->r, n, d->dt, c->size);
			break;
		case LOOM_OP_BCAST:
			if (c->rank == d->root && d->s != d->r)
				memmove(d->r, d->s, n * es);
			rc = loom_coll_bcast(c, d->r, n * es, d->root, &o);
			break;
		case LOOM_OP_ALLGATHER:
			rc = loom_coll_allgather(c, d->s, d->r, n * es, &o);
			break;
		case LOOM_OP_ALLTOALL:
			rc = loom_coll_alltoall(c, d->s, d->r, n * es, &o);
			break;
		case LOOM_OP_BARRIER:
			rc = loom_coll_barrier(c, &o);
			break;
		default:
			rc = LOOM_ERR_INVALID;
		}
	}
	if (rc && rc != LOOM_ERR_INVALID) {
		int zero = 0;
		atomic_compare_exchange_strong(&c->failed, &zero, rc);
	}
	return rc;
}

int loom_op_blocking(struct loom_comm *c, const struct loom_opdesc *d)
{
	int rc = loom_op_validate(c, d);
	if (rc)
		return rc;
	loom_nbq_drain(c);
	pthread_mutex_lock(&c->exec);
	rc = loom_op_run(c, d);
	pthread_mutex_unlock(&c->exec);
	return rc;
}

/* ---- the native backend's entries ---- */
static int n_allreduce(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op,
		       loom_comm_t *c)
{
	struct loom_opdesc d = { LOOM_OP_ALLREDUCE, s, r, n, dt, op, 0 };
	return loom_op_blocking(c, &d);
}
static int n_broadcast(const void *s, void *r, size_t n, loom_dtype_t dt, int root, loom_comm_t *c)
{
	struct loom_opdesc d = { LOOM_OP_BCAST, s, r, n, dt, LOOM_SUM, root };
	return loom_op_blocking(c, &d);
}
static int n_reduce(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op, int root,
		    loom_comm_t *c)
{
	struct loom_opdesc d = { LOOM_OP_REDUCE, s, r, n, dt, op, root };
	return loom_op_blocking(c, &d);
}
static int n_allgather(const void *s, void *r, size_t n, loom_dtype_t dt, loom_comm_t *c)
{
	struct loom_opdesc d = { LOOM_OP_ALLGATHER, s, r, n, dt, LOOM_SUM, 0 };
	return loom_op_blocking(c, &d);
}
static int n_reduce_scatter(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op,
			    loom_comm_t *c)
{
	struct loom_opdesc d = { LOOM_OP_REDUCE_SCATTER, s, r, n, dt, op, 0 };
	return loom_op_blocking(c, &d);
}
static int n_alltoall(const void *s, void *r, size_t n, loom_dtype_t dt, loom_comm_t *c)
{
	struct loom_opdesc d = { LOOM_OP_ALLTOALL, s, r, n, dt, LOOM_SUM, 0 };
	return loom_op_blocking(c, &d);
}
static int n_barrier(loom_comm_t *c)
{
	struct loom_opdesc d = { LOOM_OP_BARRIER, NULL, NULL, 0, LOOM_INT8, LOOM_SUM, 0 };
	return loom_op_blocking(c, &d);
}
static int n_send(const void *buf, size_t n, loom_dtype_t dt, int peer, loom_comm_t *c)
{
	loom_request_t *q;
	int rc = loom_p2p_start(c, 1, (void *)buf, n, dt, peer, &q);
	return rc ? rc : loom_wait(q);
}
static int n_recv(void *buf, size_t n, loom_dtype_t dt, int peer, loom_comm_t *c)
{
	loom_request_t *q;
	int rc = loom_p2p_start(c, 0, buf, n, dt, peer, &q);
	return rc ? rc : loom_wait(q);
}

const struct loom_backend_ops loom_native_ops = {
	"native", n_allreduce, n_broadcast, n_reduce, n_allgather, n_reduce_scatter, n_alltoall,
	n_barrier, n_send, n_recv,
};

/* ---- public blocking API: through the communicator's backend ---- */

/* Count a finished public operation for LOOM_METRICS_FILE. bytes is the
 * per-rank size nccl-tests reports for the operation. */
static int metered(loom_comm_t *c, enum loom_metric_op op, size_t bytes, double t0, int rc)
{
	if (!c->metrics && !c->internal)
		c->metrics = loom_metrics_new(c->name, c->rank, c->size);
	if (rc == LOOM_SUCCESS)
		loom_metrics_op(c->metrics, op, bytes, loom_now() - t0);
	else if (rc == LOOM_ERR_TIMEOUT)
		loom_metrics_timeout(c->metrics);
	else if (rc == LOOM_ERR_PEER_LOST)
		loom_metrics_peer_lost(c->metrics);
	return rc;
}
#define BYTES(n, dt) ((n) * loom_dtype_size(dt))

int loom_allreduce(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op, loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	double t0 = loom_now();
	return metered(c, LOOM_METRIC_ALLREDUCE, BYTES(n, dt), t0, c->ops->allreduce(s, r, n, dt, op, c));
}
int loom_broadcast(const void *s, void *r, size_t n, loom_dtype_t dt, int root, loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	double t0 = loom_now();
	return metered(c, LOOM_METRIC_BROADCAST, BYTES(n, dt), t0, c->ops->broadcast(s, r, n, dt, root, c));
}
int loom_reduce(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op, int root,
		loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	double t0 = loom_now();
	return metered(c, LOOM_METRIC_REDUCE, BYTES(n, dt), t0, c->ops->reduce(s, r, n, dt, op, root, c));
}
int loom_allgather(const void *s, void *r, size_t n, loom_dtype_t dt, loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	double t0 = loom_now();
	return metered(c, LOOM_METRIC_ALLGATHER, BYTES(n, dt) * (size_t)c->size, t0,
		       c->ops->allgather(s, r, n, dt, c));
}
int loom_reduce_scatter(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op,
			loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	double t0 = loom_now();
	return metered(c, LOOM_METRIC_REDUCE_SCATTER, BYTES(n, dt) * (size_t)c->size, t0,
		       c->ops->reduce_scatter(s, r, n, dt, op, c));
}
int loom_alltoall(const void *s, void *r, size_t n, loom_dtype_t dt, loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	double t0 = loom_now();
	return metered(c, LOOM_METRIC_ALLTOALL, BYTES(n, dt) * (size_t)c->size, t0,
		       c->ops->alltoall(s, r, n, dt, c));
}
int loom_barrier(loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	double t0 = loom_now();
	return metered(c, LOOM_METRIC_BARRIER, 0, t0, c->ops->barrier(c));
}
int loom_send(const void *buf, size_t n, loom_dtype_t dt, int peer, loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	double t0 = loom_now();
	return metered(c, LOOM_METRIC_SEND, BYTES(n, dt), t0, c->ops->send(buf, n, dt, peer, c));
}
int loom_recv(void *buf, size_t n, loom_dtype_t dt, int peer, loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	double t0 = loom_now();
	return metered(c, LOOM_METRIC_RECV, BYTES(n, dt), t0, c->ops->recv(buf, n, dt, peer, c));
}
