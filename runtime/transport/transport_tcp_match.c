/* runtime/transport/transport_tcp_match.c: the TCP engine's matching. A
 * receive is posted per peer and matched in FIFO order by (communicator
 * context, tag); a message that comes before its receive is kept (its
 * bytes, or for a large one only its announcement) until one is posted,
 * bounded by LOOM_UNEXPECTED_MAX a peer. A large message's bytes go only
 * once its receive is posted (the rendezvous: T_RTS, T_CTS, T_RDATA;
 * transport_tcp_internal.h). Every function here runs with e->lock held. */
#include "transport/transport_tcp_internal.h"

#include <stdlib.h>
#include <string.h>

/* the request numbered rid, removed from a list; NULL: none */
static struct loom_treq *take_rid(struct loom_treq **list, uint64_t rid)
{
	struct loom_treq **pp;
	for (pp = list; *pp; pp = &(*pp)->next)
		if ((*pp)->rid == rid) {
			struct loom_treq *r = *pp;
			*pp = r->next;
			r->next = NULL;
			return r;
		}
	return NULL;
}

/* receive r (taken off the posted list) meets the announced message rid
 * of len bytes: it waits for the bytes; the sender is told to send them
 * (also when the lengths differ: it must not wait forever; the bytes
 * are then thrown away here) */
static void bind_rts(struct loom_engine *e, int i, struct loom_treq *r, uint64_t len, uint64_t rid)
{
	struct peer *p = PEER(e, i);
	if (r->len != len) {
		LOOM_ERR("rank %d sent %llu bytes where %zu were expected (ranks out of step?)", i,
			 (unsigned long long)len, r->len);
		tcp_complete(r, LOOM_ERR_MISMATCH);
	} else {
		r->rid = rid;
		r->next = p->bound;
		p->bound = r;
	}
	loom_tcp_send_hdr(e, i, T_CTS, r->ctx, r->tag, 0, rid);
}

/* a posted receive for (ctx, tag) from p, removed from the list */
static struct loom_treq *take_posted(struct peer *p, uint64_t ctx, uint64_t tag)
{
	struct loom_treq *r, *prev = NULL;
	for (r = p->posted; r; prev = r, r = r->next) {
		if (r->ctx == ctx && r->tag == tag) {
			if (prev)
				prev->next = r->next;
			else
				p->posted = r->next;
			if (p->posted_tail == r)
				p->posted_tail = prev;
			r->next = NULL;
			return r;
		}
	}
	return NULL;
}

static void deliver_kept(struct loom_treq *r, struct umsg *u)
{
	if (u->from)
		u->from->unexp_bytes -= u->len;
	if (u->len != r->len) {
		LOOM_ERR("message of %zu bytes where %zu were expected (ranks out of step?)",
			 u->len, r->len);
		tcp_complete(r, LOOM_ERR_MISMATCH);
	} else {
		if (u->len)
			memcpy(r->buf, u->buf, u->len);
		tcp_complete(r, LOOM_SUCCESS);
	}
	free(u->buf);
	free(u);
}

/* u at the end of p's early messages (kept bytes or an announcement) */
static void append_unexp(struct peer *p, struct umsg *u)
{
	u->next = NULL;
	if (p->unexp_tail)
		p->unexp_tail->next = u;
	else
		p->unexp = u;
	p->unexp_tail = u;
}

static void keep(struct peer *p, struct umsg *u)
{
	struct loom_treq *r = take_posted(p, u->ctx, u->tag);
	if (r) {
		deliver_kept(r, u);
		return;
	}
	append_unexp(p, u);
}

/* the first early message for (ctx, tag) from p, removed; NULL: none */
static struct umsg *take_unexp(struct peer *p, uint64_t ctx, uint64_t tag)
{
	struct umsg *u, *prev = NULL;
	for (u = p->unexp; u; prev = u, u = u->next)
		if (u->ctx == ctx && u->tag == tag)
			break;
	if (!u)
		return NULL;
	if (prev)
		prev->next = u->next;
	else
		p->unexp = u->next;
	if (p->unexp_tail == u)
		p->unexp_tail = prev;
	return u;
}

void loom_tcp_post_recv(struct loom_engine *e, struct peer *p, struct loom_treq *r)
{
	struct umsg *u = take_unexp(p, r->ctx, r->tag);
	if (u) {
		if (u->rts) {
			p->unexp_bytes -= sizeof *u;
			bind_rts(e, r->peer, r, u->len, u->rid);
			free(u);
		} else {
			deliver_kept(r, u);
		}
	} else if (p->gone || p->bye) {
		tcp_complete(r, LOOM_ERR_PEER_LOST);
	} else {
		if (p->posted_tail)
			p->posted_tail->next = r;
		else
			p->posted = r;
		p->posted_tail = r;
		/* the receiver dials too: a sender that died before its
		 * first message is found out (its port refuses us) */
		if (p->state == C_IDLE && r->peer != e->self)
			loom_tcp_dial_start(e, r->peer);
	}
}

void loom_tcp_send_self(struct peer *p, struct loom_treq *r)
{
	struct umsg *u = calloc(1, sizeof *u);
	if (u)
		u->buf = malloc(r->len ? r->len : 1);
	if (!u || !u->buf) {
		free(u);
		tcp_complete(r, LOOM_ERR_NOMEM);
		return;
	}
	u->ctx = r->ctx;
	u->tag = r->tag;
	u->len = r->len;
	if (r->len)
		memcpy(u->buf, r->buf, r->len);
	keep(p, u);
	tcp_complete(r, LOOM_SUCCESS);
}

