/* runtime/core/progress.c: requests. A native collective's request waits for
 * the communicator's queue (op.c) to run it; a native point-to-point
 * request goes straight to the TCP engine (its thread moves the bytes), so
 * isend/irecv pairs in any order cannot deadlock; another backend's
 * request wraps its own state. loom_wait / loom_test finish all three and
 * count the operation in the metrics the public layer asked for. */
#include "core/core.h"
#include "flight/flight.h"
#include "metrics/metrics.h"

#include <stdlib.h>
#include <string.h>

enum { REQ_COLL = 1, REQ_P2P, REQ_BACKEND };

struct loom_request {
	int kind;
	struct loom_comm *c;
	struct loom_opdesc d;
	int status;
	int done;
	pthread_mutex_t m;
	pthread_cond_t cv;
	struct loom_request *next;
	/* p2p */
	struct loom_treq t;
	struct loom_bell bell;
	double deadline, started;
	int peer, is_send;
	uint64_t pseq;
	void *impl;             /* REQ_BACKEND: the backend's request */
	loom_req_take_fn take;  /* REQ_COLL: how a waiter runs it, not started */
	/* counted at completion when metric >= 0 (loom_req_meter) */
	struct loom_comm *mc;
	int metric;
	size_t mbytes;
	double t0;
	uint64_t fseq;          /* its flight record number, 0 none */
};

void loom_req_finish(struct loom_request *q, int status)
{
	pthread_mutex_lock(&q->m);
	q->status = status;
	q->done = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->m);
}

static struct loom_request *req_new(struct loom_comm *c, int kind)
{
	struct loom_request *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->kind = kind;
	q->c = c;
	q->metric = -1;
	pthread_mutex_init(&q->m, NULL);
	pthread_cond_init(&q->cv, NULL);
	return q;
}

static void req_free(struct loom_request *q)
{
	pthread_mutex_destroy(&q->m);
	pthread_cond_destroy(&q->cv);
	free(q);
}

loom_request_t *loom_req_wrap(struct loom_comm *c, void *impl)
{
	struct loom_request *q = req_new(c, REQ_BACKEND);
	if (q)
		q->impl = impl;
	return q;
}

struct loom_request *loom_req_coll(struct loom_comm *c, const struct loom_opdesc *d)
{
	struct loom_request *q = req_new(c, REQ_COLL);
	if (q)
		q->d = *d;
	return q;
}

struct loom_request *loom_req_next(struct loom_request *q) { return q->next; }
void loom_req_set_next(struct loom_request *q, struct loom_request *next) { q->next = next; }
const struct loom_opdesc *loom_req_desc(const struct loom_request *q) { return &q->d; }
void loom_req_set_take(struct loom_request *q, loom_req_take_fn take) { q->take = take; }

/* Count a finished public operation for LOOM_METRICS_FILE and mark it
 * finished in the flight record (collective seq; 0 for point to point).
 * bytes is the per-rank size nccl-tests reports for the operation. */
double loom_op_clock(int flight)
{
	if (loom_metrics_enabled())
		return loom_now();
	return flight ? loom_now_coarse() : 0;
}

int loom_metered(struct loom_comm *c, int metric, size_t bytes, double t0, uint64_t seq, int rc)
{
	int metrics = loom_metrics_enabled();
	double now;
	if (!metrics && !c->flight)
		return rc;
	now = loom_op_clock(1);
	if (metrics && !c->metrics && !c->internal)
		c->metrics = loom_metrics_new(c->name, c->rank, c->size);
	if (c->flight) {
		if (metric == LOOM_METRIC_SEND || metric == LOOM_METRIC_RECV)
			loom_flight_p2p_end(c->flight, rc, now);
		else if (seq)
			loom_flight_end(c->flight, seq, rc, now);
	}
	if (rc == LOOM_SUCCESS) {
		loom_metrics_op(c->metrics, (enum loom_metric_op)metric, bytes, now - t0);
		if (seq)
			loom_metrics_seq(c->metrics, seq);
	} else if (rc == LOOM_ERR_TIMEOUT)
		loom_metrics_timeout(c->metrics);
	else if (rc == LOOM_ERR_PEER_LOST)
		loom_metrics_peer_lost(c->metrics);
	return rc;
}

void loom_req_meter(struct loom_request *q, struct loom_comm *c, int metric, size_t bytes,
		    double t0, uint64_t seq)
{
	q->fseq = seq;
	q->mc = c;
	q->metric = metric;
	q->mbytes = bytes;
	q->t0 = t0;
}

/* a request is done with status rc: count it, free it */
static int req_end(struct loom_request *q, int rc)
{
	if (q->metric >= 0)
		loom_metered(q->mc, q->metric, q->mbytes, q->t0, q->fseq, rc);
	req_free(q);
	return rc;
}

