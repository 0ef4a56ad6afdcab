/* runtime/transport/transport_tcp.c: the TCP transport's entry points
 * (post, pull, cancel, control, peer_gone), a peer's state, made on first
 * need and failed when its connection is lost, and the control messages
 * that come (goodbye, abort, timeout diagnosis). How the engine's files
 * divide the work: transport_tcp_internal.h. */
#include "transport/transport_tcp_internal.h"
#include "flight/flight.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* peer i's state, made on first need (e->lock held); NULL: no memory */
struct peer *tcp_peer_get(struct loom_engine *e, int i)
{
	struct peer *p = PEER(e, i);
	if (p)
		return p;
	if (e->nact == e->act_cap) {
		int cap = e->act_cap ? 2 * e->act_cap : 16, *a = realloc(e->act, (size_t)cap * sizeof *a);
		if (!a)
			return NULL;
		e->act = a;
		e->act_cap = cap;
	}
	if (!(p = calloc(1, sizeof *p)))
		return NULL;
	p->fd = -1;
	p->ip = e->ip ? e->ip[i] : 0;
	p->port = e->port ? e->port[i] : 0;
	if (loom_intmap_put(&e->peers, i, p)) {
		free(p);
		return NULL;
	}
	e->act[e->nact++] = i;
	return p;
}

/* every request of a list fails: its peer is gone or said goodbye */
void tcp_fail_list(struct loom_treq **list)
{
	struct loom_treq *r, *nx;
	for (r = *list; r; r = nx) {
		nx = r->next;
		tcp_complete(r, LOOM_ERR_PEER_LOST);
	}
	*list = NULL;
}

void tcp_peer_lost(struct loom_engine *e, int i, const char *why)
{
	struct peer *p = PEER(e, i);
	if (p->gone)
		return;
	p->gone = 1;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	tcp_drop_dial(&p->dial);
	tcp_drop_dial(&p->stray);
	if (!p->bye) {
		LOOM_ERR("rank %d lost: %s", i, why);
		loom_flight_log_verdict();
	} else
		LOOM_TRACE("rank %d closed its connection after goodbye", i);
	tcp_fail_list(&p->sq);
	p->sq_tail = NULL;
	tcp_fail_list(&p->posted);
	p->posted_tail = NULL;
	tcp_fail_list(&p->rts_wait);
	tcp_fail_list(&p->bound);
	if (p->rstate == 1 && p->rt)
		tcp_complete(p->rt, LOOM_ERR_PEER_LOST);
	if (p->ru) {
		free(p->ru->buf);
		free(p->ru);
	}
	p->rt = NULL;
	p->ru = NULL;
	p->rstate = 0;
	if (!p->bye)
		e->hooks->peer_lost(e->arg, i, LOOM_ERR_PEER_LOST);
}

/* ---- control messages that come ---- */

/* it sends nothing after its goodbye: what we still wait for from it
 * never comes */
static void got_bye(struct peer *p)
{
	p->bye = 1;
	tcp_fail_list(&p->posted);
	p->posted_tail = NULL;
	tcp_fail_list(&p->bound);
	tcp_fail_list(&p->rts_wait);
}

/* Connections are made on first use, so the aborting rank may still be
 * dialing a peer when that peer hears our goodbye and fails with
 * PEER_LOST instead. Pass the abort on over every connection we have: it
 * goes ahead of our goodbye on the same stream. A rank that had already
 * failed the communicator does not pass it on again, so relays end. */
static void relay_abort(struct loom_engine *e, int from, const struct wire *h)
{
	for (int k = 0; k < e->nact; k++) {
		int i = e->act[k];
		struct peer *q = PEER(e, i);
		struct loom_treq *r;
		if (i == e->self || i == from || q->state != C_UP || q->gone || q->bye_sent)
			continue;
		if (!(r = tcp_ctl_new(i, h->ctx, CTL_ABORT, h->aux)))
			break;
		tcp_enqueue_send(e, i, r);
	}
}

