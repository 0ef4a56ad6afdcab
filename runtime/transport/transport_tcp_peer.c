/* runtime/transport/transport_tcp_peer.c: a peer's state in the TCP
 * engine, the bottom of its files (transport_tcp_internal.h): made on
 * first need, its first dial begun, lost (everything that waits on it
 * fails), the request lists the other files keep, and the engine's
 * wake-up. Every function here but the wake-up runs with e->lock held. */
#include "transport/transport_tcp_internal.h"
#include "flight/flight.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* the engine's poll returns now (any thread, e->lock held or not) */
void loom_tcp_wake_engine(struct loom_engine *e)
{
	uint64_t one = 1;
	if (e->have_thr && write(e->evfd, &one, sizeof one) < 0) {
		/* the counter is full: the engine is awake anyway */
	}
}

/* peer i's state, made on first need (e->lock held); NULL: no memory */
struct peer *loom_tcp_peer_get(struct loom_engine *e, int i)
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
	p->gone = e->fenced;  /* a fenced process reaches nobody */
	p->ip = e->ip ? e->ip[i] : 0;
	p->port = e->port ? e->port[i] : 0;
	if (loom_intmap_put(&e->peers, i, p)) {
		free(p);
		return NULL;
	}
	e->act[e->nact++] = i;
	return p;
}

/* r out of a list, if it is there: 1 */
int loom_tcp_unlink_req(struct loom_treq **list, struct loom_treq *r)
{
	struct loom_treq **pp;
	for (pp = list; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			r->next = NULL;
			return 1;
		}
	return 0;
}

/* every request of a list fails: its peer is gone or said goodbye */
void loom_tcp_fail_list(struct loom_treq **list)
{
	struct loom_treq *r, *nx;
	for (r = *list; r; r = nx) {
		nx = r->next;
		tcp_complete(r, LOOM_ERR_PEER_LOST);
	}
	*list = NULL;
}

/* a dial given up: its socket closed */
void loom_tcp_drop_dial(struct loom_hs_dialer **d)
{
	if (!*d)
		return;
	if ((*d)->fd >= 0)
		close((*d)->fd);
	free(*d);
	*d = NULL;
}

/* peer i's connection is lost (why: for the log): everything queued for
 * it or waiting on it fails, and the layers above are told */
void loom_tcp_peer_lost(struct loom_engine *e, int i, const char *why)
{
	struct peer *p = PEER(e, i);
	if (p->gone)
		return;
	p->gone = 1;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	loom_tcp_drop_dial(&p->dial);
	loom_tcp_drop_dial(&p->stray);
	if (!p->bye) {
		LOOM_ERR("rank %d lost: %s", i, why);
		loom_flight_log_verdict();
	} else
		LOOM_TRACE("rank %d closed its connection after goodbye", i);
	loom_tcp_fail_list(&p->sq);
	p->sq_tail = NULL;
	loom_tcp_fail_list(&p->posted);
	p->posted_tail = NULL;
	loom_tcp_fail_list(&p->rts_wait);
	loom_tcp_fail_list(&p->bound);
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

/* peer i's dial begins (its address looked up on the first); the
 * engine thread steps it (transport_tcp_conn.c) */
void loom_tcp_dial_start(struct loom_engine *e, int i)
{
	struct peer *p = PEER(e, i);
	int rc;
	p->dial = calloc(1, sizeof *p->dial);
	if (!p->dial) {
		loom_tcp_peer_lost(e, i, "out of memory for a connection");
		return;
	}
	if (!p->port && e->hooks->resolve && e->hooks->resolve(e->arg, i, &p->ip, &p->port)) {
		free(p->dial);
		p->dial = NULL;
		loom_tcp_peer_lost(e, i, "its address cannot be looked up");
		return;
	}
	rc = loom_hs_dialer_start(p->dial, p->ip, p->port, i);
	if (rc) {
		free(p->dial);
		p->dial = NULL;
		loom_tcp_peer_lost(e, i, "cannot open a socket to it");
		return;
	}
	if (p->state == C_IDLE)
		p->until = loom_now() + e->connect_tmo;
	p->dial_at = loom_now();
	p->state = C_DIAL;
	loom_tcp_wake_engine(e);   /* the engine polls the new socket */
}