void loom_tcp_cancel_recv(struct peer *p, struct loom_treq *r)
{
	struct loom_treq *q, *prev = NULL;
	if (loom_tcp_unlink_req(&p->bound, r))
		return;  /* its T_CTS went: the bytes that come are dropped */
	for (q = p->posted; q && q != r; prev = q, q = q->next)
		;
	if (q) {
		if (prev)
			prev->next = r->next;
		else
			p->posted = r->next;
		if (p->posted_tail == r)
			p->posted_tail = prev;
	}
	if (p->rstate == 1 && p->rt == r)
		p->rt = NULL;   /* the rest of the payload is discarded */
}

/* ---- headers that came, by kind ---- */

int loom_tcp_got_rts(struct loom_engine *e, int i, const struct wire *h)
{
	struct peer *p = PEER(e, i);
	struct loom_treq *r = take_posted(p, h->ctx, h->tag);
	struct umsg *u;
	if (r) {
		bind_rts(e, i, r, h->len, (uint64_t)h->aux);
		return 0;
	}
	/* no receive yet: remember the announcement, no bytes; it counts as
	 * its own size against LOOM_UNEXPECTED_MAX */
	if (sizeof *u > e->unexp_max - p->unexp_bytes) {
		LOOM_ERR("rank %d announced more messages nobody has asked for yet than LOOM_UNEXPECTED_MAX (%zu bytes) lets one peer have waiting",
			 i, e->unexp_max);
		loom_tcp_peer_lost(e, i, "too many messages announced ahead of their receives");
		return -1;
	}
	if (!(u = calloc(1, sizeof *u))) {
		loom_tcp_peer_lost(e, i, "out of memory for a rendezvous message");
		return -1;
	}
	u->from = p;
	p->unexp_bytes += sizeof *u;
	u->ctx = h->ctx;
	u->tag = h->tag;
	u->len = h->len;
	u->rts = 1;
	u->rid = (uint64_t)h->aux;
	append_unexp(p, u);
	return 0;
}

void loom_tcp_got_cts(struct loom_engine *e, int i, const struct wire *h)
{
	struct loom_treq *r = take_rid(&PEER(e, i)->rts_wait, (uint64_t)h->aux);
	if (r) {  /* else cancelled meanwhile */
		tcp_pack(r, T_RDATA, (int64_t)r->rid);
		loom_tcp_enqueue_send(e, i, r);
	}
}

/* the bytes of a message nobody has asked for yet go to a buffer of
 * their own: 0, or -1 when the peer is dropped for it */
static int keep_early(struct loom_engine *e, int i, struct peer *p, const struct wire *h)
{
	/* the header's length is the peer's word: bound what it makes us
	 * hold before anyone asked for it */
	if (h->len > e->unexp_max - p->unexp_bytes) {
		LOOM_ERR("rank %d sent %llu bytes nobody has asked for yet, over the %zu bytes "
			 "LOOM_UNEXPECTED_MAX lets one peer have waiting (%zu already): out of memory for it",
			 i, (unsigned long long)h->len, e->unexp_max, p->unexp_bytes);
		loom_tcp_peer_lost(e, i, "too many bytes sent ahead of their receives");
		return -1;
	}
	p->ru = calloc(1, sizeof *p->ru);
	if (p->ru)
		p->ru->buf = malloc(h->len ? h->len : 1);
	if (!p->ru || !p->ru->buf) {
		loom_tcp_peer_lost(e, i, "out of memory for an early message");
		return -1;
	}
	p->ru->ctx = h->ctx;
	p->ru->tag = h->tag;
	p->ru->len = h->len;
	p->ru->from = p;
	p->unexp_bytes += h->len;
	e->early_msgs++;
	e->early_bytes += h->len;
	return 0;
}

int loom_tcp_got_data(struct loom_engine *e, int i, const struct wire *h)
{
	struct peer *p = PEER(e, i);
	p->ru = NULL;
	p->rt = take_posted(p, h->ctx, h->tag);
	if (p->rt && p->rt->len != h->len) {
		LOOM_ERR("rank %d sent %llu bytes where %zu were expected (ranks out of step?)",
			 i, (unsigned long long)h->len, p->rt->len);
		tcp_complete(p->rt, LOOM_ERR_MISMATCH);
		p->rt = NULL;
	} else if (!p->rt && keep_early(e, i, p, h)) {
		return -1;
	}
	p->rleft = h->len;
	p->rpos = 0;
	p->rstate = 1;
	return 0;
}

void loom_tcp_got_rdata(struct loom_engine *e, int i, const struct wire *h)
{
	struct peer *p = PEER(e, i);
	p->ru = NULL;
	/* NULL: the receive was cancelled or its length was wrong: the bytes
	 * are read and dropped */
	p->rt = take_rid(&p->bound, (uint64_t)h->aux);
	if (p->rt && p->rt->len != h->len) {
		tcp_complete(p->rt, LOOM_ERR_MISMATCH);
		p->rt = NULL;
	}
	p->rleft = h->len;
	p->rpos = 0;
	p->rstate = 1;
}

void loom_tcp_payload_done(struct peer *p)
{
	p->rstate = 0;
	if (p->rt)
		tcp_complete(p->rt, LOOM_SUCCESS);
	else if (p->ru)
		keep(p, p->ru);
	p->rt = NULL;
	p->ru = NULL;
}
