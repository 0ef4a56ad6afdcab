/* runtime/progress.c: non-blocking operations. Collectives started with
 * loom_i* go to the communicator's queue and are run, in order, by one
 * background thread per communicator (started on first use), so they
 * progress while the caller computes; blocking collectives wait for that
 * queue to drain first, keeping every rank's order the same.
 * Point-to-point requests go straight to the TCP engine (its thread
 * moves the bytes), so isend/irecv pairs in any order cannot deadlock. */
#include "loom_internal.h"

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
};

struct loom_nbq {
	pthread_mutex_t m;
	pthread_cond_t cv, idle;
	struct loom_request *head, *tail;
	int busy, stop;
	pthread_t thr;
};

static void req_finish(struct loom_request *q, int status)
{
	pthread_mutex_lock(&q->m);
	q->status = status;
	q->done = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->m);
}

static void *worker(void *arg)
{
	struct loom_comm *c = arg;
	struct loom_nbq *nq = c->nbq;
	pthread_mutex_lock(&nq->m);
	for (;;) {
		struct loom_request *q;
		int rc;
		while (!nq->head && !nq->stop)
			pthread_cond_wait(&nq->cv, &nq->m);
		if (!nq->head)
			break;
		q = nq->head;
		nq->head = q->next;
		if (!nq->head)
			nq->tail = NULL;
		nq->busy = 1;
		pthread_mutex_unlock(&nq->m);
		if (nq->stop) {
			rc = LOOM_ERR_ABORTED;
		} else {
			pthread_mutex_lock(&c->exec);
			rc = loom_op_run(c, &q->d);
			pthread_mutex_unlock(&c->exec);
		}
		req_finish(q, rc);
		pthread_mutex_lock(&nq->m);
		nq->busy = 0;
		pthread_cond_broadcast(&nq->idle);
	}
	pthread_mutex_unlock(&nq->m);
	return NULL;
}

static int nbq_get(struct loom_comm *c, struct loom_nbq **out)
{
	int rc = LOOM_SUCCESS;
	pthread_mutex_lock(&c->p2p_lock);
	if (!c->nbq) {
		struct loom_nbq *nq = calloc(1, sizeof *nq);
		if (!nq) {
			rc = LOOM_ERR_NOMEM;
		} else {
			pthread_mutex_init(&nq->m, NULL);
			pthread_cond_init(&nq->cv, NULL);
			pthread_cond_init(&nq->idle, NULL);
			c->nbq = nq;
			if (pthread_create(&nq->thr, NULL, worker, c) != 0) {
				LOOM_ERR("cannot start the progress thread of comm %s", c->name);
				c->nbq = NULL;
				free(nq);
				rc = LOOM_ERR_SYSTEM;
			}
		}
	}
	*out = c->nbq;
	pthread_mutex_unlock(&c->p2p_lock);
	return rc;
}

void loom_nbq_drain(struct loom_comm *c)
{
	struct loom_nbq *nq = c->nbq;
	if (!nq)
		return;
	pthread_mutex_lock(&nq->m);
	while (nq->head || nq->busy)
		pthread_cond_wait(&nq->idle, &nq->m);
	pthread_mutex_unlock(&nq->m);
}

void loom_nbq_stop(struct loom_comm *c)
{
	struct loom_nbq *nq = c->nbq;
	if (!nq)
		return;
	pthread_mutex_lock(&nq->m);
	nq->stop = 1;
	pthread_cond_broadcast(&nq->cv);
	pthread_mutex_unlock(&nq->m);
	pthread_join(nq->thr, NULL);
	pthread_mutex_destroy(&nq->m);
	pthread_cond_destroy(&nq->cv);
	pthread_cond_destroy(&nq->idle);
	free(nq);
	c->nbq = NULL;
}

