/* runtime/transport/transport_tcp.c: the TCP transport's entry points
 * (post, pull, cancel, control, peer_gone; a world that grows), called by the layers above
 * from any thread: each takes e->lock for its step. How the engine's
 * files divide the work: transport_tcp_internal.h. */
#include "transport/transport_tcp_internal.h"

#include <stdlib.h>

static void post_send(struct loom_engine *e, struct peer *p, struct loom_treq *r)
{
	tcp_pack(r, T_DATA, 0);
	if (r->peer == e->self) {
		loom_tcp_send_self(p, r);
	} else if (r->len >= RNDV_BYTES && !r->eager && !p->gone) {
		/* announced; its bytes go when the peer's T_CTS comes */
		r->rid = ++p->next_rid;
		r->next = p->rts_wait;
		p->rts_wait = r;
		loom_tcp_send_hdr(e, r->peer, T_RTS, r->ctx, r->tag, r->len, r->rid);
	} else {
		loom_tcp_enqueue_send(e, r->peer, r);
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
	if (!(p = loom_tcp_peer_get(e, r->peer)))
		tcp_complete(r, LOOM_ERR_NOMEM);
	else if (r->kind == TREQ_SEND)
		post_send(e, p, r);
	else
		loom_tcp_post_recv(e, p, r);
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
		loom_tcp_do_read(e, peer);
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
		loom_tcp_cancel_send(e, p, r);
	else
		loom_tcp_cancel_recv(p, r);
	r->status = LOOM_ERR_TIMEOUT;
	atomic_store(&r->done, 1);
	pthread_mutex_unlock(&e->lock);
}

void loom_tcp_control(struct loom_engine *e, int peer, int type, uint64_t ctx, int64_t a)
{
	struct loom_treq *r;
	if (!e || peer == e->self)
		return;
	r = loom_tcp_ctl_new(peer, ctx, (uint32_t)type, a);
	if (!r)
		return;
	pthread_mutex_lock(&e->lock);
	if (loom_tcp_peer_get(e, peer))
		loom_tcp_enqueue_send(e, peer, r);
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

/* ---- a world that grows (core/comm_grow.c) ---- */

/* the tables of n ranks, the known addresses kept (zeros where the
 * addresses are looked up at the first dial) */
static int grow_tables(struct loom_engine *e, int n)
{
	uint32_t *ip = calloc((size_t)n, sizeof *ip);
	uint16_t *port = calloc((size_t)n, sizeof *port);
	if (!ip || !port) {
		free(ip);
		free(port);
		return LOOM_ERR_NOMEM;
	}
	if (e->ip)
		memcpy(ip, e->ip, (size_t)e->n * sizeof *ip);
	if (e->port)
		memcpy(port, e->port, (size_t)e->n * sizeof *port);
	free(e->ip);
	free(e->port);
	e->ip = ip;
	e->port = port;
	return LOOM_SUCCESS;
}

int loom_engine_grow(struct loom_engine *e, int size, const uint32_t *ip, const uint16_t *port)
{
	int rc, i;
	if (!e || size <= e->n)
		return LOOM_ERR_INVALID;
	pthread_mutex_lock(&e->lock);
	rc = grow_tables(e, size);
	if (rc == LOOM_SUCCESS) {
		for (i = e->n; i < size; i++) {
			e->ip[i] = ip[i - e->n];
			e->port[i] = port[i - e->n];
		}
		e->n = size;
	}
	pthread_mutex_unlock(&e->lock);
	return rc;
}

void loom_engine_addr(struct loom_engine *e, int i, uint32_t *ip, uint16_t *port)
{
	struct peer *p;
	*ip = 0;
	*port = 0;
	if (!e || i < 0)
		return;
	pthread_mutex_lock(&e->lock);
	if (i < e->n && e->ip && e->port && e->port[i]) {
		*ip = e->ip[i];
		*port = e->port[i];
	} else if ((p = PEER(e, i)) && p->port) {
		*ip = p->ip;
		*port = p->port;
	}
	pthread_mutex_unlock(&e->lock);
	if (!*port && i < e->n && e->hooks->resolve && e->hooks->resolve(e->arg, i, ip, port) != LOOM_SUCCESS) {
		*ip = 0;
		*port = 0;
	}
}

const uint8_t *loom_engine_key(const struct loom_engine *e)
{
	return e->key;
}
