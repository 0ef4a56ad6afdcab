/* runtime/backend/backend_mpi.c: the MPI backend. A loom communicator wraps an
 * MPI communicator (a duplicate: loom's traffic never meets the
 * program's) and a second duplicate that carries abort notices.
 *
 * Every collective is started with its MPI_I* form and completed by
 * polling MPI_Test against the communicator's deadline, so a blocking
 * call honours LOOM_TIMEOUT / loom_comm_set_timeout exactly as a
 * non-blocking one does. Errors come back as codes (MPI_ERRORS_RETURN)
 * and are mapped onto loom statuses. 16-bit floats are reduced by
 * user-defined MPI ops that compute in fp32 (one rounding to 16 bits per
 * combining step). A collective that timed out cannot be cancelled in
 * MPI: its request and buffers are abandoned and the communicator fails
 * every later operation with the same status.
 */
#include "backend/backend_mpi.h"
#include "flight/flight.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

pthread_mutex_t loom_mpi_mu = PTHREAD_MUTEX_INITIALIZER;
int loom_mpi_users;
int loom_mpi_we_inited;
pthread_mutex_t loom_mpi_call = PTHREAD_MUTEX_INITIALIZER;
int loom_mpi_lock;

/* Background progress: MPI moves non-blocking collectives only inside MPI
 * calls, and loom promises that they progress while the caller computes.
 * While non-blocking requests are outstanding, one thread enters MPI
 * (MPI_Iprobe on a communicator of its own) every 50 us. Started only
 * when that is allowed: MPI initialized by loom, or MPI_THREAD_MULTIPLE. */
static pthread_mutex_t g_pm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_pcv = PTHREAD_COND_INITIALIZER;
static pthread_t g_thr;
static int g_thr_on, g_stop, g_nb;
static MPI_Comm g_pcomm = MPI_COMM_NULL;

struct mreq {
	struct loom_comm *c;
	MPI_Request r;
	int kind;              /* LOOM_OP_* or MP2P_* */
	int active;            /* r not yet completed */
	unsigned long long seq;
	double started, deadline;
	void *avg_buf;         /* AVG: divide this many elements by size */
	size_t avg_n;
	loom_dtype_t dt;
	void *tmp;
	size_t expect;         /* receive: bytes expected */
	int peer;
	int nb;                /* counted in g_nb (non-blocking, background progress) */
};


/* ---- abort notices ---- */
static void check_abort(struct loom_comm *c)
{
	struct mcomm *m = c->impl;
	MPI_Status st;
	int flag = 0, zero = 0;
	if (m->abort_rq == MPI_REQUEST_NULL)
		return;
	LK();
	if (MPI_Test(&m->abort_rq, &flag, &st) != MPI_SUCCESS)
		flag = 0;
	UL();
	if (flag && atomic_compare_exchange_strong(&c->failed, &zero, LOOM_ERR_ABORTED))
		LOOM_ERR("communicator %s aborted by rank %d", c->name, st.MPI_SOURCE);
}

static void idle(unsigned spins)
{
	if (spins < 2000)
		return;
	if (spins < 20000) {
		sched_yield();
	} else {
		struct timespec ts = { 0, 20000 };
		nanosleep(&ts, NULL);
	}
}

/* ---- background progress ---- */
static void *progress_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&g_pm);
	while (!g_stop) {
		struct timespec ts = { 0, 50000 };
		int flag;
		if (!g_nb) {
			pthread_cond_wait(&g_pcv, &g_pm);
			continue;
		}
		pthread_mutex_unlock(&g_pm);
		LK();
		MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, g_pcomm, &flag, MPI_STATUS_IGNORE);
		UL();
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&g_pm);
	}
	pthread_mutex_unlock(&g_pm);
	return NULL;
}

/* loom_mpi_mu held */
void loom_mpi_progress_start(int provided)
{
	if (g_thr_on || !(loom_mpi_we_inited || provided >= MPI_THREAD_MULTIPLE))
		return;
	if (MPI_Comm_dup(MPI_COMM_SELF, &g_pcomm) != MPI_SUCCESS)
		return;
	g_stop = 0;
	if (pthread_create(&g_thr, NULL, progress_thread, NULL) == 0)
		g_thr_on = 1;
	else
		MPI_Comm_free(&g_pcomm);
}

