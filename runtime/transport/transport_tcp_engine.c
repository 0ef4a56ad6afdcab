/* runtime/transport/transport_tcp_engine.c: the TCP engine's thread and
 * life. One thread per process polls its wake-up, the listening socket
 * and the hellos in progress there, and each made peer's connection or
 * dial; it holds e->lock except in poll, so the application's threads
 * post, pull and cancel between its rounds. At destroy every connection
 * says goodbye and waits, bounded, for the peer's before it closes, so
 * neither side loses what the other still reads. */
#include "transport/transport_tcp_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/crypto.h>

/* ---- the thread ---- */

/* one round's poll: the wake-up, the listener and the hellos in
 * progress on it, then each peer's connection or dial (and a stray dial) */
struct pollset {
	struct pollfd *pf;
	int *who;          /* the peer of each entry; -1: the engine's own */
	size_t cap;
	int n, lis, acc0, nacc;  /* entries; the listener's; the acceptor's first, count */
};

/* room for a round with every made peer (e->lock held, dropped for a
 * pause when there is no memory: -1, try again) */
static int pollset_fit(struct loom_engine *e, struct pollset *ps)
{
	size_t need = 2 * (size_t)e->nact + 2 + LOOM_HS_PENDING, c2 = 2 * need;
	struct pollfd *pf2;
	int *who2;
	if (need <= ps->cap)
		return 0;
	pf2 = realloc(ps->pf, c2 * sizeof *pf2);
	who2 = pf2 ? realloc(ps->who, c2 * sizeof *who2) : NULL;
	if (pf2)
		ps->pf = pf2;
	if (who2)
		ps->who = who2;
	if (!pf2 || !who2) {
		/* no room to watch every connection: wait for memory */
		pthread_mutex_unlock(&e->lock);
		LOOM_ERR("engine: out of memory for %d connections", e->nact);
		usleep(100000);
		pthread_mutex_lock(&e->lock);
		return -1;
	}
	ps->cap = c2;
	return 0;
}

static void pollset_add(struct pollset *ps, int fd, short events, int who)
{
	ps->pf[ps->n].fd = fd;
	ps->pf[ps->n].events = events;
	ps->pf[ps->n].revents = 0;
	ps->who[ps->n++] = who;
}

/* the round's entries; returns when poll must return at the latest
 * (wake, or earlier for a hello's, a dial's or a retry's deadline) */
static double pollset_fill(struct loom_engine *e, struct pollset *ps, double wake)
{
	int i, k;
	ps->n = 0;
	ps->lis = -1;
	ps->acc0 = ps->nacc = 0;
	pollset_add(ps, e->evfd, POLLIN, -1);
	if (e->listen_fd >= 0 && e->acc) {
		ps->lis = ps->n;
		pollset_add(ps, e->listen_fd, POLLIN, -1);
		ps->acc0 = ps->n;
		ps->nacc = loom_hs_acceptor_poll(e->acc, ps->pf + ps->n, &wake);
		for (k = 0; k < ps->nacc; k++) {
			ps->pf[ps->n].revents = 0;
			ps->who[ps->n++] = -1;
		}
	}
	for (k = 0; k < e->nact; k++) {
		struct peer *p = PEER(e, i = e->act[k]);
		if (i == e->self || p->gone)
			continue;
		if (p->state == C_UP) {
			pollset_add(ps, p->fd, POLLIN | (p->sq ? POLLOUT : 0), i);
		} else if (p->state == C_DIAL) {
			pollset_add(ps, p->dial->fd, p->dial->events, i);
			if (p->until < wake)
				wake = p->until;
		} else {
			if (p->state == C_WAIT && p->retry_at < wake)
				wake = p->retry_at;
			continue;
		}
		if (p->stray)
			pollset_add(ps, p->stray->fd, p->stray->events, i);
	}
	return wake;
}

/* what poll said of one peer's entry */
static void serve_peer(struct loom_engine *e, const struct pollfd *pf, int pi)
{
	struct peer *p = PEER(e, pi);
	if (p->gone || !pf->revents)
		return;
	if (p->stray && p->stray->fd == pf->fd) {
		loom_tcp_stray_step(e, p);
		return;
	}
	if (p->state == C_DIAL) {
		if (p->dial->fd == pf->fd)
			loom_tcp_dial_step(e, pi);
		return;
	}
	if (p->state != C_UP || p->fd != pf->fd)
		return;
	if (pf->revents & (POLLIN | POLLHUP | POLLERR))
		if (loom_tcp_do_read(e, pi) < 0)
			return;
	if (p->sq)
		loom_tcp_do_write(e, pi);
}

