/* runtime/transport/transport_tcp_wire.c: the TCP engine's sending. A
 * peer's send queue (the engine's own messages among the application's)
 * goes out header and payload in one sendmsg where the socket takes
 * them; the first message for a peer not connected yet begins its dial.
 * A peer gets at most BURST bytes a call, so one busy peer does not
 * starve the others. The reading side: transport_tcp_read.c. Every
 * function here runs with e->lock held. */
#include "transport/transport_tcp_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

struct loom_treq *loom_tcp_ctl_new(int peer, uint64_t ctx, uint32_t type, int64_t aux)
{
	struct loom_treq *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->kind = TREQ_SEND;
	r->peer = peer;
	r->ctx = ctx;
	r->owned = 1;
	tcp_pack(r, type, aux);
	return r;
}

void loom_tcp_send_hdr(struct loom_engine *e, int i, uint32_t type, uint64_t ctx,
		       uint64_t tag, uint64_t len, uint64_t rid)
{
	struct loom_treq *r = calloc(1, sizeof *r);
	struct wire h = { WIRE_MAGIC, type, ctx, tag, len, (int64_t)rid };
	if (!r) {
		loom_tcp_peer_lost(e, i, "out of memory for a rendezvous message");
		return;
	}
	r->kind = TREQ_SEND;
	r->peer = i;
	r->ctx = ctx;
	r->owned = 1;
	memcpy(r->hdr, &h, HDR_LEN);
	loom_tcp_enqueue_send(e, i, r);
}

void loom_tcp_enqueue_send(struct loom_engine *e, int i, struct loom_treq *r)
{
	struct peer *p = PEER(e, i);
	int was_empty = p->sq == NULL;
	r->off = 0;
	r->next = NULL;
	if (p->gone) {
		tcp_complete(r, LOOM_ERR_PEER_LOST);
		return;
	}
	if (p->sq_tail)
		p->sq_tail->next = r;
	else
		p->sq = r;
	p->sq_tail = r;
	if (p->state == C_IDLE)
		loom_tcp_dial_start(e, i);
	else if (was_empty && p->state == C_UP) {
		loom_tcp_do_write(e, i);
		if (p->sq)
			loom_tcp_wake_engine(e);
	}
}

/* r, queued for p, is taken back: announced only, or not begun, it
 * leaves the queue; half on the wire, a copy of it finishes, keeping the
 * stream whole */
void loom_tcp_cancel_send(struct loom_engine *e, struct peer *p, struct loom_treq *r)
{
	struct loom_treq *q, *prev = NULL;
	if (loom_tcp_unlink_req(&p->rts_wait, r))
		return;  /* announced, no byte sent: a later T_CTS finds nothing */
	for (q = p->sq; q && q != r; prev = q, q = q->next)
		;
	if (q && q == p->sq && (p->shoff > 0 || r->off > 0)) {
		struct loom_treq *cl = malloc(sizeof *cl);
		char *b = malloc(r->len ? r->len : 1);
		if (cl && b) {
			*cl = *r;
			memcpy(b, r->buf, r->len);
			cl->buf = b;
			cl->owned = 2;
			cl->bell = NULL;
			p->sq = cl;
			if (p->sq_tail == r)
				p->sq_tail = cl;
		} else {
			free(cl);
			free(b);
			loom_tcp_peer_lost(e, r->peer, "out of memory while cancelling");
		}
	} else if (q) {
		if (prev)
			prev->next = r->next;
		else
			p->sq = r->next;
		if (p->sq_tail == r)
			p->sq_tail = prev;
	}
}

/* what of the head of p's queue the last sendmsg took: n bytes */
static void sent(struct peer *p, size_t n)
{
	struct loom_treq *r = p->sq;
	if (p->shoff < HDR_LEN) {
		size_t h = HDR_LEN - p->shoff;
		if (n < h) {
			p->shoff += n;
			return;
		}
		p->shoff = HDR_LEN;
		n -= h;
	}
	r->off += n;
	if (r->off == r->len) {
		p->sq = r->next;
		if (!p->sq)
			p->sq_tail = NULL;
		p->shoff = 0;
		r->next = NULL;
		tcp_complete(r, LOOM_SUCCESS);
	}
}

int loom_tcp_do_write(struct loom_engine *e, int i)
{
	struct peer *p = PEER(e, i);
	size_t budget = BURST;
	while (p->sq && !p->gone && budget) {
		struct loom_treq *r = p->sq;
		struct iovec iov[2];
		struct msghdr m;
		int k = 0;
		ssize_t n;
		memset(&m, 0, sizeof m);
		if (p->shoff < HDR_LEN) {
			iov[k].iov_base = r->hdr + p->shoff;
			iov[k++].iov_len = HDR_LEN - p->shoff;
		}
		if (r->len > r->off) {
			size_t l = r->len - r->off;
			iov[k].iov_base = r->buf + r->off;
			iov[k++].iov_len = l < budget ? l : budget;
		}
		m.msg_iov = iov;
		m.msg_iovlen = (size_t)k;
		n = sendmsg(p->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			int rc = tcp_io_failed(e, i);
			if (rc > 0)
				continue;
			return rc;
		}
		budget -= (size_t)n < budget ? (size_t)n : budget;
		sent(p, (size_t)n);
	}
	return 0;
}