static struct loom_request *req_new(struct loom_comm *c, int kind)
{
	struct loom_request *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->kind = kind;
	q->c = c;
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

static int start(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req)
{
	struct loom_request *q;
	struct loom_nbq *nq;
	int rc;
	if (c && c->bx && c->bx->icoll)
		return c->bx->icoll(c, d, req);
	if (!req)
		return LOOM_ERR_INVALID;
	*req = NULL;
	if ((rc = loom_op_validate(c, d)))
		return rc;
	if ((rc = nbq_get(c, &nq)))
		return rc;
	if (!(q = req_new(c, REQ_COLL)))
		return LOOM_ERR_NOMEM;
	q->d = *d;
	pthread_mutex_lock(&nq->m);
	if (nq->tail)
		nq->tail->next = q;
	else
		nq->head = q;
	nq->tail = q;
	pthread_cond_signal(&nq->cv);
	pthread_mutex_unlock(&nq->m);
	*req = q;
	return LOOM_SUCCESS;
}

int loom_iallreduce(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op,
		    loom_comm_t *c, loom_request_t **req)
{
	struct loom_opdesc d = { LOOM_OP_ALLREDUCE, s, r, n, dt, op, 0 };
	return start(c, &d, req);
}
int loom_ibroadcast(const void *s, void *r, size_t n, loom_dtype_t dt, int root, loom_comm_t *c,
		    loom_request_t **req)
{
	struct loom_opdesc d = { LOOM_OP_BCAST, s, r, n, dt, LOOM_SUM, root };
	return start(c, &d, req);
}
int loom_ireduce(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op, int root,
		 loom_comm_t *c, loom_request_t **req)
{
	struct loom_opdesc d = { LOOM_OP_REDUCE, s, r, n, dt, op, root };
	return start(c, &d, req);
}
int loom_iallgather(const void *s, void *r, size_t n, loom_dtype_t dt, loom_comm_t *c,
		    loom_request_t **req)
{
	struct loom_opdesc d = { LOOM_OP_ALLGATHER, s, r, n, dt, LOOM_SUM, 0 };
	return start(c, &d, req);
}
int loom_ireduce_scatter(const void *s, void *r, size_t n, loom_dtype_t dt, loom_op_t op,
			 loom_comm_t *c, loom_request_t **req)
{
	struct loom_opdesc d = { LOOM_OP_REDUCE_SCATTER, s, r, n, dt, op, 0 };
	return start(c, &d, req);
}
int loom_ialltoall(const void *s, void *r, size_t n, loom_dtype_t dt, loom_comm_t *c,
		   loom_request_t **req)
{
	struct loom_opdesc d = { LOOM_OP_ALLTOALL, s, r, n, dt, LOOM_SUM, 0 };
	return start(c, &d, req);
}
int loom_ibarrier(loom_comm_t *c, loom_request_t **req)
{
	struct loom_opdesc d = { LOOM_OP_BARRIER, NULL, NULL, 0, LOOM_INT8, LOOM_SUM, 0 };
	return start(c, &d, req);
}

int loom_p2p_start(struct loom_comm *c, int is_send, void *buf, size_t count, loom_dtype_t dt,
		   int peer, loom_request_t **req)
{
	struct loom_request *q;
	int rc;
	if (c && c->bx && c->bx->ip2p)
		return c->bx->ip2p(c, is_send, buf, count, dt, peer, req);
	if (!req)
		return LOOM_ERR_INVALID;
	*req = NULL;
	if (!c || !loom_dtype_ok(dt) || peer < 0 || peer >= c->size || (count && !buf) ||
	    count > ((size_t)-1 / 2) / loom_dtype_size(dt))
		return LOOM_ERR_INVALID;
	if ((rc = atomic_load(&c->failed)))
		return rc;
	if (!(q = req_new(c, REQ_P2P)))
		return LOOM_ERR_NOMEM;
	q->peer = peer;
	q->is_send = is_send;
	q->started = loom_now();
	q->deadline = q->started + c->timeout;
	pthread_mutex_lock(&c->p2p_lock);
	q->pseq = is_send ? c->p2p_sent[peer]++ : c->p2p_rcvd[peer]++;
	q->t.kind = is_send ? TREQ_SEND : TREQ_RECV;
	q->t.peer = c->wrank[peer];
	q->t.ctx = c->ctx;
	q->t.tag = LOOM_TAG_P2P | q->pseq;
	q->t.buf = buf;
	q->t.len = count * loom_dtype_size(dt);
	q->t.bell = &q->bell;
	/* posted under the lock: the n-th send meets the n-th receive */
	loom_tcp_post(c->w, &q->t);
	pthread_mutex_unlock(&c->p2p_lock);
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
			loom_tcp_cancel(c->w, &q->t);
			if (!f) {
				LOOM_ERR("timeout: comm %s op %s seq %llu after %.1f s: rank %d never %s",
					 c->name, q->is_send ? "send" : "recv",
					 (unsigned long long)q->pseq + 1, now - q->started, q->peer,
					 q->is_send ? "received it" : "sent it");
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
	int rc;
	if (!q)
		return LOOM_ERR_INVALID;
	if (q->kind == REQ_BACKEND) {
		rc = q->c->bx->wait(q->impl);
		req_free(q);
		return rc;
	}
	if (q->kind == REQ_P2P) {
		p2p_poll(q, 1);
	} else {
		pthread_mutex_lock(&q->m);
		while (!q->done)
			pthread_cond_wait(&q->cv, &q->m);
		pthread_mutex_unlock(&q->m);
	}
	rc = q->status;
	req_free(q);
	return rc;
}

int loom_test(loom_request_t *q, int *done)
{
	int d, rc;
	if (!q || !done)
		return LOOM_ERR_INVALID;
	if (q->kind == REQ_BACKEND) {
		rc = q->c->bx->test(q->impl, done);
		if (*done)
			req_free(q);
		return rc;
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
	rc = q->status;
	req_free(q);
	return rc;
}

int loom_isend(const void *buf, size_t count, loom_dtype_t dt, int peer, loom_comm_t *c,
	       loom_request_t **req)
{
	return loom_p2p_start(c, 1, (void *)buf, count, dt, peer, req);
}

int loom_irecv(void *buf, size_t count, loom_dtype_t dt, int peer, loom_comm_t *c,
	       loom_request_t **req)
{
	return loom_p2p_start(c, 0, buf, count, dt, peer, req);
}
