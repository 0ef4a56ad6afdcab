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
#include "backend/backend.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TAG_P2P = 1, TAG_ABORT = 2 };
enum { MP2P_SEND = 100, MP2P_RECV };

/* ---- process-wide state ---- */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;  /* guards the fields below */
static int g_users;        /* live worlds, own and adopted */
static int g_we_inited;    /* MPI_Init_thread was ours: MPI_Finalize is ours too */

/* With less than MPI_THREAD_MULTIPLE every MPI call of the backend holds
 * this lock (a request may be polled by a progress caller while another
 * thread starts an operation). */
static pthread_mutex_t g_call = PTHREAD_MUTEX_INITIALIZER;
static int g_lock;
#define LK() do { if (g_lock) pthread_mutex_lock(&g_call); } while (0)
#define UL() do { if (g_lock) pthread_mutex_unlock(&g_call); } while (0)

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

struct mcomm {
	MPI_Comm comm;         /* collectives, point to point */
	MPI_Comm ctl;          /* abort notices */
	MPI_Request abort_rq;  /* posted receive of an abort notice */
	int abort_msg;
	unsigned long long seq, nsplit;
	int own_world;         /* world created by loom_init (w is ours) */
};

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

/* g_mu held */
static void progress_start(int provided)
{
	if (g_thr_on || !(g_we_inited || provided >= MPI_THREAD_MULTIPLE))
		return;
	if (MPI_Comm_dup(MPI_COMM_SELF, &g_pcomm) != MPI_SUCCESS)
		return;
	g_stop = 0;
	if (pthread_create(&g_thr, NULL, progress_thread, NULL) == 0)
		g_thr_on = 1;
	else
		MPI_Comm_free(&g_pcomm);
}

/* g_mu held */
static void progress_stop(void)
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

static int bx_wait(void *impl)
{
	return mreq_wait(impl);
}

static int bx_test(void *impl, int *done)
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

static int mpi_coll(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req)
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

static int mpi_p2p(struct loom_comm *c, int is_send, void *buf, size_t count, loom_dtype_t dt,
		   int peer, loom_request_t **req)
{
	struct mreq *q;
	int rc = start_p2p(c, is_send, buf, count, dt, peer, &q);
	return rc ? rc : finish_start(c, q, req);
}

/* ---- communicators ---- */
struct ident {
	int32_t color, key;
	char node[64];
};

/* Fill c's node fields from every member's node name (allgathered) */
static void node_fields(struct loom_comm *c, const struct ident *all)
{
	int i, j;
	c->local_rank = c->local_size = c->nnodes = 0;
	for (i = 0; i < c->size; i++) {
		if (!strcmp(all[i].node, all[c->rank].node)) {
			if (i == c->rank)
				c->local_rank = c->local_size;
			c->local_size++;
		}
		for (j = 0; j < i; j++)
			if (!strcmp(all[j].node, all[i].node))
				break;
		if (j == i)
			c->nnodes++;
	}
}

/* Wrap mc (ours from now on) into a loom communicator of world w */
static int wrap(MPI_Comm mc, struct loom_world *w, const char *name, double timeout,
		struct loom_comm **out)
{
	struct loom_comm *c = calloc(1, sizeof *c);
	struct mcomm *m = calloc(1, sizeof *m);
	struct ident *all = NULL, me;
	int rc;
	*out = NULL;
	if (!c || !m) {
		free(c);
		free(m);
		LK();
		MPI_Comm_free(&mc);
		UL();
		return LOOM_ERR_NOMEM;
	}
	m->comm = mc;
	m->ctl = MPI_COMM_NULL;
	m->abort_rq = MPI_REQUEST_NULL;
	c->w = w;
	c->be = &loom_mpi_backend;
	c->impl = m;
	c->timeout = timeout;
	c->check = 0;
	snprintf(c->name, sizeof c->name, "%s", name);
	LK();
	rc = MPI_Comm_set_errhandler(mc, MPI_ERRORS_RETURN);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_rank(mc, &c->rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_size(mc, &c->size);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_dup(mc, &m->ctl);
	UL();
	if (rc == MPI_SUCCESS && !(all = calloc((size_t)c->size, sizeof *all)))
		rc = MPI_ERR_NO_MEM;
	if (rc == MPI_SUCCESS) {
		memset(&me, 0, sizeof me);
		loom_node_identity(me.node);
		LK();
		rc = MPI_Allgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, m->ctl);
		if (rc == MPI_SUCCESS)
			rc = MPI_Irecv(&m->abort_msg, 1, MPI_INT, MPI_ANY_SOURCE, TAG_ABORT, m->ctl,
				       &m->abort_rq);
		UL();
	}
	if (rc != MPI_SUCCESS) {
		rc = loom_mpi_status(c, "creating the communicator", rc);
		free(all);
		LK();
		if (m->ctl != MPI_COMM_NULL)
			MPI_Comm_free(&m->ctl);
		MPI_Comm_free(&m->comm);
		UL();
		free(m);
		free(c);
		return rc;
	}
	node_fields(c, all);
	free(all);
	pthread_mutex_lock(&w->comms_lock);
	c->next = w->comms;
	w->comms = c;
	pthread_mutex_unlock(&w->comms_lock);
	LOOM_TRACE("comm %s (mpi): rank %d of %d, %d local, %d nodes", c->name, c->rank, c->size,
		   c->local_size, c->nnodes);
	*out = c;
	return LOOM_SUCCESS;
}

