/* runtime/transport/transport_tcp_heartbeat.c: a peer that stops
 * answering without closing its connection (its process stopped, its
 * node without power or network) is declared lost, and a process that
 * may have been declared lost fences itself (docs/fault-tolerance.md).
 *
 * With LOOM_HEARTBEAT = H seconds (0: off) the engine thread
 *   - sends a 40-byte ping on every connection whose queue is empty, at
 *     most every H/4: 4/H messages a second per connection held, none
 *     on a rank that holds no connection;
 *   - declares a connected peer lost when nothing came from it for H
 *     (every byte read counts, pings or data), and gives up a dial that
 *     got no answer for H (transport_tcp_conn.c): a live engine answers
 *     or declines a hello as fast as a ping (dials declined are tried
 *     again until LOOM_BOOTSTRAP_TIMEOUT, as before);
 *   - fences its own process when its own loop did not run for H/2: the
 *     process was stopped or starved long enough that its peers may have
 *     declared it lost (a peer that ran sees silence only past H, and
 *     this side's pings, at most H/4 apart, stop only while it does not
 *     run), so it must not go on with them.
 * A fenced process fails every communicator that has another member
 * (LOOM_ERR_REVOKED), holds no connection, dials nobody and takes
 * nobody's hello: it cannot rejoin the survivors or form a second world
 * with other fenced ranks. Survivors fence the members their agreement
 * found failed (loom_tcp_fence): the connection closes after a fence
 * notice that makes a live peer fence itself too, and its later hellos
 * are declined. Every function here runs with e->lock held, but the
 * entry points at the end, which take it. */
#include "transport/transport_tcp_internal.h"

#include <stdio.h>
#include <time.h>
#include <sys/socket.h>

/* the engine's own gap is measured on a clock that also counts a
 * suspension of the whole machine: a node resumed is a node stopped */
static double gap_clock(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_BOOTTIME, &ts))
		return loom_now();
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* LOOM_HEARTBEAT: seconds, 0 off; at least 1 */
void loom_tcp_heartbeat_init(struct loom_engine *e)
{
	double h = loom_env_double("LOOM_HEARTBEAT", 10);
	e->hb = h > 0 ? (h < 1 ? 1 : h) : 0;
	e->hb_round = gap_clock();
}

/* the fence notice, written straight to the socket when nothing is half
 * sent on it (else the close alone says it) */
static void send_fence_notice(struct peer *p)
{
	struct wire h = { WIRE_MAGIC, T_FENCE, 0, 0, 0, 0 };
	if (p->state != C_UP || p->fd < 0 || p->shoff || (p->sq && p->sq->off))
		return;
	if (send(p->fd, &h, HDR_LEN, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* its buffer is full: the closed connection tells it */
	}
}

/* peer i is out for good: told, closed, and what waits on it fails */
static void fence_peer(struct loom_engine *e, int i, const char *why)
{
	struct peer *p = PEER(e, i);
	if (!p || p->gone)
		return;
	send_fence_notice(p);
	loom_tcp_peer_lost(e, i, why);
}

void loom_tcp_self_fence(struct loom_engine *e, const char *why)
{
	int k;
	if (e->fenced || e->closing)
		return;
	e->fenced = 1;
	LOOM_ERR("this rank is fenced: %s; every communicator with other members fails "
		 "(LOOM_ERR_REVOKED) and no connection is made again", why);
	for (k = 0; k < e->nact; k++) {
		struct peer *p = PEER(e, e->act[k]);
		if (e->act[k] == e->self || p->gone)
			continue;
		p->bye = 1;   /* no "rank lost" per peer: the line above says it */
		loom_tcp_peer_lost(e, e->act[k], why);
	}
	e->hooks->peer_lost(e->arg, -1, LOOM_ERR_REVOKED);
}

/* pings out, silent peers lost: one pass over the made peers */
static void beat_peers(struct loom_engine *e, double now)
{
	char why[96];
	int k;
	snprintf(why, sizeof why, "nothing came from it for %.0f s (LOOM_HEARTBEAT)", e->hb);
	for (k = 0; k < e->nact; k++) {
		int i = e->act[k];
		struct peer *p = PEER(e, i);
		struct loom_treq *r;
		if (i == e->self || p->gone || p->state != C_UP)
			continue;
		if (!p->bye && now - p->heard > e->hb) {
			fence_peer(e, i, why);
			continue;
		}
		if (p->sq || p->bye_sent || now - p->pinged < e->hb / 4)
			continue;
		if (!(r = loom_tcp_ctl_new(i, 0, T_PING, 0)))
			return;
		p->pinged = now;
		loom_tcp_enqueue_send(e, i, r);
	}
}

/* one round of the engine's loop (e->lock held): the latest time its
 * poll may return, the earlier of wake and the next check */
double loom_tcp_heartbeat_round(struct loom_engine *e, double now, double wake)
{
	double t = gap_clock(), gap = t - e->hb_round, step;
	e->hb_round = t;
	if (e->hb <= 0 || e->closing)
		return wake;
	if (!e->fenced && gap > e->hb / 2) {
		char why[128];
		snprintf(why, sizeof why, "its engine did not run for %.1f s, more than half of "
			 "LOOM_HEARTBEAT (%.0f s): the others may have declared it lost", gap, e->hb);
		loom_tcp_self_fence(e, why);
	}
	if (!e->fenced)
		beat_peers(e, now);
	step = e->hb / 8 < 0.5 ? e->hb / 8 : 0.5;
	return now + step < wake ? now + step : wake;
}

/* ---- entry points (any thread) ---- */

void loom_tcp_fence(struct loom_engine *e, int peer)
{
	struct peer *p;
	if (!e || peer == e->self || peer < 0 || peer >= e->n)
		return;
	pthread_mutex_lock(&e->lock);
	if ((p = loom_tcp_peer_get(e, peer)) && !p->gone) {
		fence_peer(e, peer, "the survivors agreed it failed: fenced");
		p->gone = 1;  /* also never connected: its hellos are declined from now on */
	}
	pthread_mutex_unlock(&e->lock);
}

/* the engine's own gap is looked at here too: a process that comes
 * back from a stop may ask before its engine thread has run */
int loom_tcp_fenced(struct loom_engine *e)
{
	int f;
	if (!e)
		return 0;
	pthread_mutex_lock(&e->lock);
	if (e->have_thr && !e->fenced)
		loom_tcp_heartbeat_round(e, loom_now(), 0);
	f = e->fenced;
	pthread_mutex_unlock(&e->lock);
	return f;
}

int loom_tcp_probe(struct loom_engine *e, int peer)
{
	struct peer *p;
	int gone;
	if (!e || peer == e->self || peer < 0 || peer >= e->n)
		return 0;
	pthread_mutex_lock(&e->lock);
	p = loom_tcp_peer_get(e, peer);
	if (p && p->state == C_IDLE && !p->gone)
		loom_tcp_dial_start(e, peer);
	gone = !p || p->gone;
	pthread_mutex_unlock(&e->lock);
	return gone;
}
