/* runtime/core/op.c: how the native backend runs one collective: one
 * operation at a time per communicator, in the order every rank posted
 * them (blocking ones after the non-blocking ones already queued),
 * LOOM_CHECK, 16-bit floats reduced in fp32, AVG; and the queue of
 * non-blocking ones, run by one background thread per communicator so
 * they progress while the caller computes. */
#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *loom_opdesc_name(int kind)
{
	static const char *n[] = { "?", "allreduce", "broadcast", "reduce", "allgather",
				   "reduce_scatter", "alltoall", "barrier" };
	return kind >= 1 && kind <= LOOM_OP_BARRIER ? n[kind] : "?";
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
	/* the whole buffer (count x size x ranks) below half the address
	 * space; a product, not two divisions: a small call's cost */
	es = loom_dtype_size(d->dt) * (size_t)c->size;
	if (__builtin_mul_overflow(d->count, es, &es) || es > (size_t)-1 / 2)
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
	o.started = d->called > 0 ? d->called : loom_now_coarse();
	o.deadline = o.started + c->timeout;
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
			rc = loom_coll_bcast_from(c, c->rank == d->root ? d->s : NULL, d->r, n * es,
						  d->root, &o);
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

struct loom_nbq {
	pthread_mutex_t m;
	pthread_cond_t cv, idle;
	loom_request_t *head, *tail;
	int busy, stop;
	pthread_t thr;
};

/* the head taken off the queue, which stays busy until nbq_run ends
 * (nq->m held) */
static loom_request_t *nbq_pop(struct loom_nbq *nq)
{
	loom_request_t *q = nq->head;
	nq->head = loom_req_next(q);
	if (!nq->head)
		nq->tail = NULL;
	nq->busy = 1;
	return q;
}

/* q run (LOOM_ERR_ABORTED once the queue stops) and finished; returns
 * with nq->m held and the queue no longer busy */
static void nbq_run(struct loom_comm *c, loom_request_t *q)
{
	struct loom_nbq *nq = c->nbq;
	int rc = LOOM_ERR_ABORTED;
	if (!nq->stop) {
		pthread_mutex_lock(&c->exec);
		rc = loom_op_run(c, loom_req_desc(q));
		pthread_mutex_unlock(&c->exec);
	}
	loom_req_finish(q, rc);
	pthread_mutex_lock(&nq->m);
	nq->busy = 0;
	pthread_cond_broadcast(&nq->idle);
	pthread_cond_signal(&nq->cv);  /* the queue's thread: what follows */
}

static void *worker(void *arg)
{
	struct loom_comm *c = arg;
	struct loom_nbq *nq = c->nbq;
	pthread_mutex_lock(&nq->m);
	for (;;) {
		loom_request_t *q;
		/* busy: a waiter runs the head (nbq_take); what follows it
		 * waits for that to end */
		while ((!nq->head || nq->busy) && !nq->stop)
			pthread_cond_wait(&nq->cv, &nq->m);
		if (!nq->head)
			break;
		q = nbq_pop(nq);
		pthread_mutex_unlock(&nq->m);
		nbq_run(c, q);
	}
	pthread_mutex_unlock(&nq->m);
	return NULL;
}

/* loom_wait on q, not yet started and next in line: the waiting thread
 * runs it itself, as a blocking call would, rather than wake the queue's
 * thread and sleep until that thread is done: two thread hand-offs a
 * call fewer, each of which can wait a scheduler slice where ranks
 * outnumber cores. Order is kept: q is the head, and the queue's thread
 * takes nothing while busy. */
static int nbq_take(struct loom_comm *c, loom_request_t *q)
{
	struct loom_nbq *nq = c->nbq;
	pthread_mutex_lock(&nq->m);
	if (nq->head != q || nq->busy || nq->stop) {
		pthread_mutex_unlock(&nq->m);
		return 0;
	}
	nbq_pop(nq);
	pthread_mutex_unlock(&nq->m);
	nbq_run(c, q);
	pthread_mutex_unlock(&nq->m);
	return 1;
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

int loom_nbq_post(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req)
{
	loom_request_t *q;
	struct loom_nbq *nq;
	int rc;
	if ((rc = nbq_get(c, &nq)))
		return rc;
	if (!(q = loom_req_coll(c, d)))
		return LOOM_ERR_NOMEM;
	loom_req_set_take(q, nbq_take);
	pthread_mutex_lock(&nq->m);
	if (nq->tail)
		loom_req_set_next(nq->tail, q);
	else
		nq->head = q;
	nq->tail = q;
	pthread_cond_signal(&nq->cv);
	pthread_mutex_unlock(&nq->m);
	*req = q;
	return LOOM_SUCCESS;
}

/* The native backend's collective entry: queued when req is given, else
 * run now, after what is queued. */
int loom_native_coll(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req)
{
	int rc;
	if (req)
		return loom_nbq_post(c, d, req);
	loom_nbq_drain(c);
	pthread_mutex_lock(&c->exec);
	rc = loom_op_run(c, d);
	pthread_mutex_unlock(&c->exec);
	return rc;
}

/* A native communicator and its queue thread. */
void loom_native_destroy(struct loom_comm *c)
{
	loom_nbq_stop(c);
	loom_comm_destroy(c);
}
