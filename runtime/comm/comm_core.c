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
	return c->shm && peer != c->rank && loom_comm_local_idx(c, peer) >= 0;
}

int loom_comm_max_local(const struct loom_comm *c)
{
	return c->max_local;
}

size_t loom_comm_table_bytes(const struct loom_comm *c)
{
	return loom_rankmap_bytes(&c->wr) + loom_rankmap_bytes(&c->lmem) +
	       loom_rankmap_bytes(&c->npos) + loom_rankmap_bytes(&c->lead);
}

/* The tables from the members' world ranks, in O(n) time and, once
 * made, the memory of their rank maps: the arrays here are freed. */
static int make_tables(struct loom_comm *c, const int *wranks)
{
	struct loom_world *w = c->w;
	int n = c->size, i, j, mynode = loom_world_node_of(w, wranks[c->rank]), rc = -1;
	int *npos = malloc((size_t)n * sizeof *npos), *lmem = malloc((size_t)n * sizeof *lmem);
	int *lead = malloc((size_t)n * sizeof *lead);
	/* world node -> its position here, -1 until a member on it is seen;
	 * then the members counted on each position */
	int *pos = malloc(((size_t)w->nnodes + 1) * sizeof *pos);
	if (!npos || !lmem || !lead || !pos)
		goto out;
	for (j = 0; j < w->nnodes; j++)
		pos[j] = -1;
	for (i = 0; i < n; i++) {
		int nd = loom_world_node_of(w, wranks[i]);
		if (nd == mynode) {
			if (i == c->rank)
				c->local_rank = c->local_size;
			lmem[c->local_size++] = i;
		}
		if (pos[nd] < 0) {
			pos[nd] = c->nnodes;
			lead[c->nnodes++] = i;
		}
		npos[i] = pos[nd];
	}
	for (j = 0; j < c->nnodes; j++)
		pos[j] = 0;
	c->max_local = 0;
	for (i = 0; i < n; i++)
		if (++pos[npos[i]] > c->max_local)
			c->max_local = pos[npos[i]];
	if (loom_rankmap_set(&c->wr, n, wranks) || loom_rankmap_set(&c->npos, n, npos) ||
	    loom_rankmap_set(&c->lmem, c->local_size, lmem) ||
	    loom_rankmap_set(&c->lead, c->nnodes, lead))
		goto out;
	rc = 0;
out:
	free(npos);
	free(lmem);
	free(lead);
	free(pos);
	return rc;
}

/* what an attach watches while it waits: the new communicator, and the
 * one it is made in (NULL: none), whose shared memory already holds the
 * node-mates' pids */
struct watch {
	struct loom_comm *c, *parent;
};

/* wr's index among parent's node members, -1 if not one */
static int parent_local(const struct loom_comm *p, int wr)
{
	int k;
	for (k = 0; k < p->local_size; k++)
		if (loom_comm_wrank(p, loom_comm_local_member(p, k)) == wr)
			return k;
	return -1;
}

/* while the attach waits: the parent failed, or a member of this node is
 * gone (its TCP connection lost; its process gone, or stopped and then
 * unanswered over TCP within LOOM_HEARTBEAT, as the parent's shared
 * memory sees it). Nothing is dialed for a node-mate that runs. */
static int shm_lost(void *arg)
{
	struct watch *wa = arg;
	struct loom_comm *c = wa->c, *p = wa->parent;
	int j, k, wr, f = p ? atomic_load(&p->failed) : 0;
	if (f)
		return f;
	for (j = 0; j < c->local_size; j++) {
		if (j == c->local_rank)
			continue;
		wr = loom_comm_wrank(c, loom_comm_local_member(c, j));
		if (loom_tcp_peer_gone(c->w->eng, wr))
			return LOOM_ERR_PEER_LOST;
		k = p && p->shm ? parent_local(p, wr) : -1;
		if (k >= 0 && (loom_shm_peer_gone(p->shm, k) ||
			       (loom_shm_peer_stopped(p->shm, k) && loom_tcp_probe(c->w->eng, wr))))
			return LOOM_ERR_PEER_LOST;
	}
	return 0;
}

/* the rings' view of c (transport.h): its node's members, the names' parts */
static int shm_attach(struct loom_comm *c, struct loom_comm *parent)
{
	struct loom_shm_group g = { 0 };
	struct watch wa = { c, parent };
	g.local_rank = c->local_rank;
	g.local_size = c->local_size;
	g.node = loom_world_node_of(c->w, c->w->rank);
	g.ctx = c->ctx;
	memcpy(g.key, c->w->shm_key, sizeof g.key);
	g.timeout = c->timeout;
	memcpy(g.name, c->name, sizeof g.name);
	g.members = &c->lmem;
	g.lost = shm_lost;
	g.lost_arg = &wa;
	return loom_shm_attach(&g, &c->shm);
}

struct loom_comm *loom_comm_create(struct loom_world *w, uint64_t ctx, int n, const int *wranks,
				   int myrank, const char *name)
{
	struct loom_comm *c;
	loom_comm_make(w, ctx, n, wranks, myrank, name, NULL, &c);
	return c;
}

