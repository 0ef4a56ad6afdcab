/* runtime/comm/comm_core.c: the communicator object, below the algorithms:
 * creation from a list of world ranks, destruction, the internal node /
 * leader sub-communicators of hierarchical collectives, what the
 * algorithms ask of it (operation sequence, shm peers, most members on a
 * node, its bell), and what the TCP engine reports to it (a lost peer, a
 * control message) through the hooks the world hands the engine. */
#include "comm/comm.h"
#include "metrics/metrics.h"

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
	int i, j, mynode, *pos;
	if (!c)
		return NULL;
	c->w = w;
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
	/* world node -> its position here, -1 until a member on it is seen */
	pos = malloc(((size_t)w->nnodes + 1) * sizeof *pos);
	if (!pos) {
		loom_comm_destroy(c);
		return NULL;
	}
	for (j = 0; j < w->nnodes; j++)
		pos[j] = -1;
	for (i = 0; i < n; i++) {
		int nd = w->node_of[wranks[i]];
		c->local_idx[i] = -1;
		if (nd == mynode) {
			if (i == myrank)
				c->local_rank = c->local_size;
			c->local_idx[i] = c->local_size;
			c->local_members[c->local_size++] = i;
		}
		if (pos[nd] < 0) {
			pos[nd] = c->nnodes;
			c->leaders[c->nnodes++] = i;
		}
		c->node_pos[i] = pos[nd];
	}
	free(pos);
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
	if (c->nodec)
		loom_comm_destroy(c->nodec);
	if (c->leaderc)
		loom_comm_destroy(c->leaderc);
	if (c->lanec)
		loom_comm_destroy(c->lanec);
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
	free(c->scratch);
	free(c->direct_tmp);
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
	/* lanes: when every node holds local_size members, the members of one
	 * local rank, one per node, in node order (hierarchical allreduce by
	 * lanes, plan.c) */
	if (c->nodec && c->size == c->nnodes * c->max_local) {
		int *li = calloc((size_t)c->nnodes, sizeof *li);
		if (!li) {
			free(wr);
			return LOOM_ERR_NOMEM;
		}
		/* member i is local rank li[its node] of its node, counted in rank order */
		for (i = 0; i < c->size; i++)
			if (li[c->node_pos[i]]++ == c->local_rank)
				wr[c->node_pos[i]] = c->wrank[i];
		free(li);
		snprintf(name, sizeof name, "%s/lane%d", c->name, c->local_rank);
		c->lanec = loom_comm_create(c->w, loom_mix64(c->ctx, 0x6c616e65ull + (uint64_t)c->local_rank),
					    c->nnodes, wr, me, name);
		if (c->lanec) {
			c->lanec->internal = 1;
			c->lanec->be = c->be;
			c->lanec->parent = c;
			c->lanec->timeout = c->timeout;
		}
	}
	free(wr);
	if (!c->nodec || (c->local_rank == 0 && !c->leaderc) ||
	    (c->size == c->nnodes * c->max_local && !c->lanec))
		return LOOM_ERR_NOMEM;
	c->nodec->internal = 1;
	c->nodec->be = c->be;
	c->nodec->parent = c;
	c->nodec->timeout = c->timeout;
	if (c->leaderc) {
		c->leaderc->internal = 1;
		c->leaderc->be = c->be;
		c->leaderc->parent = c;
		c->leaderc->timeout = c->timeout;
	}
	return LOOM_SUCCESS;
}

uint64_t loom_op_enter(struct loom_comm *c)
{
	return atomic_fetch_add(&c->seq, 1) + 1;
}

struct loom_bell *loom_comm_bell(struct loom_comm *c)
{
	struct loom_bell *b = c->shm ? loom_shm_bell(c) : NULL;
	return b ? b : &c->pbell;
}

/* ---- engine hooks ---- */
void loom_comms_peer_lost(struct loom_world *w, int peer, int status)
{
	struct loom_comm *c;
	pthread_mutex_lock(&w->comms_lock);
	for (c = w->comms; c; c = c->next) {
		int i, has = 0;
		for (i = 0; i < c->size; i++)
			if (c->wrank[i] == peer)
				has = 1;
		if (has) {
			int zero = 0;
			atomic_compare_exchange_strong(&c->failed, &zero, status);
			loom_bell_ring(loom_comm_bell(c));
		}
	}
	pthread_mutex_unlock(&w->comms_lock);
}

int64_t loom_comms_control(struct loom_world *w, int from, int type, uint64_t ctx, int64_t aux)
{
	struct loom_comm *c;
	int64_t entered = -1;
	pthread_mutex_lock(&w->comms_lock);
	c = loom_comm_find(w, ctx);
	if (c) {
		if (type == CTL_ABORT) {
			int zero = 0;
			if (atomic_compare_exchange_strong(&c->failed, &zero, LOOM_ABORT_STATUS(aux))) {
				LOOM_ERR("communicator %s aborted by rank %d", c->name,
					 LOOM_ABORT_ORIGIN(aux, from));
				entered = 1;  /* newly aborted here: the engine passes it on */
			}
			loom_bell_ring(loom_comm_bell(c));
		} else if (type == CTL_STATUS_REQ) {
			entered = (int64_t)atomic_load(&c->seq);
		} else if (type == CTL_STATUS_REP && c->status_rep) {
			int k;
			for (k = 0; k < c->size; k++)
				if (c->wrank[k] == from)
					atomic_store(&c->status_rep[k], aux);
			loom_bell_ring(loom_comm_bell(c));
		}
	}
	pthread_mutex_unlock(&w->comms_lock);
	return entered;
}
