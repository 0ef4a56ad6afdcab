/* runtime/comm.c: communicators: creation from a list of world ranks,
 * split/dup (collective), free, abort, names, timeouts, and the internal
 * node / leader sub-communicators of hierarchical collectives. */
#include "loom_internal.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct loom_comm *loom_comm_find(struct loom_world *w, uint64_t ctx)
{
	struct loom_comm *c;
	for (c = w->comms; c; c = c->next)
		if (c->ctx == ctx)
			return c;
	return NULL;
}

int loom_comm_uses_shm(const struct loom_comm *c, int peer)
{
	return c->shm && peer != c->rank && c->local_idx[peer] >= 0;
}

int loom_comm_max_local(const struct loom_comm *c)
{
	return c->max_local;
}

static int count_max_local(const struct loom_comm *c)
{
	int *cnt = calloc((size_t)c->nnodes + 1, sizeof *cnt), i, m = 0;
	if (!cnt)
		return c->local_size;
	for (i = 0; i < c->size; i++)
		if (++cnt[c->node_pos[i]] > m)
			m = cnt[c->node_pos[i]];
	free(cnt);
	return m;
}

struct loom_comm *loom_comm_create(struct loom_world *w, uint64_t ctx, int n, const int *wranks,
				   int myrank, const char *name)
{
	struct loom_comm *c = calloc(1, sizeof *c);
	int i, j, mynode;
	if (!c)
		return NULL;
	c->w = w;
	c->be = &loom_native_backend;
	c->ctx = ctx;
	c->size = n;
	c->rank = myrank;
	c->timeout = w->timeout;
	c->check = w->check;
	snprintf(c->name, sizeof c->name, "%s", name);
	c->wrank = malloc((size_t)n * sizeof *c->wrank);
	c->local_idx = malloc((size_t)n * sizeof *c->local_idx);
	c->local_members = malloc((size_t)n * sizeof *c->local_members);
	c->node_pos = malloc((size_t)n * sizeof *c->node_pos);
	c->leaders = malloc((size_t)n * sizeof *c->leaders);
	c->p2p_sent = calloc((size_t)n, sizeof *c->p2p_sent);
	c->p2p_rcvd = calloc((size_t)n, sizeof *c->p2p_rcvd);
	c->status_rep = calloc((size_t)n, sizeof *c->status_rep);
	if (!c->wrank || !c->local_idx || !c->local_members || !c->node_pos || !c->leaders ||
	    !c->p2p_sent || !c->p2p_rcvd || !c->status_rep) {
		loom_comm_destroy(c);
		return NULL;
	}
	memcpy(c->wrank, wranks, (size_t)n * sizeof *wranks);
	mynode = w->node_of[wranks[myrank]];
	for (i = 0; i < n; i++) {
		int nd = w->node_of[wranks[i]];
		c->local_idx[i] = -1;
		if (nd == mynode) {
			if (i == myrank)
				c->local_rank = c->local_size;
			c->local_idx[i] = c->local_size;
			c->local_members[c->local_size++] = i;
		}
		for (j = 0; j < i; j++)
			if (w->node_of[wranks[j]] == nd)
				break;
		if (j < i) {
			c->node_pos[i] = c->node_pos[j];
		} else {
			c->node_pos[i] = c->nnodes;
			c->leaders[c->nnodes++] = i;
		}
	}
	c->max_local = count_max_local(c);
	pthread_mutex_init(&c->exec, NULL);
	pthread_mutex_init(&c->p2p_lock, NULL);
	if (c->local_size > 1 && w->transport != LOOM_TR_TCP) {
		if (loom_shm_attach(c) != LOOM_SUCCESS) {
			loom_comm_destroy(c);
			return NULL;
		}
	}
	pthread_mutex_lock(&w->comms_lock);
	c->next = w->comms;
	w->comms = c;
	pthread_mutex_unlock(&w->comms_lock);
	LOOM_TRACE("comm %s: rank %d of %d, %d local, %d nodes, ctx %016llx", c->name, c->rank,
		   c->size, c->local_size, c->nnodes, (unsigned long long)ctx);
	return c;
}