static void destroy(struct loom_comm *c)
{
	struct mcomm *m = c->impl;
	struct loom_world *w = c->w;
	struct loom_comm **pp;
	pthread_mutex_lock(&w->comms_lock);
	for (pp = &w->comms; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&w->comms_lock);
	LK();
	if (m->abort_rq != MPI_REQUEST_NULL) {
		MPI_Cancel(&m->abort_rq);
		MPI_Wait(&m->abort_rq, MPI_STATUS_IGNORE);
	}
	MPI_Comm_free(&m->ctl);
	MPI_Comm_free(&m->comm);
	UL();
	free(m);
	free(c);
}

static int bx_split_named(struct loom_comm *c, int color, int key, struct loom_comm **out,
			  const char *what)
{
	struct mcomm *m;
	struct ident me, *all;
	struct mreq *q;
	MPI_Comm nc = MPI_COMM_NULL;
	char name[80];
	int rc, f;
	if (!c || !out)
		return LOOM_ERR_INVALID;
	*out = NULL;
	if (color < 0 && color != LOOM_UNDEFINED)
		return LOOM_ERR_INVALID;
	m = c->impl;
	check_abort(c);
	if ((f = atomic_load(&c->failed)))
		return f;
	if (!(all = calloc((size_t)c->size, sizeof *all)) || !(q = mreq_new(c, LOOM_OP_ALLGATHER))) {
		free(all);
		return LOOM_ERR_NOMEM;
	}
	/* every member arrives (within the deadline) before the blocking
	 * MPI_Comm_split, which then cannot wait for ever */
	memset(&me, 0, sizeof me);
	me.color = color;
	me.key = key;
	q->seq = ++m->seq;
	q->active = 1;
	LK();
	rc = MPI_Iallgather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, m->comm,
			    &q->r);
	UL();
	if (rc != MPI_SUCCESS) {
		q->active = 0;
		mreq_free(q);
		free(all);
		return loom_mpi_status(c, what, rc);
	}
	rc = mreq_wait(q);
	free(all);
	if (rc)
		return rc;
	m->nsplit++;
	LK();
	rc = MPI_Comm_split(m->comm, color == LOOM_UNDEFINED ? MPI_UNDEFINED : color, key, &nc);
	UL();
	if (rc != MPI_SUCCESS)
		return loom_mpi_status(c, what, rc);
	if (nc == MPI_COMM_NULL)
		return LOOM_SUCCESS;
	snprintf(name, sizeof name, "%s%llu", what, m->nsplit);
	return wrap(nc, c->w, name, c->timeout, out);
}

static int bx_split(struct loom_comm *c, int color, int key, struct loom_comm **out)
{
	return bx_split_named(c, color, key, out, "split");
}

static int bx_dup(struct loom_comm *c, struct loom_comm **out)
{
	return bx_split_named(c, 0, c->rank, out, "dup");
}

static int bx_free(struct loom_comm *c)
{
	destroy(c);
	return LOOM_SUCCESS;
}

static int bx_abort(struct loom_comm *c)
{
	struct mcomm *m = c->impl;
	int i, zero = 0;
	atomic_compare_exchange_strong(&c->failed, &zero, LOOM_ERR_ABORTED);
	LOOM_ERR("communicator %s aborted by this rank", c->name);
	for (i = 0; i < c->size; i++) {
		MPI_Request r;
		static const int note = 1;
		if (i == c->rank)
			continue;
		LK();
		if (MPI_Isend(&note, 1, MPI_INT, i, TAG_ABORT, m->ctl, &r) == MPI_SUCCESS)
			MPI_Request_free(&r);
		UL();
	}
	return LOOM_SUCCESS;
}

/* ---- worlds ---- */
static struct loom_world *world_new(const char *how)
{
	struct loom_world *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	pthread_mutex_init(&w->comms_lock, NULL);
	w->how = how;
	w->transport = LOOM_TR_AUTO;
	w->timeout = loom_env_double("LOOM_TIMEOUT", 600);
	if (!(w->timeout > 0)) {
		LOOM_WARN("LOOM_TIMEOUT must be positive; using 600");
		w->timeout = 600;
	}
	return w;
}