/* what poll said, entry by entry: the wake-up drained, the peers
 * served, the acceptor stepped */
static void pollset_serve(struct loom_engine *e, const struct pollset *ps)
{
	int i;
	if (ps->pf[0].revents) {
		uint64_t v;
		if (read(e->evfd, &v, sizeof v) < 0) {
			/* nothing to drain */
		}
	}
	for (i = ps->acc0 + ps->nacc; i < ps->n; i++)
		serve_peer(e, &ps->pf[i], ps->who[i]);
	if (ps->lis >= 0) {
		int rc = loom_hs_acceptor_step(e->acc, e->listen_fd, ps->pf[ps->lis].revents & POLLIN,
					       ps->pf + ps->acc0, ps->nacc, e->n);
		if (rc < 0)
			LOOM_WARN("engine: accepting a connection failed: %s", loom_strerror(rc));
	}
}

static void *engine_main(void *arg)
{
	struct loom_engine *e = arg;
	struct pollset ps = { 0 };
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	ps.cap = 2 * 16 + 2 + LOOM_HS_PENDING;  /* a stray dial per peer at most; grows */
	ps.pf = calloc(ps.cap, sizeof *ps.pf);
	ps.who = calloc(ps.cap, sizeof *ps.who);
	if (!ps.pf || !ps.who) {
		LOOM_ERR("engine: out of memory");
		free(ps.pf);
		free(ps.who);
		return NULL;
	}
	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		double now = loom_now(), wake;
		int k;
		wake = loom_tcp_heartbeat_round(e, now, now + 0.5);
		if (pollset_fit(e, &ps))
			continue;
		wake = pollset_fill(e, &ps, wake);
		pthread_mutex_unlock(&e->lock);
		k = poll(ps.pf, (nfds_t)ps.n, wake > now ? (int)((wake - now) * 1000) + 1 : 0);
		pthread_mutex_lock(&e->lock);
		if (k < 0)
			continue;
		pollset_serve(e, &ps);
		loom_tcp_dial_timers(e, loom_now());
	}
	pthread_mutex_unlock(&e->lock);
	free(ps.pf);
	free(ps.who);
	return NULL;
}

/* ---- create and destroy ---- */

/* LOOM_UNEXPECTED_MAX, LOOM_BOOTSTRAP_TIMEOUT */
static void engine_settings(struct loom_engine *e)
{
	double m = loom_env_double("LOOM_UNEXPECTED_MAX", 4.0 * (1ull << 30));
	e->unexp_max = m >= 1 ? (size_t)m : 4ull << 30;
	e->connect_tmo = loom_env_double("LOOM_BOOTSTRAP_TIMEOUT", 120);
	if (!(e->connect_tmo > 0))
		e->connect_tmo = 120;
}

int loom_engine_create(struct loom_engine **out, const struct loom_engine_cfg *cfg, int listen_fd,
		       uint32_t *ip, uint16_t *port, const uint8_t *key,
		       const struct loom_engine_hooks *hooks)
{
	struct loom_engine *e = calloc(1, sizeof *e);
	if (hooks->resolve) {
		/* each address is looked up at the peer's first dial */
		free(ip);
		free(port);
		ip = NULL;
		port = NULL;
	}
	if (!e) {
		free(ip);
		free(port);
		return LOOM_ERR_NOMEM;
	}
	e->ip = ip;
	e->port = port;
	pthread_mutex_init(&e->lock, NULL);
	e->n = cfg->size;
	e->hooks = hooks;
	e->self = cfg->rank;
	e->arg = cfg->arg;
	e->timeout = cfg->timeout;
	e->listen_fd = listen_fd;
	e->evfd = -1;
	engine_settings(e);
	loom_tcp_heartbeat_init(e);
	memcpy(e->key, key, sizeof e->key);
	loom_tcp_hello_init(e, cfg);
	*out = e;
	if (cfg->size > 1) {
		int fl = listen_fd >= 0 ? fcntl(listen_fd, F_GETFL) : -1;
		if (fl >= 0)
			fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK);
		e->acc = loom_hs_acceptor_new(&e->hs);
		e->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (!e->acc || e->evfd < 0 || pthread_create(&e->thr, NULL, engine_main, e) != 0) {
			LOOM_ERR("cannot start the progress thread: %s", strerror(errno));
			return LOOM_ERR_SYSTEM;
		}
		e->have_thr = 1;
	}
	return LOOM_SUCCESS;
}

