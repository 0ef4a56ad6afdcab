/* runtime/api/coll.c: the public collectives and point to point, blocking and
 * non-blocking, on every backend: one descriptor per call, checked here
 * once, handed to the communicator's backend, and counted in the metrics
 * (LOOM_METRICS_FILE) when it completes, at loom_wait/loom_test for the
 * non-blocking forms. Each call is also posted to the communicator's flight
 * record (LOOM_FLIGHT_DIR) and marked finished there at that same point. */
#include "backend/backend.h"
#include "flight/flight.h"
#include "metrics/metrics.h"

_Static_assert((int)LOOM_OP_BARRIER < (int)LOOM_FLIGHT_SEND, "flight kinds keep LOOM_OP_* numbers");

static const int metric_of[] = {
	[LOOM_OP_ALLREDUCE] = LOOM_METRIC_ALLREDUCE,
	[LOOM_OP_BCAST] = LOOM_METRIC_BROADCAST,
	[LOOM_OP_REDUCE] = LOOM_METRIC_REDUCE,
	[LOOM_OP_ALLGATHER] = LOOM_METRIC_ALLGATHER,
	[LOOM_OP_REDUCE_SCATTER] = LOOM_METRIC_REDUCE_SCATTER,
	[LOOM_OP_ALLTOALL] = LOOM_METRIC_ALLTOALL,
	[LOOM_OP_BARRIER] = LOOM_METRIC_BARRIER,
};

/* the per-rank size nccl-tests reports: the whole output of allgather,
 * the whole input of reduce_scatter and alltoall */
static size_t metric_bytes(const struct loom_comm *c, const struct loom_opdesc *d)
{
	size_t b = d->kind == LOOM_OP_BARRIER ? 0 : d->count * loom_dtype_size(d->dt);
	if (d->kind == LOOM_OP_ALLGATHER || d->kind == LOOM_OP_REDUCE_SCATTER ||
	    d->kind == LOOM_OP_ALLTOALL)
		b *= (size_t)c->size;
	return b;
}

/* A call's request slot: required, and cleared, for the non-blocking forms */
static int req_slot(loom_request_t **req, int nonblocking)
{
	if (!nonblocking)
		return LOOM_SUCCESS;
	if (!req)
		return LOOM_ERR_INVALID;
	*req = NULL;
	return LOOM_SUCCESS;
}

/* Count the call: now when it ended (blocking, or failed to start), else
 * when its request completes. seq: its flight record number (0: none).
 * Returns rc. */
static int counted(struct loom_comm *c, int metric, size_t bytes, double t0, uint64_t seq, int rc,
		   loom_request_t **req, int nonblocking)
{
	if (!nonblocking || rc)
		return loom_metered(c, metric, bytes, t0, seq, rc);
	loom_req_meter(*req, c, metric, bytes, t0, seq);
	return LOOM_SUCCESS;
}

/* the communicator's flight slot, made at its first public operation */
static inline struct loom_flight_slot *flight_of(struct loom_comm *c)
{
	if (__builtin_expect(!c->flight_tried, 0)) {
		c->flight_tried = 1;
		c->flight = loom_flight_slot_new(c->w ? c->w->rank : c->rank,
						 c->w && c->w->size ? c->w->size : c->size, c->name,
						 c->ctx, c->rank, c->size, c->wr.n ? loom_comm_wrank(c, 0) : 0);
	}
	return c->flight;
}

/* One collective: req NULL for the blocking form. */
static int issue(struct loom_comm *c, struct loom_opdesc *d, loom_request_t **req,
		 int nonblocking)
{
	struct loom_flight_slot *fs;
	uint64_t seq = 0;
	double t0;
	int rc;
	if ((rc = req_slot(req, nonblocking)) || (rc = loom_op_validate(c, d)))
		return rc;
	fs = flight_of(c);
	t0 = loom_op_clock(fs != NULL);
	if (fs)
		seq = loom_flight_post(fs, d->kind, d->count, d->dt, d->op, d->root, t0);
	/* the operation's start, for its deadline: one clock read less */
	d->called = nonblocking ? 0 : t0;
	rc = c->be->coll(c, d, req);
	return counted(c, metric_of[d->kind], metric_bytes(c, d), t0, seq, rc, req, nonblocking);
}

static int p2p(struct loom_comm *c, int is_send, void *buf, size_t n, loom_dtype_t dt, int peer,
	       loom_request_t **req, int nonblocking)
{
	struct loom_flight_slot *fs;
	double t0;
	int rc;
	if ((rc = req_slot(req, nonblocking)))
		return rc;
	if (!c || !loom_dtype_ok(dt) || peer < 0 || peer >= c->size || (n && !buf) ||
	    n > ((size_t)-1 / 2) / loom_dtype_size(dt))
		return LOOM_ERR_INVALID;
	fs = flight_of(c);
	t0 = loom_op_clock(fs != NULL);
	if (fs)
		loom_flight_p2p_post(fs, is_send, n, dt, peer, t0);
	rc = c->be->p2p(c, is_send, buf, n, dt, peer, req);
	return counted(c, is_send ? LOOM_METRIC_SEND : LOOM_METRIC_RECV, n * loom_dtype_size(dt), t0,
		       0, rc, req, nonblocking);
}