/* LOOM_P2P_RENDEZVOUS=1: large point-to-point sends go by rendezvous like
 * the collectives' (no buffer at the receiver; a send then completes only
 * once its receive is posted). Read once. */
static int p2p_rendezvous(void)
{
	static _Atomic int on = -1;
	return loom_env_flag(&on, "LOOM_P2P_RENDEZVOUS", "1");
}

/* The native backend's point to point (validated): a request for the
 * TCP engine; req NULL: wait for it here. */
int loom_native_p2p(struct loom_comm *c, int is_send, void *buf, size_t count, loom_dtype_t dt,
		    int peer, loom_request_t **req)
{
	struct loom_request *q;
	struct { uint64_t n[2]; } *seq;  /* messages sent to peer, received from it */
	int rc;
	if ((rc = atomic_load(&c->failed)))
		return rc;
	if (!(q = req_new(c, REQ_P2P)))
		return LOOM_ERR_NOMEM;
	q->peer = peer;
	q->is_send = is_send;
	q->started = loom_now();
	q->deadline = q->started + c->timeout;
	pthread_mutex_lock(&c->p2p_lock);
	if (!(seq = loom_intmap_get(&c->p2p, peer))) {
		if (!(seq = calloc(1, sizeof *seq)) || loom_intmap_put(&c->p2p, peer, seq)) {
			pthread_mutex_unlock(&c->p2p_lock);
			free(seq);
			req_free(q);
			return LOOM_ERR_NOMEM;
		}
	}
	q->pseq = seq->n[!is_send]++;
	q->t.kind = is_send ? TREQ_SEND : TREQ_RECV;
	/* a send completes without its receive (transport_tcp.c), unless
	 * LOOM_P2P_RENDEZVOUS=1 asks large ones to wait for it */
	q->t.eager = !p2p_rendezvous();
	q->t.peer = loom_comm_wrank(c, peer);
	q->t.ctx = c->ctx;
	q->t.tag = LOOM_TAG_P2P | q->pseq;
	q->t.buf = buf;
	q->t.len = count * loom_dtype_size(dt);
	q->t.bell = &q->bell;
	/* posted under the lock: the n-th send meets the n-th receive */
	loom_tcp_post(c->w->eng, &q->t);
	pthread_mutex_unlock(&c->p2p_lock);
	if (!req)
		return loom_wait(q);
	*req = q;
	return LOOM_SUCCESS;
}

/* 1 when the p2p request is finished (q->status set) */
static int p2p_poll(struct loom_request *q, double timeout)
{
	struct loom_comm *c = q->c;
	for (;;) {
		uint32_t seen = atomic_load(&q->bell.seq);
		int f;
		double now;
		if (atomic_load(&q->t.done)) {
			q->status = q->t.status;
			return 1;
		}
		f = atomic_load(&c->failed);
		now = loom_now();
		if (f || now >= q->deadline) {
			loom_tcp_cancel(c->w->eng, &q->t);
			if (!f) {
				LOOM_ERR("timeout: comm %s op %s seq %llu after %.1f s: rank %d never %s",
					 c->name, q->is_send ? "send" : "recv",
					 (unsigned long long)q->pseq + 1, now - q->started, q->peer,
					 q->is_send ? "received it" : "sent it");
				loom_flight_log_verdict();
				f = LOOM_ERR_TIMEOUT;
			}
			q->status = f;
			return 1;
		}
		if (timeout <= 0)
			return 0;
		loom_bell_wait(&q->bell, seen, 0.1);
	}
}

int loom_wait(loom_request_t *q)
{
	if (!q)
		return LOOM_ERR_INVALID;
	if (q->kind == REQ_BACKEND)
		return req_end(q, q->c->be->wait(q->impl));
	if (q->kind == REQ_P2P) {
		p2p_poll(q, 1);
	} else {
		if (q->take)
			q->take(q->c, q);
		pthread_mutex_lock(&q->m);
		while (!q->done)
			pthread_cond_wait(&q->cv, &q->m);
		pthread_mutex_unlock(&q->m);
	}
	return req_end(q, q->status);
}

int loom_test(loom_request_t *q, int *done)
{
	int d, rc;
	if (!q || !done)
		return LOOM_ERR_INVALID;
	if (q->kind == REQ_BACKEND) {
		rc = q->c->be->test(q->impl, done);
		return *done ? req_end(q, rc) : rc;
	}
	if (q->kind == REQ_P2P) {
		d = p2p_poll(q, 0);
	} else {
		pthread_mutex_lock(&q->m);
		d = q->done;
		pthread_mutex_unlock(&q->m);
	}
	*done = d;
	if (!d)
		return LOOM_SUCCESS;
	return req_end(q, q->status);
}