int loom_comm_make(struct loom_world *w, uint64_t ctx, int n, const int *wranks, int myrank,
		   const char *name, struct loom_comm *parent, struct loom_comm **out)
{
	struct loom_comm *c = calloc(1, sizeof *c);
	int rc;
	*out = NULL;
	if (!c)
		return LOOM_ERR_NOMEM;
	c->w = w;
	c->ctx = ctx;
	c->size = n;
	c->rank = myrank;
	c->timeout = w->timeout;
	c->check = w->check;
	snprintf(c->name, sizeof c->name, "%s", name);
	pthread_mutex_init(&c->exec, NULL);
	pthread_mutex_init(&c->p2p_lock, NULL);
	if (make_tables(c, wranks)) {
		loom_comm_destroy(c);
		return LOOM_ERR_NOMEM;
	}
	if (c->local_size > 1 && w->transport != LOOM_TR_TCP) {
		if ((rc = shm_attach(c, parent)) != LOOM_SUCCESS) {
			loom_comm_destroy(c);
			return rc == LOOM_ERR_PEER_LOST || rc == LOOM_ERR_REVOKED ? rc : LOOM_ERR_NOMEM;
		}
	}
	pthread_mutex_lock(&w->comms_lock);
	c->next = w->comms;
	w->comms = c;
	pthread_mutex_unlock(&w->comms_lock);
	LOOM_TRACE("comm %s: rank %d of %d, %d local, %d nodes, ctx %016llx, tables %zu B", c->name,
		   c->rank, c->size, c->local_size, c->nnodes, (unsigned long long)ctx,
		   loom_comm_table_bytes(c));
	*out = c;
	return LOOM_SUCCESS;
}

static void free_val(void *v, void *arg)
{
	(void)arg;
	free(v);
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
	loom_shm_detach(c->shm);
	c->shm = NULL;
	loom_metrics_free(c->metrics);
	pthread_mutex_destroy(&c->exec);
	pthread_mutex_destroy(&c->p2p_lock);
	loom_rankmap_free(&c->wr);
	loom_rankmap_free(&c->lmem);
	loom_rankmap_free(&c->npos);
	loom_rankmap_free(&c->lead);
	loom_intmap_each(&c->p2p, free_val, NULL);
	loom_intmap_clear(&c->p2p);
	free((void *)atomic_load(&c->status_rep));
	free(c->ft_failed);
	if (c->coll)
		c->coll_free(c->coll);
	free(c);
}

int loom_comm_ensure_hier(struct loom_comm *c)
{
	int *wr, i, me = loom_comm_node_pos(c, c->rank), rc;
	char name[80];
	if (c->nodec)
		return LOOM_SUCCESS;
	wr = malloc((size_t)(c->size > c->nnodes ? c->size : c->nnodes) * sizeof *wr);
	if (!wr)
		return LOOM_ERR_NOMEM;
	for (i = 0; i < c->local_size; i++)
		wr[i] = loom_comm_wrank(c, loom_comm_local_member(c, i));
	snprintf(name, sizeof name, "%s/node", c->name);
	rc = loom_comm_make(c->w, loom_mix64(c->ctx, 0x6e6f6465ull + (uint64_t)me), c->local_size, wr,
			    c->local_rank, name, c, &c->nodec);
	if (rc == LOOM_ERR_PEER_LOST || rc == LOOM_ERR_REVOKED) {
		free(wr);   /* a node-mate gone before the node's memory was made */
		return rc;
	}
	if (c->nodec && c->local_rank == 0) {
		for (i = 0; i < c->nnodes; i++)
			wr[i] = loom_comm_wrank(c, loom_comm_leader(c, i));
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
		for (i = 0; i < c->size; i++) {
			int np = loom_comm_node_pos(c, i);
			if (li[np]++ == c->local_rank)
				wr[np] = loom_comm_wrank(c, i);
		}
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

/* Only the thread running the communicator's operation (its exec lock
 * held) writes seq, so no locked add: after a fast-box post, a locked
 * instruction waited for the box's cache line to come back from its
 * reader. The engine thread reads it (timeout diagnosis). */
uint64_t loom_op_enter(struct loom_comm *c)
{
	uint64_t v = atomic_load_explicit(&c->seq, memory_order_relaxed) + 1;
	atomic_store_explicit(&c->seq, v, memory_order_relaxed);
	return v;
}

struct loom_bell *loom_comm_bell(struct loom_comm *c)
{
	struct loom_bell *b = c->shm ? loom_shm_bell(c->shm) : NULL;
	return b ? b : &c->pbell;
}

/* ---- engine hooks ---- */
void loom_comms_peer_lost(struct loom_world *w, int peer, int status)
{
	struct loom_comm *c;
	pthread_mutex_lock(&w->comms_lock);
	for (c = w->comms; c; c = c->next) {
		int i, has = peer < 0 && c->size > 1;  /* -1: this process was fenced */
		for (i = 0; i < c->size && !has; i++)
			if (loom_comm_wrank(c, i) == peer)
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
				LOOM_ERR("communicator %s %s by rank %d", c->name,
					 LOOM_ABORT_STATUS(aux) == LOOM_ERR_REVOKED ? "revoked"
										    : "aborted",
					 LOOM_ABORT_ORIGIN(aux, from));
				entered = 1;  /* newly aborted here: the engine passes it on */
			}
			loom_bell_ring(loom_comm_bell(c));
		} else if (type == CTL_STATUS_REQ) {
			entered = (int64_t)atomic_load(&c->seq);
		} else if (type == CTL_STATUS_REP && atomic_load(&c->status_rep)) {
			_Atomic int64_t *rep = atomic_load(&c->status_rep);
			int k;
			for (k = 0; k < c->size; k++)
				if (loom_comm_wrank(c, k) == from)
					atomic_store(&rep[k], aux);
			loom_bell_ring(loom_comm_bell(c));
		}
	}
	pthread_mutex_unlock(&w->comms_lock);
	return entered;
}