void tcp_control(struct loom_engine *e, int from, const struct wire *h)
{
	int64_t entered;
	if (h->type == CTL_BYE) {
		got_bye(PEER(e, from));
		return;
	}
	entered = e->hooks->control(e->arg, from, (int)h->type, h->ctx, h->aux);
	if (h->type == CTL_ABORT && entered == 1)
		relay_abort(e, from, h);
	if (h->type == CTL_STATUS_REQ) {
		struct loom_treq *r = tcp_ctl_new(from, h->ctx, CTL_STATUS_REP, entered);
		if (!r)
			return;
		tcp_enqueue_send(e, from, r);
	}
}

/* ---- the entry points ---- */

static void post_send(struct loom_engine *e, struct peer *p, struct loom_treq *r)
{
	tcp_pack(r, T_DATA, 0);
	if (r->peer == e->self) {
		tcp_send_self(p, r);
	} else if (r->len >= RNDV_BYTES && !r->eager && !p->gone) {
		/* announced; its bytes go when the peer's T_CTS comes */
		r->rid = ++p->next_rid;
		r->next = p->rts_wait;
		p->rts_wait = r;
		tcp_send_hdr(e, r->peer, T_RTS, r->ctx, r->tag, r->len, r->rid);
	} else {
		tcp_enqueue_send(e, r->peer, r);
	}
}

void loom_tcp_post(struct loom_engine *e, struct loom_treq *r)
{
	struct peer *p;
	atomic_store(&r->done, 0);
	r->status = 0;
	r->next = NULL;
	r->off = 0;
	pthread_mutex_lock(&e->lock);
	if (!(p = tcp_peer_get(e, r->peer)))
		tcp_complete(r, LOOM_ERR_NOMEM);
	else if (r->kind == TREQ_SEND)
		post_send(e, p, r);
	else
		tcp_post_recv(e, p, r);
	pthread_mutex_unlock(&e->lock);
}

/* A thread that waits for a small message from peer reads what is there
 * itself, unless the engine thread is at it (the lock is taken): the
 * bytes reach it without the engine thread's wake-up and the bell's
 * after it, two scheduler round trips on a busy core (docs/algorithms.md). */
void loom_tcp_pull(struct loom_engine *e, int peer)
{
	struct peer *p;
	if (!e || peer < 0 || peer >= e->n || peer == e->self || pthread_mutex_trylock(&e->lock))
		return;
	p = PEER(e, peer);
	if (p && p->state == C_UP && !p->gone)
		tcp_do_read(e, peer);
	pthread_mutex_unlock(&e->lock);
}

void loom_tcp_cancel(struct loom_engine *e, struct loom_treq *r)
{
	struct peer *p;
	pthread_mutex_lock(&e->lock);
	p = PEER(e, r->peer);  /* made when r was posted */
	if (atomic_load(&r->done)) {
		pthread_mutex_unlock(&e->lock);
		return;
	}
	if (r->kind == TREQ_SEND)
		tcp_cancel_send(e, p, r);
	else
		tcp_cancel_recv(p, r);
	r->status = LOOM_ERR_TIMEOUT;
	atomic_store(&r->done, 1);
	pthread_mutex_unlock(&e->lock);
}

void loom_tcp_control(struct loom_engine *e, int peer, int type, uint64_t ctx, int64_t a)
{
	struct loom_treq *r;
	if (!e || peer == e->self)
		return;
	r = tcp_ctl_new(peer, ctx, (uint32_t)type, a);
	if (!r)
		return;
	pthread_mutex_lock(&e->lock);
	if (tcp_peer_get(e, peer))
		tcp_enqueue_send(e, peer, r);
	else
		free(r);
	pthread_mutex_unlock(&e->lock);
}

int loom_tcp_peer_gone(struct loom_engine *e, int peer)
{
	int g;
	if (!e || peer == e->self)
		return 0;
	pthread_mutex_lock(&e->lock);
	g = PEER(e, peer) && PEER(e, peer)->gone;
	pthread_mutex_unlock(&e->lock);
	return g;
}