/* loom_mpi_mu held */
void loom_mpi_progress_stop(void)
{
	if (!g_thr_on)
		return;
	pthread_mutex_lock(&g_pm);
	g_stop = 1;
	pthread_cond_signal(&g_pcv);
	pthread_mutex_unlock(&g_pm);
	pthread_join(g_thr, NULL);
	g_thr_on = 0;
	MPI_Comm_free(&g_pcomm);
}

static void nb_count(struct mreq *q, int d)
{
	pthread_mutex_lock(&g_pm);
	g_nb += d;
	if (d > 0)
		pthread_cond_signal(&g_pcv);
	pthread_mutex_unlock(&g_pm);
	q->nb = d > 0;
}

/* ---- requests ---- */
static void mreq_free(struct mreq *q)
{
	if (q->nb)
		nb_count(q, -1);
	/* an abandoned MPI request may still write into tmp */
	if (!q->active)
		free(q->tmp);
	free(q);
}

static int mreq_done_ok(struct mreq *q, MPI_Status *st)
{
	q->active = 0;
	if (q->kind == MP2P_RECV) {
		int n = 0;
		MPI_Get_count(st, MPI_BYTE, &n);
		if ((size_t)n != q->expect) {
			LOOM_ERR("comm %s: recv from rank %d: expected %zu bytes, the message had %d",
				 q->c->name, q->peer, q->expect, n);
			return LOOM_ERR_MISMATCH;
		}
	}
	if (q->avg_buf)
		loom_avg_finish(q->avg_buf, q->avg_n, q->dt, q->c->size);
	return LOOM_SUCCESS;
}

static const char *kind_name(int kind)
{
	return kind == MP2P_SEND ? "send" : kind == MP2P_RECV ? "recv" : loom_opdesc_name(kind);
}

/* A collective that cannot complete any more: the communicator fails. */
static void fail_comm(struct loom_comm *c, int st)
{
	int zero = 0;
	atomic_compare_exchange_strong(&c->failed, &zero, st);
}

/* Give up on a request that has not completed (timeout, abort). Point to
 * point can be taken back; a collective cannot (MPI forbids cancelling
 * or freeing it): it is abandoned, and so is its temporary buffer. */
static int mreq_give_up(struct mreq *q, int st)
{
	struct loom_comm *c = q->c;
	if (q->kind == MP2P_RECV) {
		MPI_Status s;
		int cancelled = 0;
		LK();
		MPI_Cancel(&q->r);
		MPI_Wait(&q->r, &s);
		MPI_Test_cancelled(&s, &cancelled);
		UL();
		q->active = 0;
		if (!cancelled)  /* it arrived after all */
			return mreq_done_ok(q, &s);
	} else if (q->kind == MP2P_SEND) {
		LK();
		MPI_Request_free(&q->r);  /* delivered in the background, if ever */
		UL();
		q->active = 0;
	} else {
		fail_comm(c, st);
	}
	return st;
}

/* Poll q; block: until it is finished. *done = 1 when finished (its
 * status is returned). */
static int mreq_progress(struct mreq *q, int block, int *done)
{
	struct loom_comm *c = q->c;
	unsigned spins = 0;
	*done = 1;
	for (;;) {
		MPI_Status st;
		int flag = 0, rc, f;
		double now;
		if (q->active) {
			LK();
			rc = MPI_Test(&q->r, &flag, &st);
			UL();
			if (rc != MPI_SUCCESS) {
				q->active = 0;  /* an erroneous request is complete */
				rc = loom_mpi_status(c, kind_name(q->kind), rc);
				if (q->kind != MP2P_SEND && q->kind != MP2P_RECV)
					fail_comm(c, rc);
				return rc;
			}
		} else {
			flag = 1;
			memset(&st, 0, sizeof st);
		}
		if (flag)
			return mreq_done_ok(q, &st);
		if ((spins & 63) == 0)
			check_abort(c);
		if ((f = atomic_load(&c->failed)))
			return mreq_give_up(q, f);
		now = loom_now();
		if (now >= q->deadline) {
			if (q->kind == MP2P_SEND || q->kind == MP2P_RECV)
				LOOM_ERR("timeout: comm %s op %s after %.1f s: rank %d never %s",
					 c->name, kind_name(q->kind), now - q->started, q->peer,
					 q->kind == MP2P_SEND ? "received it" : "sent it");
			else
				LOOM_ERR("timeout: comm %s op %s seq %llu after %.1f s (mpi backend: MPI does not "
					 "tell which ranks never arrived); the communicator fails from now on",
					 c->name, kind_name(q->kind), q->seq, now - q->started);
			loom_flight_log_verdict();
			return mreq_give_up(q, LOOM_ERR_TIMEOUT);
		}
		if (!block) {
			*done = 0;
			return LOOM_SUCCESS;
		}
		idle(++spins);
	}
}

