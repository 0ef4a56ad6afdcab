/* runtime/backend/backend_mpi_comm.c: the MPI backend's communicators
 * (a loom communicator wraps a duplicate of an MPI communicator and a
 * second duplicate for abort notices) and worlds (MPI initialized by loom
 * or by the program, or an adopted communicator), and their finalize. */
#include "backend/backend_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- communicators ---- */
struct ident {
	int32_t color, key;
	int32_t wrank;          /* for wrank[], which the flight records name */
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
		/* the world itself is wrapped before w->size is known */
		me.wrank = w->size ? w->rank : c->rank;
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
	{
		int *wr = malloc((size_t)c->size * sizeof *wr);
		if (wr) {
			for (int i = 0; i < c->size; i++)
				wr[i] = all[i].wrank;
			loom_rankmap_set(&c->wr, c->size, wr);
			free(wr);
		}
	}
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
	loom_rankmap_free(&c->wr);
	free(c);
}

static int split_named(struct loom_comm *c, int color, int key, struct loom_comm **out,
			  const char *what)
{
	struct mcomm *m = c->impl;
	struct ident me, *all;
	MPI_Comm nc = MPI_COMM_NULL;
	char name[80];
	int rc;
	*out = NULL;
	if (!(all = calloc((size_t)c->size, sizeof *all)))
		return LOOM_ERR_NOMEM;
	/* every member arrives (within the deadline) before the blocking
	 * MPI_Comm_split, which then cannot wait for ever */
	memset(&me, 0, sizeof me);
	me.color = color;
	me.key = key;
	struct loom_opdesc d = { LOOM_OP_ALLGATHER, &me, all, sizeof me, LOOM_INT8, LOOM_SUM, 0, 0 };
	rc = loom_mpi_coll(c, &d, NULL);
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

int loom_mpi_split(struct loom_comm *c, int color, int key, struct loom_comm **out)
{
	return split_named(c, color, key, out, "split");
}

int loom_mpi_dup(struct loom_comm *c, struct loom_comm **out)
{
	return split_named(c, 0, c->rank, out, "dup");
}

int loom_mpi_free(struct loom_comm *c)
{
	destroy(c);
	return LOOM_SUCCESS;
}

int loom_mpi_abort(struct loom_comm *c)
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
	pthread_mutex_lock(&loom_mpi_mu);
	MPI_Query_thread(&provided);
	loom_mpi_lock = provided < MPI_THREAD_MULTIPLE;
	rc = loom_mpi_ops_create();
	if (rc == MPI_SUCCESS)
		loom_mpi_progress_start(provided);
	if (rc == MPI_SUCCESS)
		rc = MPI_Comm_dup(parent, &mc);
	if (rc == MPI_SUCCESS)
		loom_mpi_users++;
	pthread_mutex_unlock(&loom_mpi_mu);
	if (rc != MPI_SUCCESS) {
		pthread_mutex_destroy(&w->comms_lock);
		free(w);
		return loom_mpi_status(NULL, "MPI_Comm_dup", rc);
	}
	rc = wrap(mc, w, "world", w->timeout, out);
	if (rc) {
		pthread_mutex_lock(&loom_mpi_mu);
		loom_mpi_users--;
		pthread_mutex_unlock(&loom_mpi_mu);
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

int loom_mpi_world(loom_comm_t **world)
{
	int inited = 0, finalized = 0, provided, rc;
	MPI_Finalized(&finalized);
	if (finalized) {
		LOOM_ERR("LOOM_BACKEND=mpi: MPI has already been finalized in this process");
		return LOOM_ERR_UNSUPPORTED;
	}
	pthread_mutex_lock(&loom_mpi_mu);
	MPI_Initialized(&inited);
	if (!inited) {
		/* loom serializes its own calls; the program does not use MPI */
		rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
		if (rc != MPI_SUCCESS) {
			pthread_mutex_unlock(&loom_mpi_mu);
			LOOM_ERR("LOOM_BACKEND=mpi: MPI_Init_thread failed (%d)", rc);
			return LOOM_ERR_BOOTSTRAP;
		}
		loom_mpi_we_inited = 1;
	}
	pthread_mutex_unlock(&loom_mpi_mu);
	rc = world_from(MPI_COMM_WORLD, loom_mpi_we_inited ? "MPI initialized by loom" :
				       "MPI initialized by the program", world);
	if (rc && loom_mpi_we_inited) {
		pthread_mutex_lock(&loom_mpi_mu);
		if (!loom_mpi_users) {
			loom_mpi_progress_stop();
			loom_mpi_ops_free();
			MPI_Finalize();
			loom_mpi_we_inited = 0;
		}
		pthread_mutex_unlock(&loom_mpi_mu);
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

int loom_mpi_finalize(struct loom_comm *world)
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
	pthread_mutex_lock(&loom_mpi_mu);
	if (--loom_mpi_users == 0) {
		loom_mpi_progress_stop();
		loom_mpi_ops_free();
		if (loom_mpi_we_inited) {
			MPI_Finalize();
			loom_mpi_we_inited = 0;
		}
	}
	pthread_mutex_unlock(&loom_mpi_mu);
	return LOOM_SUCCESS;
}

/* the backend: the operations of backend_mpi.c on the communicators
 * made here */
const struct loom_backend loom_mpi_backend = {
	.name = "mpi",
	.world = loom_mpi_world,
	.coll = loom_mpi_coll,
	.p2p = loom_mpi_p2p,
	.wait = loom_mpi_wait,
	.test = loom_mpi_test,
	.split = loom_mpi_split,
	.dup = loom_mpi_dup,
	.free = loom_mpi_free,
	.abort = loom_mpi_abort,
	.finalize = loom_mpi_finalize,
};