#define DESC(kind, s, r, n, dt, op, root) \
	(&(struct loom_opdesc){ (kind), (s), (r), (n), (dt), (op), (root), 0 })

int loom_allreduce(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op, loom_comm_t *c)
{
	return issue(c, DESC(LOOM_OP_ALLREDUCE, s, r, n, dt, op, 0), NULL, 0);
}
int loom_broadcast(const void *s, void *r, size_t n, loom_dtype_t dt, int root, loom_comm_t *c)
{
	return issue(c, DESC(LOOM_OP_BCAST, s, r, n, dt, LOOM_SUM, root), NULL, 0);
}
int loom_reduce(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op, int root,
		loom_comm_t *c)
{
	return issue(c, DESC(LOOM_OP_REDUCE, s, r, n, dt, op, root), NULL, 0);
}
int loom_allgather(const void *s, void *r, size_t n, loom_dtype_t dt, loom_comm_t *c)
{
	return issue(c, DESC(LOOM_OP_ALLGATHER, s, r, n, dt, LOOM_SUM, 0), NULL, 0);
}
int loom_reduce_scatter(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op,
			loom_comm_t *c)
{
	return issue(c, DESC(LOOM_OP_REDUCE_SCATTER, s, r, n, dt, op, 0), NULL, 0);
}
int loom_alltoall(const void *s, void *r, size_t n, loom_dtype_t dt, loom_comm_t *c)
{
	return issue(c, DESC(LOOM_OP_ALLTOALL, s, r, n, dt, LOOM_SUM, 0), NULL, 0);
}
int loom_barrier(loom_comm_t *c)
{
	return issue(c, DESC(LOOM_OP_BARRIER, NULL, NULL, 0, LOOM_INT8, LOOM_SUM, 0), NULL, 0);
}

int loom_iallreduce(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op,
		    loom_comm_t *c, loom_request_t **req)
{
	return issue(c, DESC(LOOM_OP_ALLREDUCE, s, r, n, dt, op, 0), req, 1);
}
int loom_ibroadcast(const void *s, void *r, size_t n, loom_dtype_t dt, int root, loom_comm_t *c,
		    loom_request_t **req)
{
	return issue(c, DESC(LOOM_OP_BCAST, s, r, n, dt, LOOM_SUM, root), req, 1);
}
int loom_ireduce(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op, int root,
		 loom_comm_t *c, loom_request_t **req)
{
	return issue(c, DESC(LOOM_OP_REDUCE, s, r, n, dt, op, root), req, 1);
}
int loom_iallgather(const void *s, void *r, size_t n, loom_dtype_t dt, loom_comm_t *c,
		    loom_request_t **req)
{
	return issue(c, DESC(LOOM_OP_ALLGATHER, s, r, n, dt, LOOM_SUM, 0), req, 1);
}
int loom_ireduce_scatter(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op,
			 loom_comm_t *c, loom_request_t **req)
{
	return issue(c, DESC(LOOM_OP_REDUCE_SCATTER, s, r, n, dt, op, 0), req, 1);
}
int loom_ialltoall(const void *s, void *r, size_t n, loom_dtype_t dt, loom_comm_t *c,
		   loom_request_t **req)
{
	return issue(c, DESC(LOOM_OP_ALLTOALL, s, r, n, dt, LOOM_SUM, 0), req, 1);
}
int loom_ibarrier(loom_comm_t *c, loom_request_t **req)
{
	return issue(c, DESC(LOOM_OP_BARRIER, NULL, NULL, 0, LOOM_INT8, LOOM_SUM, 0), req, 1);
}

int loom_send(const void *buf, size_t n, loom_dtype_t dt, int peer, loom_comm_t *c)
{
	return p2p(c, 1, (void *)buf, n, dt, peer, NULL, 0);
}
int loom_recv(void *buf, size_t n, loom_dtype_t dt, int peer, loom_comm_t *c)
{
	return p2p(c, 0, buf, n, dt, peer, NULL, 0);
}
int loom_isend(const void *buf, size_t n, loom_dtype_t dt, int peer, loom_comm_t *c,
	       loom_request_t **req)
{
	return p2p(c, 1, (void *)buf, n, dt, peer, req, 1);
}
int loom_irecv(void *buf, size_t n, loom_dtype_t dt, int peer, loom_comm_t *c,
	       loom_request_t **req)
{
	return p2p(c, 0, buf, n, dt, peer, req, 1);
}