static int mreq_wait(struct mreq *q)
{
	int done, rc = mreq_progress(q, 1, &done);
	mreq_free(q);
	return rc;
}

int loom_mpi_wait(void *impl)
{
	return mreq_wait(impl);
}

int loom_mpi_test(void *impl, int *done)
{
	int rc = mreq_progress(impl, 0, done);
	if (*done)
		mreq_free(impl);
	return rc;
}

static struct mreq *mreq_new(struct loom_comm *c, int kind)
{
	struct mreq *q = calloc(1, sizeof *q);
	if (!q)
		return NULL;
	q->c = c;
	q->kind = kind;
	q->r = MPI_REQUEST_NULL;
	q->started = loom_now();
	q->deadline = q->started + c->timeout;
	return q;
}

static int too_big(const struct loom_comm *c, size_t count)
{
	if (count <= INT_MAX)
		return 0;
	LOOM_ERR("mpi backend: comm %s: count %zu is above MPI's int counts (%d)", c->name, count,
		 INT_MAX);
	return 1;
}

/* Start a collective (validated) */
static int start_coll(struct loom_comm *c, const struct loom_opdesc *d, struct mreq **out)
{
	struct mcomm *m = c->impl;
	struct mreq *q;
	MPI_Datatype t;
	MPI_Op op;
	size_t es;
	int n, rc = MPI_SUCCESS, f;
	*out = NULL;
	check_abort(c);
	if ((f = atomic_load(&c->failed)))
		return f;
	if (d->kind != LOOM_OP_BARRIER && too_big(c, d->count))
		return LOOM_ERR_UNSUPPORTED;
	if (!(q = mreq_new(c, d->kind)))
		return LOOM_ERR_NOMEM;
	q->seq = ++m->seq;
	*out = q;
	if (d->kind != LOOM_OP_BARRIER && d->count == 0)
		return LOOM_SUCCESS;  /* completes at the first test */
	t = loom_mpi_type(d->dt);
	op = loom_mpi_op(d->dt, d->op);
	es = loom_dtype_size(d->dt);
	n = (int)d->count;
	q->dt = d->dt;
	q->active = 1;
	switch (d->kind) {
	case LOOM_OP_ALLREDUCE:
		LK();
		rc = MPI_Iallreduce(d->s == d->r ? MPI_IN_PLACE : d->s, d->r, n, t, op, m->comm, &q->r);
		UL();
		if (d->op == LOOM_AVG)
			q->avg_buf = d->r, q->avg_n = d->count;
		break;
	case LOOM_OP_BCAST:
		if (c->rank == d->root && d->s != d->r)
			memmove(d->r, d->s, d->count * es);
		LK();
		rc = MPI_Ibcast(d->r, n, t, d->root, m->comm, &q->r);
		UL();
		break;
	case LOOM_OP_REDUCE: {
		const void *sb = c->rank == d->root && d->s == d->r ? MPI_IN_PLACE : d->s;
		LK();
		rc = MPI_Ireduce(sb, d->r, n, t, op, d->root, m->comm, &q->r);
		UL();
		if (d->op == LOOM_AVG && c->rank == d->root)
			q->avg_buf = d->r, q->avg_n = d->count;
		break;
	}
	case LOOM_OP_ALLGATHER: {
		const void *sb = d->s == (const char *)d->r + (size_t)c->rank * d->count * es ?
				 MPI_IN_PLACE : d->s;
		LK();
		rc = MPI_Iallgather(sb, n, t, d->r, n, t, m->comm, &q->r);
		UL();
		break;
	}
	case LOOM_OP_REDUCE_SCATTER:
		LK();
		rc = MPI_Ireduce_scatter_block(d->s == d->r ? MPI_IN_PLACE : d->s, d->r, n, t, op,
					       m->comm, &q->r);
		UL();
		if (d->op == LOOM_AVG)
			q->avg_buf = d->r, q->avg_n = d->count;
		break;
	case LOOM_OP_ALLTOALL: {
		const void *sb = d->s;
		if (d->s == d->r) {
			size_t bytes = (size_t)c->size * d->count * es;
			if (!(q->tmp = malloc(bytes))) {
				q->active = 0;
				mreq_free(q);
				*out = NULL;
				return LOOM_ERR_NOMEM;
			}
			memcpy(q->tmp, d->s, bytes);
			sb = q->tmp;
		}
		LK();
		rc = MPI_Ialltoall(sb, n, t, d->r, n, t, m->comm, &q->r);
		UL();
		break;
	}
	case LOOM_OP_BARRIER:
		LK();
		rc = MPI_Ibarrier(m->comm, &q->r);
		UL();
		break;
	default:
		rc = MPI_ERR_OP;
	}
	if (rc != MPI_SUCCESS) {
		q->active = 0;
		mreq_free(q);
		*out = NULL;
		return loom_mpi_status(c, loom_opdesc_name(d->kind), rc);
	}
	return LOOM_SUCCESS;
}

