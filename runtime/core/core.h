/* runtime/core/core.h: the native backend's execution: one operation at
 * a time per communicator and the non-blocking queue (op.c), requests and
 * loom_wait/loom_test (progress.c), the native split/dup/free/abort
 * (comm_native.c). */
#ifndef LOOM_CORE_CORE_H
#define LOOM_CORE_CORE_H

#include "coll/coll.h"

/* ---- op.c: how the native backend runs one operation ---- */
const char *loom_opdesc_name(int kind);
int loom_op_validate(const struct loom_comm *c, const struct loom_opdesc *d);
int loom_op_run(struct loom_comm *c, const struct loom_opdesc *d);  /* exec held */
/* the native backend's entries (coll.c, progress.c, comm.c, init.c) */
int loom_native_coll(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req);
int loom_nbq_post(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req);
void loom_nbq_drain(struct loom_comm *c);
void loom_nbq_stop(struct loom_comm *c);
void loom_native_destroy(struct loom_comm *c);  /* its queue, then the communicator */
int loom_native_p2p(struct loom_comm *c, int is_send, void *buf, size_t count, loom_dtype_t dt,
		    int peer, loom_request_t **req);
int loom_native_split(struct loom_comm *c, int color, int key, struct loom_comm **out);
int loom_native_dup(struct loom_comm *c, struct loom_comm **out);
int loom_native_free(struct loom_comm *c);
int loom_native_abort(struct loom_comm *c);
int loom_native_revoke(struct loom_comm *c);
/* comm_ft.c: agreement among the survivors, and the shrink */
int loom_native_agree(struct loom_comm *c, int *flag);
int loom_native_shrink(struct loom_comm *c, struct loom_comm **out);
/* comm_fence.c: LOOM_ERR_REVOKED when this process is fenced; the agreed
 * failed members of c fenced in the engine */
int loom_native_fenced(struct loom_comm *c);
void loom_native_fence_failed(struct loom_comm *c);
/* comm_grow.c: the members and nnew newcomers (core/grow.h) */
int loom_native_grow(struct loom_comm *c, int nnew, struct loom_comm **out);

/* ---- progress.c: requests ---- */
loom_request_t *loom_req_wrap(struct loom_comm *c, void *impl);
loom_request_t *loom_req_coll(struct loom_comm *c, const struct loom_opdesc *d);
loom_request_t *loom_req_next(loom_request_t *q);
void loom_req_set_next(loom_request_t *q, loom_request_t *next);
const struct loom_opdesc *loom_req_desc(const loom_request_t *q);
void loom_req_finish(loom_request_t *q, int status);
/* how loom_wait may run a collective request that has not started on
 * the waiting thread (op.c's queue): 1 when it did (q finished) */
typedef int (*loom_req_take_fn)(struct loom_comm *c, loom_request_t *q);
void loom_req_set_take(loom_request_t *q, loom_req_take_fn take);
/* Count q's operation (enum loom_metric_op) on c when it completes. */
void loom_req_meter(loom_request_t *q, struct loom_comm *c, int metric, size_t bytes, double t0,
		    uint64_t seq);
/* Count a public operation that ended with rc; returns rc. */
/* An operation's start or end time, read only for those who use it:
 * metrics time each operation (the precise clock); the flight record,
 * which names a hang in tenths of a second, takes the coarse one (a few
 * ns, where two precise reads were an eighth of a 2-rank 8 B broadcast);
 * neither (flight 0, no LOOM_METRICS_FILE), no clock at all: 0. */
double loom_op_clock(int flight);
int loom_metered(struct loom_comm *c, int metric, size_t bytes, double t0, uint64_t seq, int rc);

#endif