void loom_comm_destroy(struct loom_comm *c)
{
	struct loom_world *w = c->w;
	struct loom_comm **pp;
	if (c->nbq)
		loom_nbq_stop(c);
	if (c->nodec)
		loom_comm_destroy(c->nodec);
	if (c->leaderc)
		loom_comm_destroy(c->leaderc);
	pthread_mutex_lock(&w->comms_lock);
	for (pp = &w->comms; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	pthread_mutex_unlock(&w->comms_lock);
	loom_shm_detach(c);
	loom_metrics_free(c->metrics);
	if (c->wrank) {
		pthread_mutex_destroy(&c->exec);
		pthread_mutex_destroy(&c->p2p_lock);
	}
	free(c->wrank);
	free(c->local_idx);
	free(c->local_members);
	free(c->node_pos);
	free(c->leaders);
	free(c->p2p_sent);
	free(c->p2p_rcvd);
	free(c->status_rep);
	free(c);
}

int loom_comm_ensure_hier(struct loom_comm *c)
{
	int *wr, i, me = c->node_pos[c->rank];
	char name[80];
	if (c->nodec)
		return LOOM_SUCCESS;
	wr = malloc((size_t)(c->size > c->nnodes ? c->size : c->nnodes) * sizeof *wr);
	if (!wr)
		return LOOM_ERR_NOMEM;
	for (i = 0; i < c->local_size; i++)
		wr[i] = c->wrank[c->local_members[i]];
	snprintf(name, sizeof name, "%s/node", c->name);
	c->nodec = loom_comm_create(c->w, loom_mix64(c->ctx, 0x6e6f6465ull + (uint64_t)me),
				    c->local_size, wr, c->local_rank, name);
	if (c->nodec && c->local_rank == 0) {
		for (i = 0; i < c->nnodes; i++)
			wr[i] = c->wrank[c->leaders[i]];
		snprintf(name, sizeof name, "%s/leaders", c->name);
		c->leaderc = loom_comm_create(c->w, loom_mix64(c->ctx, 0x6c656164ull), c->nnodes, wr,
					      me, name);
	}
	free(wr);
	if (!c->nodec || (c->local_rank == 0 && !c->leaderc))
		return LOOM_ERR_NOMEM;
	c->nodec->internal = 1;
	c->nodec->parent = c;
	c->nodec->timeout = c->timeout;
	if (c->leaderc) {
		c->leaderc->internal = 1;
		c->leaderc->parent = c;
		c->leaderc->timeout = c->timeout;
	}
	return LOOM_SUCCESS;
}

int loom_comm_rank(const loom_comm_t *c) { return c ? c->rank : -1; }
int loom_comm_size(const loom_comm_t *c) { return c ? c->size : -1; }
int loom_comm_local_rank(const loom_comm_t *c) { return c ? c->local_rank : -1; }
int loom_comm_local_size(const loom_comm_t *c) { return c ? c->local_size : -1; }

int loom_comm_set_timeout(loom_comm_t *c, double seconds)
{
	if (!c || !(seconds > 0))
		return LOOM_ERR_INVALID;
	c->timeout = seconds;
	if (c->nodec)
		c->nodec->timeout = seconds;
	if (c->leaderc)
		c->leaderc->timeout = seconds;
	return LOOM_SUCCESS;
}

int loom_comm_set_name(loom_comm_t *c, const char *name)
{
	if (!c || !name)
		return LOOM_ERR_INVALID;
	snprintf(c->name, sizeof c->name, "%s", name);
	loom_metrics_rename(c->metrics, c->name);
	return LOOM_SUCCESS;
}

const char *loom_comm_name(const loom_comm_t *c) { return c ? c->name : NULL; }

struct ck { int32_t color, key; };

static int ck_members(const struct ck *all, int n, int color, int *out)
{
	int m = 0, i, j;
	for (i = 0; i < n; i++) {
		if (all[i].color != color)
			continue;
		/* insertion by (key, rank) */
		for (j = m; j > 0 && all[out[j - 1]].key > all[i].key; j--)
			out[j] = out[j - 1];
		out[j] = i;
		m++;
	}
	return m;
}

static int split_named(loom_comm_t *c, int color, int key, loom_comm_t **out, const char *what)
{
	struct ck mine = { color, key }, *all;
	int *mem, *wr, m, i, me = -1, rc;
	char name[80];
	uint64_t ctx;
	*out = NULL;
	all = calloc((size_t)c->size, sizeof *all);
	mem = calloc((size_t)c->size, sizeof *mem);
	wr = calloc((size_t)c->size, sizeof *wr);
	if (!all || !mem || !wr) {
		free(all); free(mem); free(wr);
		return LOOM_ERR_NOMEM;
	}
	rc = loom_allgather(&mine, all, 2, LOOM_INT32, c);
	c->nsplit++;
	if (rc == LOOM_SUCCESS && color != LOOM_UNDEFINED) {
		m = ck_members(all, c->size, color, mem);
		for (i = 0; i < m; i++) {
			wr[i] = c->wrank[mem[i]];
			if (mem[i] == c->rank)
				me = i;
		}
		ctx = loom_mix64(loom_mix64(c->ctx, c->nsplit), (uint64_t)(uint32_t)color);
		snprintf(name, sizeof name, "%s%llu", what, (unsigned long long)c->nsplit);
		*out = loom_comm_create(c->w, ctx, m, wr, me, name);
		if (!*out)
			rc = LOOM_ERR_NOMEM;
		else
			(*out)->timeout = c->timeout;
		(void)me;
	}
	free(all);
	free(mem);
	free(wr);
	return rc;
}

/* ---- the native backend's communicator entries ---- */
int loom_native_split(struct loom_comm *c, int color, int key, struct loom_comm **out)
{
	return split_named(c, color, key, out, "split");
}

int loom_native_dup(struct loom_comm *c, struct loom_comm **out)
{
	return split_named(c, 0, c->rank, out, "dup");
}

int loom_native_free(struct loom_comm *c)
{
	loom_comm_destroy(c);
	return LOOM_SUCCESS;
}

int loom_native_abort(struct loom_comm *c)
{
	int i, zero = 0;
	atomic_compare_exchange_strong(&c->failed, &zero, LOOM_ERR_ABORTED);
	LOOM_ERR("communicator %s aborted by this rank", c->name);
	for (i = 0; i < c->size; i++)
		if (i != c->rank)
			loom_tcp_control(c->w, c->wrank[i], CTL_ABORT, c->ctx, LOOM_ERR_ABORTED);
	loom_bell_ring(loom_comm_bell(c));
	if (c->nodec)
		atomic_store(&c->nodec->failed, LOOM_ERR_ABORTED);
	if (c->leaderc)
		atomic_store(&c->leaderc->failed, LOOM_ERR_ABORTED);
	return LOOM_SUCCESS;
}

/* ---- public: through the communicator's backend ---- */
int loom_comm_split(loom_comm_t *c, int color, int key, loom_comm_t **newcomm)
{
	if (!c || !newcomm || (color < 0 && color != LOOM_UNDEFINED))
		return LOOM_ERR_INVALID;
	*newcomm = NULL;
	return c->be->split(c, color, key, newcomm);
}

int loom_comm_dup(loom_comm_t *c, loom_comm_t **newcomm)
{
	if (!c || !newcomm)
		return LOOM_ERR_INVALID;
	*newcomm = NULL;
	return c->be->dup(c, newcomm);
}

int loom_comm_free(loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	if (c->is_world) {
		LOOM_WARN("loom_comm_free on the world communicator: use loom_finalize");
		return LOOM_ERR_INVALID;
	}
	return c->be->free(c);
}

int loom_comm_abort(loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	return c->be->abort(c);
}