/* a started request: handed to the caller (counted for background
 * progress), or waited for here when req is NULL */
static int finish_start(struct loom_comm *c, struct mreq *q, loom_request_t **req)
{
	if (!req)
		return mreq_wait(q);
	if (q->active)
		nb_count(q, 1);
	if (!(*req = loom_req_wrap(c, q))) {
		mreq_wait(q);
		return LOOM_ERR_NOMEM;
	}
	return LOOM_SUCCESS;
}

int loom_mpi_coll(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req)
{
	struct mreq *q;
	int rc = start_coll(c, d, &q);
	return rc ? rc : finish_start(c, q, req);
}

static int start_p2p(struct loom_comm *c, int is_send, void *buf, size_t count, loom_dtype_t dt,
		     int peer, struct mreq **out)
{
	struct mcomm *m = c->impl;
	struct mreq *q;
	int rc, f, bytes;
	*out = NULL;
	if (too_big(c, count * loom_dtype_size(dt)))
		return LOOM_ERR_UNSUPPORTED;
	check_abort(c);
	if ((f = atomic_load(&c->failed)))
		return f;
	if (!(q = mreq_new(c, is_send ? MP2P_SEND : MP2P_RECV)))
		return LOOM_ERR_NOMEM;
	bytes = (int)(count * loom_dtype_size(dt));
	q->peer = peer;
	q->expect = (size_t)bytes;
	q->active = 1;
	/* bytes on the wire: a size mismatch shows as MPI_ERR_TRUNCATE or a
	 * short count, both LOOM_ERR_MISMATCH */
	LK();
	if (is_send)
		rc = MPI_Isend(buf, bytes, MPI_BYTE, peer, TAG_P2P, m->comm, &q->r);
	else
		rc = MPI_Irecv(buf, bytes, MPI_BYTE, peer, TAG_P2P, m->comm, &q->r);
	UL();
	if (rc != MPI_SUCCESS) {
		q->active = 0;
		mreq_free(q);
		return loom_mpi_status(c, is_send ? "send" : "recv", rc);
	}
	*out = q;
	return LOOM_SUCCESS;
}

int loom_mpi_p2p(struct loom_comm *c, int is_send, void *buf, size_t count, loom_dtype_t dt,
		 int peer, loom_request_t **req)
{
	struct mreq *q;
	int rc = start_p2p(c, is_send, buf, count, dt, peer, &q);
	return rc ? rc : finish_start(c, q, req);
}
