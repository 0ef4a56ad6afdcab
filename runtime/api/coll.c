/* runtime/api/coll.c: the public collectives and point to point, blocking and
 * non-blocking, on every backend: one descriptor per call, checked here
 * once, handed to the communicator's backend, and counted in the metrics
 * (LOOM_METRICS_FILE) when it completes, at loom_wait/loom_test for the
 * non-blocking forms. */
#include "backend/backend.h"
#include "metrics/metrics.h"

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
 * when its request completes. Returns rc. */
static int counted(struct loom_comm *c, int metric, size_t bytes, double t0, int rc,
		   loom_request_t **req, int nonblocking)
{
	if (!nonblocking || rc)
		return loom_metered(c, metric, bytes, t0, rc);
	loom_req_meter(*req, c, metric, bytes, t0);
	return LOOM_SUCCESS;
}

/* One collective: req NULL for the blocking form. */
static int issue(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req,
		 int nonblocking)
{
	double t0;
	int rc;
	if ((rc = req_slot(req, nonblocking)) || (rc = loom_op_validate(c, d)))
		return rc;
	t0 = loom_now();
	rc = c->be->coll(c, d, req);
	return counted(c, metric_of[d->kind], metric_bytes(c, d), t0, rc, req, nonblocking);
}

static int p2p(struct loom_comm *c, int is_send, void *buf, size_t n, loom_dtype_t dt, int peer,
	       loom_request_t **req, int nonblocking)
{
	double t0;
	int rc;
	if ((rc = req_slot(req, nonblocking)))
		return rc;
	if (!c || !loom_dtype_ok(dt) || peer < 0 || peer >= c->size || (n && !buf) ||
	    n > ((size_t)-1 / 2) / loom_dtype_size(dt))
		return LOOM_ERR_INVALID;
	t0 = loom_now();
	rc = c->be->p2p(c, is_send, buf, n, dt, peer, req);
	return counted(c, is_send ? LOOM_METRIC_SEND : LOOM_METRIC_RECV, n * loom_dtype_size(dt), t0,
		       rc, req, nonblocking);
}

#define DESC(kind, s, r, n, dt, op, root) \
	(&(const struct loom_opdesc){ (kind), (s), (r), (n), (dt), (op), (root) })

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
