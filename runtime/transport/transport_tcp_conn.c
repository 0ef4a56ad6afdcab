/* runtime/transport/transport_tcp_conn.c: the TCP engine's connections.
 * A peer's connection is dialed when something first concerns it (the
 * dial begins in transport_tcp_peer.c, stepped here), and the engine's
 * acceptor takes the peers' own dials on the listening socket. Every
 * connection begins with the authenticated hello of transport_handshake.c
 * (kind MESH, the world's nonce as payload): a hello of another world of
 * the same key is refused. When both ranks of
 * a pair dial at once, the connection dialed by the lower rank is kept:
 * the higher one declines the other quietly, and the lower one takes it
 * and drops its own; a declined dialer waits, taking the peer's dial if
 * it comes, and dials again after a growing pause, until
 * LOOM_BOOTSTRAP_TIMEOUT. Every function here runs with e->lock held. */
#include "transport/transport_tcp_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

void loom_tcp_say_bye(struct loom_engine *e, int i)
{
	struct loom_treq *r;
	if (PEER(e, i)->bye_sent || PEER(e, i)->gone)
		return;
	r = loom_tcp_ctl_new(i, 0, CTL_BYE, 0);
	if (!r)
		return;
	PEER(e, i)->bye_sent = 1;
	loom_tcp_enqueue_send(e, i, r);
}

/* fd is an authenticated connection to peer i: its queue can go */
static void conn_up(struct loom_engine *e, int i, int fd)
{
	struct peer *p = PEER(e, i);
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (p->dial && p->dial->fd == fd) {
		p->dial->fd = -1;
		loom_tcp_drop_dial(&p->dial);
	} else if (p->dial) {
		/* closing it now would be a refusal logged at the peer: let it
		 * say its hello and be declined */
		loom_tcp_drop_dial(&p->stray);
		p->stray = p->dial;
		p->dial = NULL;
	}
	p->fd = fd;
	p->state = C_UP;
	p->tries = 0;
	p->heard = p->pinged = loom_now();
	LOOM_TRACE("connected to rank %d", i);
	if (e->closing)
		loom_tcp_say_bye(e, i);
	if (p->sq) {
		loom_tcp_do_write(e, i);
		loom_tcp_wake_engine(e);
	}
}

/* ---- the dialing side ---- */

static int hello_step(struct loom_engine *e, struct loom_hs_dialer *d)
{
	return loom_hs_dialer_step(d, e->key, LOOM_HS_MESH, e->self, e->n, &e->hello,
				   sizeof e->hello);
}

void loom_tcp_dial_step(struct loom_engine *e, int i)
{
	struct peer *p = PEER(e, i);
	char addr[INET_ADDRSTRLEN], why[160];
	int rc = hello_step(e, p->dial);
	if (rc == 0)
		return;
	if (rc == 1) {
		conn_up(e, i, p->dial->fd);
		return;
	}
	loom_tcp_drop_dial(&p->dial);
	if (rc == LOOM_HS_DIAL_DECLINED) {
		/* a lower rank dialing us at the same moment (its connection
		 * wins and comes to us), or an acceptor full of hellos that
		 * dropped ours: wait, taking its dial if it comes, and dial
		 * again after a growing pause, until p->until */
		double pause = 0.02 * (1 << (p->tries < 6 ? p->tries : 6));
		p->tries++;
		p->state = C_WAIT;
		p->retry_at = loom_now() + pause * (1.0 + (double)(e->self % 7) / 7.0);
		return;
	}
	inet_ntop(AF_INET, &p->ip, addr, sizeof addr);
	snprintf(why, sizeof why, rc == LOOM_HS_DIAL_FORGED
		 ? "the process at %s:%u (its address) does not hold this job's secret"
		 : "cannot connect to its address %s:%u (the process exited?)", addr, p->port);
	loom_tcp_peer_lost(e, i, why);
}

/* our dial that lost a race runs on to its quiet refusal */
void loom_tcp_stray_step(struct loom_engine *e, struct peer *p)
{
	if (hello_step(e, p->stray))
		loom_tcp_drop_dial(&p->stray);
}

/* dials past their peer's LOOM_BOOTSTRAP_TIMEOUT, or one attempt
 * unanswered for LOOM_HEARTBEAT, give up; declined ones whose pause is
 * over dial again */
void loom_tcp_dial_timers(struct loom_engine *e, double now)
{
	int i, k;
	for (k = 0; k < e->nact; k++) {
		struct peer *p = PEER(e, i = e->act[k]);
		if (p->gone || (p->state != C_DIAL && p->state != C_WAIT))
			continue;
		if (p->state == C_DIAL && e->hb > 0 && now - p->dial_at > e->hb)
			/* a live engine answers (or declines) a dial as fast as a ping */
			loom_tcp_peer_lost(e, i, "no answer to our dial within LOOM_HEARTBEAT");
		else if (p->until < now)
			loom_tcp_peer_lost(e, i, p->tries
					   ? "it declined every hello we sent within "
					     "LOOM_BOOTSTRAP_TIMEOUT (another LOOM_JOB_SECRET?)"
					   : "its listening socket took no connection within "
					     "LOOM_BOOTSTRAP_TIMEOUT");
		else if (p->state == C_WAIT && p->retry_at <= now)
			loom_tcp_dial_start(e, i);
	}
}

/* ---- the accepting side ---- */

/* a hello that proved the key (the acceptor calls this with e->lock held) */
static int hello_accepted(void *arg, const struct loom_hs_peer *hp)
{
	struct loom_engine *e = arg;
	struct mesh_hello h;
	struct peer *p;
	memcpy(&h, hp->payload, sizeof h);
	if (h.nonce == e->hello.nonce && hp->size > e->n && hp->rank >= 0 && hp->rank < hp->size)
		return LOOM_HS_DECLINE;  /* this world, grown where this rank has not grown yet
					  * (core/comm_grow.c): it dials again */
	if (h.nonce != e->hello.nonce || hp->size != e->n || hp->rank < 0 || hp->rank >= e->n ||
	    hp->rank == e->self)
		return 0;  /* another world of the same key */
	if (!(p = loom_tcp_peer_get(e, hp->rank)))
		return 0;
	if (p->gone || p->state == C_UP)
		return LOOM_HS_DECLINE;  /* the loser of a race whose winner came first, or
					  * a rank lost or fenced: out for good */
	if (p->state == C_DIAL && hp->rank > e->self)
		return LOOM_HS_DECLINE;  /* ours, dialed by the lower rank, wins */
	if (loom_hs_reply(e->key, hp, NULL, 0, NULL, loom_now() + 5.0))
		return 0;
	conn_up(e, hp->rank, hp->fd);
	return 1;
}

/* the hello this rank says and the acceptor's settings (e->key set) */
void loom_tcp_hello_init(struct loom_engine *e, const struct loom_engine_cfg *cfg)
{
	e->hello.nonce = cfg->nonce;
	snprintf(e->hs_what, sizeof e->hs_what, "rank %d's mesh port", cfg->rank);
	e->hs.key = e->key;
	e->hs.kind = LOOM_HS_MESH;
	e->hs.plen = sizeof e->hello;
	e->hs.what = e->hs_what;
	e->hs.on_peer = hello_accepted;
	e->hs.arg = e;
	e->hs.self = cfg->rank;  /* a hello must be meant for this rank */
}