/* peer p (rank i) has not parted: a connection made or under way whose
 * queue is not out, or whose peer has not said goodbye */
static int unparted(struct loom_engine *e, int i, const struct peer *p)
{
	return i != e->self && !p->gone && p->state != C_IDLE &&
	       (p->state != C_UP || p->sq || !p->bye);
}

/* every connection's queue is out and the peer said goodbye too (or is
 * gone): closing now loses nothing either side still reads */
static int all_parted(struct loom_engine *e)
{
	int k;
	for (k = 0; k < e->nact; k++)
		if (unparted(e, e->act[k], PEER(e, e->act[k])))
			return 0;
	return 1;
}

/* goodbye on every connection (made or under way); each side then waits
 * for the other's, up to min(timeout, 30 s), before anyone closes */
static void part(struct loom_engine *e)
{
	double tmo = e->timeout < 30 ? e->timeout : 30, until;
	int i, k, parted;
	pthread_mutex_lock(&e->lock);
	e->closing = 1;
	for (k = 0; k < e->nact; k++)
		if ((i = e->act[k]) != e->self && PEER(e, i)->state != C_IDLE)
			loom_tcp_say_bye(e, i);
	pthread_mutex_unlock(&e->lock);
	until = loom_now() + tmo;
	for (;;) {
		pthread_mutex_lock(&e->lock);
		parted = all_parted(e);
		pthread_mutex_unlock(&e->lock);
		if (parted || loom_now() > until || !e->have_thr)
			break;
		usleep(1000);
	}
	if (!parted && e->have_thr) {
		char who[256] = "";
		size_t l = 0;
		pthread_mutex_lock(&e->lock);
		for (k = 0; k < e->nact && l + 12 < sizeof who; k++) {
			i = e->act[k];
			if (unparted(e, i, PEER(e, i)))
				l += (size_t)snprintf(who + l, sizeof who - l, "%s%d", l ? "," : "", i);
		}
		pthread_mutex_unlock(&e->lock);
		LOOM_INFO("finalize: no goodbye from rank(s) %s within %.0f s; closing anyway", who, tmo);
	}
}

/* the thread stopped: every peer's connection, dials and kept messages go */
static void free_peers(struct loom_engine *e)
{
	int i, k;
	for (k = 0; k < e->nact; k++) {
		struct peer *p = PEER(e, i = e->act[k]);
		struct umsg *u, *nu;
		p->bye = 1;
		if (p->fd >= 0 && i != e->self) {
			shutdown(p->fd, SHUT_WR);
			close(p->fd);
		}
		loom_tcp_drop_dial(&p->dial);
		loom_tcp_drop_dial(&p->stray);
		loom_tcp_fail_list(&p->sq);
		for (u = p->unexp; u; u = nu) {
			nu = u->next;
			free(u->buf);
			free(u);
		}
		if (p->ru) {
			free(p->ru->buf);
			free(p->ru);
		}
	}
	for (k = 0; k < e->nact; k++)
		free(PEER(e, e->act[k]));
	loom_intmap_clear(&e->peers);
}

void loom_engine_destroy(struct loom_engine *e)
{
	if (!e)
		return;
	part(e);
	pthread_mutex_lock(&e->lock);
	e->stop = 1;
	LOOM_INFO("finalize: the engine made the state of %d peer(s) of %d world ranks", e->nact, e->n);
	LOOM_INFO("finalize: %llu message(s), %llu bytes, came before their receive was posted and were kept",
		  (unsigned long long)e->early_msgs, (unsigned long long)e->early_bytes);
	pthread_mutex_unlock(&e->lock);
	if (e->have_thr) {
		loom_tcp_wake_engine(e);
		pthread_join(e->thr, NULL);
	}
	loom_hs_acceptor_free(e->acc);
	free_peers(e);
	if (e->evfd >= 0)
		close(e->evfd);
	if (e->listen_fd >= 0)
		close(e->listen_fd);
	OPENSSL_cleanse(e->key, sizeof e->key);
	pthread_mutex_destroy(&e->lock);
	free(e->act);
	free(e->ip);
	free(e->port);
	free(e);
}