/* One more world; MPI must be initialized. */
static int world_from(MPI_Comm parent, const char *how, struct loom_comm **out)
{
	struct loom_world *w;
	MPI_Comm mc;
	int rc, provided = MPI_THREAD_SINGLE;
	*out = NULL;
	if (!(w = world_new(how)))
		return LOOM_ERR_NOMEM;
	pthread_mutex_lock(&g_mu);
	MPI_Query_thread(&provided);
	g_lock = provided < MPI_THREAD_MULTIPLE;
	rc = loom_mpi_ops_create();
	if (rc == MPI_SUCCESS)
		progress_start(provided);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_dup(parent, &mc);
	if (rc == MPI_SUCCESS)
		g_users++;
	pthread_mutex_unlock(&g_mu);
	if (rc != MPI_SUCCESS) {
		pthread_mutex_destroy(&w->comms_lock);
		free(w);
		return loom_mpi_status(NULL, "MPI_Comm_dup", rc);
	}
	rc = wrap(mc, w, "world", w->timeout, out);
	if (rc) {
		pthread_mutex_lock(&g_mu);
		g_users--;
		pthread_mutex_unlock(&g_mu);
		pthread_mutex_destroy(&w->comms_lock);
		free(w);
		return rc;
	}
	(*out)->is_world = 1;
	w->rank = (*out)->rank;
	w->size = (*out)->size;
	w->nnodes = (*out)->nnodes;
	{
		char node[64];
		loom_node_identity(node);
		loom_log_identity(w->rank, w->size, node);
	}
	if (getenv("LOOM_CHECK") && *getenv("LOOM_CHECK") && strcmp(getenv("LOOM_CHECK"), "0"))
		LOOM_WARN("LOOM_CHECK is not implemented by the mpi backend: calls are not compared");
	LOOM_INFO("world of %d ranks on %d node(s), backend mpi (%s), MPI thread level %d, timeout %g s",
		  w->size, w->nnodes, how, provided, w->timeout);
	return LOOM_SUCCESS;
}

static int mpi_world(loom_comm_t **world)
{
	int inited = 0, finalized = 0, provided, rc;
	MPI_Finalized(&finalized);
	if (finalized) {
		LOOM_ERR("LOOM_BACKEND=mpi: MPI has already been finalized in this process");
		return LOOM_ERR_UNSUPPORTED;
	}
	pthread_mutex_lock(&g_mu);
	MPI_Initialized(&inited);
	if (!inited) {
		/* loom serializes its own calls; the program does not use MPI */
		rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
		if (rc != MPI_SUCCESS) {
			pthread_mutex_unlock(&g_mu);
			LOOM_ERR("LOOM_BACKEND=mpi: MPI_Init_thread failed (%d)", rc);
			return LOOM_ERR_BOOTSTRAP;
		}
		g_we_inited = 1;
	}
	pthread_mutex_unlock(&g_mu);
	rc = world_from(MPI_COMM_WORLD, g_we_inited ? "MPI initialized by loom" :
				       "MPI initialized by the program", world);
	if (rc && g_we_inited) {
		pthread_mutex_lock(&g_mu);
		if (!g_users) {
			progress_stop();
			loom_mpi_ops_free();
			MPI_Finalize();
			g_we_inited = 0;
		}
		pthread_mutex_unlock(&g_mu);
	}
	if (!rc)
		((struct mcomm *)(*world)->impl)->own_world = 1;
	return rc;
}

int loom_comm_from_mpi(MPI_Comm mpi_comm, loom_comm_t **comm)
{
	int inited = 0, finalized = 0;
	loom_log_init();
	if (!comm)
		return LOOM_ERR_INVALID;
	*comm = NULL;
	MPI_Initialized(&inited);
	MPI_Finalized(&finalized);
	if (!inited || finalized) {
		LOOM_ERR("loom_comm_from_mpi: MPI is not initialized");
		return LOOM_ERR_INVALID;
	}
	if (mpi_comm == MPI_COMM_NULL)
		return LOOM_ERR_INVALID;
	return world_from(mpi_comm, "adopted MPI communicator", comm);
}

static int bx_finalize(struct loom_comm *world)
{
	struct loom_world *w = world->w;
	/* no closing barrier: MPI_Finalize synchronizes, and a barrier after a
	 * timed-out collective would be matched against it */
	for (;;) {
		struct loom_comm *c;
		pthread_mutex_lock(&w->comms_lock);
		for (c = w->comms; c && c == world; c = c->next)
			;
		pthread_mutex_unlock(&w->comms_lock);
		if (!c)
			break;
		destroy(c);
	}
	destroy(world);
	pthread_mutex_destroy(&w->comms_lock);
	free(w);
	pthread_mutex_lock(&g_mu);
	if (--g_users == 0) {
		progress_stop();
		loom_mpi_ops_free();
		if (g_we_inited) {
			MPI_Finalize();
			g_we_inited = 0;
		}
	}
	pthread_mutex_unlock(&g_mu);
	return LOOM_SUCCESS;
}

const struct loom_backend loom_mpi_backend = {
	.name = "mpi",
	.world = mpi_world,
	.coll = mpi_coll,
	.p2p = mpi_p2p,
	.wait = bx_wait,
	.test = bx_test,
	.split = bx_split,
	.dup = bx_dup,
	.free = bx_free,
	.abort = bx_abort,
	.finalize = bx_finalize,
};
