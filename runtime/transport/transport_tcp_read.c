/* runtime/transport/transport_tcp_read.c: what comes from a peer. Its
 * bytes are read header by header, each header handed to the handler of
 * its kind (data and the rendezvous: transport_tcp_match.c; the control
 * messages, goodbye, abort and timeout diagnosis: here), and its payload
 * read straight into the posted receive, into a buffer kept for a
 * receive not posted yet, or dropped. A peer gets at most BURST bytes a
 * call, so one busy peer does not starve the others. Every function here
 * runs with e->lock held. */
#include "transport/transport_tcp_internal.h"

#include <stdio.h>
#include <sys/socket.h>

/* ---- control messages that come ---- */

/* it sends nothing after its goodbye: what we still wait for from it
 * never comes */
static void got_bye(struct peer *p)
{
	p->bye = 1;
	loom_tcp_fail_list(&p->posted);
	p->posted_tail = NULL;
	loom_tcp_fail_list(&p->bound);
	loom_tcp_fail_list(&p->rts_wait);
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
		if (!(r = loom_tcp_ctl_new(i, h->ctx, CTL_ABORT, h->aux)))
			break;
		loom_tcp_enqueue_send(e, i, r);
	}
}

/* a control message came from peer from */
static void got_control(struct loom_engine *e, int from, const struct wire *h)
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
		struct loom_treq *r = loom_tcp_ctl_new(from, h->ctx, CTL_STATUS_REP, entered);
		if (!r)
			return;
		loom_tcp_enqueue_send(e, from, r);
	}
}

/* ---- receiving ---- */

/* a header came whole: to the handler of its kind; 0, or -1 when the
 * peer was lost over it */
static int got_header(struct loom_engine *e, int i, struct peer *p)
{
	struct wire h;
	memcpy(&h, p->rh, HDR_LEN);
	if (h.magic != WIRE_MAGIC) {
		loom_tcp_peer_lost(e, i, "garbage on the connection");
		return -1;
	}
	switch (h.type) {
	case T_RTS:
		return loom_tcp_got_rts(e, i, &h);
	case T_CTS:
		loom_tcp_got_cts(e, i, &h);
		return 0;
	case T_DATA:
		return loom_tcp_got_data(e, i, &h);
	case T_RDATA:
		loom_tcp_got_rdata(e, i, &h);
		return 0;
	case T_PING:
		return 0;   /* it is alive: p->heard says so */
	case T_FENCE: {
		char why[80];
		snprintf(why, sizeof why, "rank %d counts it failed (a fence notice came)", i);
		loom_tcp_self_fence(e, why);
		return -1;
	}
	default:
		got_control(e, i, &h);
		return 0;
	}
}

/* the next bytes of p's payload, at most budget: into the posted
 * receive, the kept buffer, or the scratch to be dropped */
static ssize_t recv_payload(struct loom_engine *e, struct peer *p, size_t budget)
{
	char *dst;
	size_t want = p->rleft;
	if (p->rt)
		dst = p->rt->buf + p->rpos;
	else if (p->ru)
		dst = p->ru->buf + p->rpos;
	else {
		dst = e->scratch;
		if (want > sizeof e->scratch)
			want = sizeof e->scratch;
	}
	if (want > budget)
		want = budget;
	return recv(p->fd, dst, want, 0);
}

/* read what is there from peer i; 0, or -1 when the peer went away */
int loom_tcp_do_read(struct loom_engine *e, int i)
{
	struct peer *p = PEER(e, i);
	size_t budget = BURST;
	while (!p->gone && budget) {
		ssize_t n = p->rstate == 0 ? recv(p->fd, p->rh + p->rhoff, HDR_LEN - p->rhoff, 0)
					   : recv_payload(e, p, budget);
		if (n == 0) {
			loom_tcp_peer_lost(e, i,
					   "connection closed (process exited or was killed)");
			return -1;
		}
		if (n < 0) {
			int rc = tcp_io_failed(e, i);
			if (rc > 0)
				continue;
			return rc;
		}
		p->heard = loom_now();
		budget -= (size_t)n < budget ? (size_t)n : budget;
		if (p->rstate == 0) {
			p->rhoff += (size_t)n;
			if (p->rhoff < HDR_LEN)
				continue;
			p->rhoff = 0;
			if (got_header(e, i, p) < 0)
				return -1;
		} else {
			p->rleft -= (size_t)n;
			p->rpos += (size_t)n;
		}
		if (p->rstate == 1 && p->rleft == 0)
			loom_tcp_payload_done(p);
	}
	return 0;
}
