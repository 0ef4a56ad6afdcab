/* runtime/transport/transport_tcp.c: the TCP transport. At most one connection per
 * pair of world ranks, made when the first message for the peer is posted
 * (so a rank holds connections only to the peers its algorithms talk to
 * over TCP), non-blocking, driven by one engine thread per process (poll),
 * which also answers control messages (abort, timeout diagnosis) while
 * the application computes, and accepts its peers' connections on the
 * listening socket it keeps for the job's life. Every connection begins
 * with the authenticated hello of transport_handshake.c (kind MESH, the
 * world's nonce as payload). When both ranks of a pair dial at once, the
 * connection dialed by the lower rank is kept: the higher one declines
 * the other quietly, and the lower one takes it and drops its own. Messages carry (communicator context,
 * tag) and are matched in FIFO order per sender; a message with no posted
 * receive is kept (eagerly) until one is posted. A sender also writes
 * directly when its queue is empty, and a receiver waiting for a small
 * message reads the socket itself (loom_tcp_pull), so small messages skip
 * the thread.
 *
 * Wire: 40-byte header {magic, type, ctx, tag, len, aux} then len bytes. */
#include "transport/transport.h"
#include "flight/flight.h"
#include "util/intmap.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <openssl/crypto.h>

#define WIRE_MAGIC 0x4c4f4f4du
#define HDR_LEN 40
#define T_DATA 1
/* Rendezvous for large messages: the sender announces one (T_RTS: its
 * tag, length and number), the receiver answers once a receive for it is
 * posted (T_CTS: the number), and only then do its bytes go (T_RDATA:
 * straight into that receive). Sent eagerly, a large message that came
 * before its receive was kept in a buffer of its own and copied again (4
 * ranks on 2 nodes, 16 MiB collectives: up to half of the bytes). Below
 * RNDV_BYTES a message goes at once (T_DATA): the round trip would cost
 * more than the copy. Point-to-point sends (r->eager) always go at once:
 * a program may send before it receives in a cycle of ranks. */
#define T_RTS 16
#define T_CTS 17
#define T_RDATA 18
#define RNDV_BYTES (64u << 10)
#define BURST (8u << 20)

struct umsg {
	uint64_t ctx, tag;
	char *buf;
	size_t len;
	struct peer *from;    /* counted in from->unexp_bytes (NULL: a send to self) */
	int rts;              /* an announced large message, no bytes yet (rid: its number) */
	uint64_t rid;
	struct umsg *next;
};

/* a peer's connection: none yet, being dialed, waiting (to dial again, or
 * for the peer's own dial: ours was declined), up */
enum { C_IDLE, C_DIAL, C_WAIT, C_UP };

struct mesh_hello { uint64_t nonce; };

struct peer {
	int fd;
	int state;            /* C_* */
	uint32_t ip;          /* where it listens (network order) */
	uint16_t port;
	struct loom_hs_dialer *dial;  /* C_DIAL */
	struct loom_hs_dialer *stray; /* our dial that lost a race: run to its quiet refusal */
	double until;         /* C_DIAL, C_WAIT: given up then */
	double retry_at;      /* C_WAIT: dial again then */
	int tries;            /* dials declined so far */
	int bye_sent;
	int bye;              /* said goodbye */
	int gone;             /* connection closed */
	struct loom_treq *sq, *sq_tail;
	size_t shoff;         /* header bytes of sq sent */
	unsigned char rh[HDR_LEN];
	size_t rhoff;
	int rstate;           /* 0: header; 1: payload */
	struct loom_treq *rt; /* payload goes to a posted receive... */
	struct umsg *ru;      /* ...or is kept */
	size_t rleft, rpos;   /* rt == ru == NULL: discard rleft bytes */
	struct loom_treq *posted, *posted_tail;
	struct loom_treq *rts_wait;  /* large sends announced, waiting for the peer's T_CTS */
	struct loom_treq *bound;     /* receives whose T_CTS went, waiting for T_RDATA */
	uint64_t next_rid;
	struct umsg *unexp, *unexp_tail;
	size_t unexp_bytes;   /* kept for receives not posted yet: capped */
};

struct loom_engine {
	pthread_mutex_t lock;
	pthread_t thr;
	int have_thr;
	int evfd;
	int stop;
	int listen_fd;
	int closing;          /* finalize: new connections get our goodbye at once */
	struct loom_hs_acceptor *acc;
	struct loom_hs_cfg hs;
	char hs_what[48];
	uint8_t key[LOOM_KEY_LEN];
	struct mesh_hello hello;
	double connect_tmo;   /* LOOM_BOOTSTRAP_TIMEOUT: a dial's whole life */
	int n, self;
	size_t unexp_max;     /* LOOM_UNEXPECTED_MAX: bytes kept per peer */
	uint64_t early_msgs, early_bytes;  /* kept for receives not posted yet (LOOM_DEBUG=info) */
	/* A peer's state is made when something first concerns it (a send,
	 * a receive, its dial): a rank holds the few peers its algorithms
	 * use, not N (docs/scale.md), and the engine's loop visits only
	 * those, found by world rank in a hash map (e->lock held). Only the
	 * env bootstrap leaves every rank's address here (port 0: resolved
	 * at the first dial). */
	struct loom_intmap peers;  /* world rank -> its struct peer, once made */
	int *act, nact, act_cap;  /* the ranks whose peer is made */
	uint32_t *ip;
	uint16_t *port;
	double timeout;       /* LOOM_TIMEOUT: how long destroy waits for goodbyes (30 s at most) */
	void *arg;            /* the hooks' */
	const struct loom_engine_hooks *hooks;
	char scratch[65536];
};

struct wire {
	uint32_t magic, type;
	uint64_t ctx, tag, len;
	int64_t aux;
};

/* a peer's state; NULL until made (peer_get) */
#define PEER(e, i) ((struct peer *)loom_intmap_get(&(e)->peers, (i)))

static void complete(struct loom_treq *r, int status)
{
	r->status = status;
	if (r->owned) {
		if (r->owned == 2)
			free(r->buf);
		free(r);
		return;
	}
	atomic_store(&r->done, 1);
	if (r->bell)
		loom_bell_ring(r->bell);
}

static void wake_engine(struct loom_engine *e)
{
	uint64_t one = 1;
	if (e->have_thr && write(e->evfd, &one, sizeof one) < 0) {
		/* the counter is full: the engine is awake anyway */
	}
}

static void drop_dial(struct loom_hs_dialer **d)
{
	if (!*d)
		return;
	if ((*d)->fd >= 0)
		close((*d)->fd);
	free(*d);
	*d = NULL;
}

/* peer i's state, made on first need (e->lock held); NULL: no memory */
static struct peer *peer_get(struct loom_engine *e, int i)
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
static void fail_list(struct loom_treq **list)
{
	struct loom_treq *r, *nx;
	for (r = *list; r; r = nx) {
		nx = r->next;
		complete(r, LOOM_ERR_PEER_LOST);
	}
	*list = NULL;
}

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

/* r out of a list, if it is there: 1 */
static int unlink_req(struct loom_treq **list, struct loom_treq *r)
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

static void peer_lost(struct loom_engine *e, int i, const char *why)
{
	struct peer *p = PEER(e, i);
	if (p->gone)
		return;
	p->gone = 1;
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	drop_dial(&p->dial);
	drop_dial(&p->stray);
	if (!p->bye) {
		LOOM_ERR("rank %d lost: %s", i, why);
		loom_flight_log_verdict();
	} else
		LOOM_TRACE("rank %d closed its connection after goodbye", i);
	fail_list(&p->sq);
	p->sq_tail = NULL;
	fail_list(&p->posted);
	p->posted_tail = NULL;
	fail_list(&p->rts_wait);
	fail_list(&p->bound);
	if (p->rstate == 1 && p->rt)
		complete(p->rt, LOOM_ERR_PEER_LOST);
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

static void pack(struct loom_treq *r, uint32_t type, int64_t aux)
{
	struct wire h = { WIRE_MAGIC, type, r->ctx, r->tag, r->len, aux };
	memcpy(r->hdr, &h, HDR_LEN);
}

static void enqueue_send(struct loom_engine *e, int i, struct loom_treq *r);

/* a header alone (no bytes follow) to peer i: T_RTS, T_CTS */
static void send_hdr(struct loom_engine *e, int i, uint32_t type, uint64_t ctx, uint64_t tag,
		     uint64_t len, uint64_t rid)
{
	struct loom_treq *r = calloc(1, sizeof *r);
	struct wire h = { WIRE_MAGIC, type, ctx, tag, len, (int64_t)rid };
	if (!r) {
		peer_lost(e, i, "out of memory for a rendezvous message");
		return;
	}
	r->kind = TREQ_SEND;
	r->peer = i;
	r->ctx = ctx;
	r->owned = 1;
	memcpy(r->hdr, &h, HDR_LEN);
	enqueue_send(e, i, r);
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
		complete(r, LOOM_ERR_MISMATCH);
	} else {
		r->rid = rid;
		r->next = p->bound;
		p->bound = r;
	}
	send_hdr(e, i, T_CTS, r->ctx, r->tag, 0, rid);
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
		complete(r, LOOM_ERR_MISMATCH);
	} else {
		if (u->len)
			memcpy(r->buf, u->buf, u->len);
		complete(r, LOOM_SUCCESS);
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

static void control(struct loom_engine *e, int from, const struct wire *h)
{
	int64_t entered;
	if (h->type == CTL_BYE) {
		/* it sends nothing after its goodbye: what we still wait for
		 * from it never comes */
		struct peer *p = PEER(e, from);
		p->bye = 1;
		fail_list(&p->posted);
		p->posted_tail = NULL;
		fail_list(&p->bound);
		fail_list(&p->rts_wait);
		return;
	}
	entered = e->hooks->control(e->arg, from, (int)h->type, h->ctx, h->aux);
	if (h->type == CTL_ABORT && entered == 1) {
		/* Connections are made on first use, so the aborting rank may
		 * still be dialing a peer when that peer hears our goodbye and
		 * fails with PEER_LOST instead. Pass the abort on over every
		 * connection we have: it goes ahead of our goodbye on the same
		 * stream. A rank that had already failed the communicator does
		 * not pass it on again, so relays end. */
		for (int k = 0; k < e->nact; k++) {
			int i = e->act[k];
			struct peer *q = PEER(e, i);
			struct loom_treq *r;
			if (i == e->self || i == from || q->state != C_UP || q->gone || q->bye_sent)
				continue;
			if (!(r = calloc(1, sizeof *r)))
				break;
			r->kind = TREQ_SEND;
			r->peer = i;
			r->ctx = h->ctx;
			r->owned = 1;
			pack(r, CTL_ABORT, h->aux);
			enqueue_send(e, i, r);
		}
	}
	if (h->type == CTL_STATUS_REQ) {
		struct loom_treq *r = calloc(1, sizeof *r);
		if (!r)
			return;
		r->kind = TREQ_SEND;
		r->peer = from;
		r->ctx = h->ctx;
		r->owned = 1;
		pack(r, CTL_STATUS_REP, entered);
		enqueue_send(e, from, r);
	}
}

/* after a failed recv/send with peer i: 1 to retry, 0 when nothing more
 * can move now, -1 when the peer is lost */
static int io_failed(struct loom_engine *e, int i)
{
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	if (errno == EINTR)
		return 1;
	peer_lost(e, i, strerror(errno));
	return -1;
}

/* read what is there from peer i; 0, or -1 when the peer went away */
static int do_read(struct loom_engine *e, int i)
{
	struct peer *p = PEER(e, i);
	size_t budget = BURST;
	while (!p->gone && budget) {
		ssize_t n;
		if (p->rstate == 0) {
			n = recv(p->fd, p->rh + p->rhoff, HDR_LEN - p->rhoff, 0);
		} else {
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
			n = recv(p->fd, dst, want, 0);
		}
		if (n == 0) {
			peer_lost(e, i, "connection closed (process exited or was killed)");
			return -1;
		}
		if (n < 0) {
			int r = io_failed(e, i);
			if (r > 0)
				continue;
			return r;
		}
		budget -= (size_t)n < budget ? (size_t)n : budget;
		if (p->rstate == 0) {
			struct wire h;
			p->rhoff += (size_t)n;
			if (p->rhoff < HDR_LEN)
				continue;
			p->rhoff = 0;
			memcpy(&h, p->rh, HDR_LEN);
			if (h.magic != WIRE_MAGIC) {
				peer_lost(e, i, "garbage on the connection");
				return -1;
			}
			if (h.type == T_RTS) {
				struct loom_treq *r = take_posted(p, h.ctx, h.tag);
				struct umsg *u;
				if (r) {
					bind_rts(e, i, r, h.len, (uint64_t)h.aux);
					continue;
				}
				/* no receive yet: remember the announcement, no bytes; it
				 * counts as its own size against LOOM_UNEXPECTED_MAX */
				if (sizeof *u > e->unexp_max - p->unexp_bytes) {
					LOOM_ERR("rank %d announced more messages nobody has asked for yet than LOOM_UNEXPECTED_MAX (%zu bytes) lets one peer have waiting",
						 i, e->unexp_max);
					peer_lost(e, i, "too many messages announced ahead of their receives");
					return -1;
				}
				if (!(u = calloc(1, sizeof *u))) {
					peer_lost(e, i, "out of memory for a rendezvous message");
					return -1;
				}
				u->from = p;
				p->unexp_bytes += sizeof *u;
				u->ctx = h.ctx;
				u->tag = h.tag;
				u->len = h.len;
				u->rts = 1;
				u->rid = (uint64_t)h.aux;
				append_unexp(p, u);
				continue;
			}
			if (h.type == T_CTS) {
				struct loom_treq *r = take_rid(&p->rts_wait, (uint64_t)h.aux);
				if (r) {  /* else cancelled meanwhile */
					pack(r, T_RDATA, (int64_t)r->rid);
					enqueue_send(e, i, r);
				}
				continue;
			}
			if (h.type != T_DATA && h.type != T_RDATA) {
				control(e, i, &h);
				continue;
			}
			p->ru = NULL;
			if (h.type == T_RDATA) {
				/* NULL: the receive was cancelled or its length was wrong:
				 * the bytes are read and dropped */
				p->rt = take_rid(&p->bound, (uint64_t)h.aux);
				if (p->rt && p->rt->len != h.len) {
					complete(p->rt, LOOM_ERR_MISMATCH);
					p->rt = NULL;
				}
				p->rleft = h.len;
				p->rpos = 0;
				p->rstate = 1;
				continue;
			}
			p->rt = take_posted(p, h.ctx, h.tag);
			if (p->rt && p->rt->len != h.len) {
				LOOM_ERR("rank %d sent %llu bytes where %zu were expected (ranks out of step?)",
					 i, (unsigned long long)h.len, p->rt->len);
				complete(p->rt, LOOM_ERR_MISMATCH);
				p->rt = NULL;
			} else if (!p->rt) {
				/* the header's length is the peer's word: bound what it
				 * makes us hold before anyone asked for it */
				if (h.len > e->unexp_max - p->unexp_bytes) {
					LOOM_ERR("rank %d sent %llu bytes nobody has asked for yet, over the %zu bytes "
						 "LOOM_UNEXPECTED_MAX lets one peer have waiting (%zu already): out of memory for it",
						 i, (unsigned long long)h.len, e->unexp_max, p->unexp_bytes);
					peer_lost(e, i, "too many bytes sent ahead of their receives");
					return -1;
				}
				p->ru = calloc(1, sizeof *p->ru);
				if (p->ru)
					p->ru->buf = malloc(h.len ? h.len : 1);
				if (!p->ru || !p->ru->buf) {
					peer_lost(e, i, "out of memory for an early message");
					return -1;
				}
				p->ru->ctx = h.ctx;
				p->ru->tag = h.tag;
				p->ru->len = h.len;
				p->ru->from = p;
				p->unexp_bytes += h.len;
				e->early_msgs++;
				e->early_bytes += h.len;
			}
			p->rleft = h.len;
			p->rpos = 0;
			p->rstate = 1;
		} else {
			p->rleft -= (size_t)n;
			p->rpos += (size_t)n;
		}
		if (p->rstate == 1 && p->rleft == 0) {
			p->rstate = 0;
			if (p->rt)
				complete(p->rt, LOOM_SUCCESS);
			else if (p->ru)
				keep(p, p->ru);
			p->rt = NULL;
			p->ru = NULL;
		}
	}
	return 0;
}

static int do_write(struct loom_engine *e, int i)
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
			int r = io_failed(e, i);
			if (r > 0)
				continue;
			return r;
		}
		budget -= (size_t)n < budget ? (size_t)n : budget;
		if (p->shoff < HDR_LEN) {
			size_t h = HDR_LEN - p->shoff;
			if ((size_t)n < h) {
				p->shoff += (size_t)n;
				continue;
			}
			p->shoff = HDR_LEN;
			n -= (ssize_t)h;
		}
		r->off += (size_t)n;
		if (r->off == r->len) {
			p->sq = r->next;
			if (!p->sq)
				p->sq_tail = NULL;
			p->shoff = 0;
			r->next = NULL;
			complete(r, LOOM_SUCCESS);
		}
	}
	return 0;
}

static void start_dial(struct loom_engine *e, int i);

static void enqueue_send(struct loom_engine *e, int i, struct loom_treq *r)
{
	struct peer *p = PEER(e, i);
	int was_empty = p->sq == NULL;
	r->off = 0;
	r->next = NULL;
	if (p->gone) {
		complete(r, LOOM_ERR_PEER_LOST);
		return;
	}
	if (p->sq_tail)
		p->sq_tail->next = r;
	else
		p->sq = r;
	p->sq_tail = r;
	if (p->state == C_IDLE)
		start_dial(e, i);
	else if (was_empty && p->state == C_UP) {
		do_write(e, i);
		if (p->sq)
			wake_engine(e);
	}
}

/* ---- connections on first use ---- */

static void say_bye(struct loom_engine *e, int i)
{
	struct loom_treq *r;
	if (PEER(e, i)->bye_sent || PEER(e, i)->gone)
		return;
	r = calloc(1, sizeof *r);
	if (!r)
		return;
	PEER(e, i)->bye_sent = 1;
	r->kind = TREQ_SEND;
	r->peer = i;
	r->owned = 1;
	pack(r, CTL_BYE, 0);
	enqueue_send(e, i, r);
}


/* fd is an authenticated connection to peer i: its queue can go */
static void became_up(struct loom_engine *e, int i, int fd)
{
	struct peer *p = PEER(e, i);
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	if (p->dial && p->dial->fd == fd) {
		p->dial->fd = -1;
		drop_dial(&p->dial);
	} else if (p->dial) {
		/* closing it now would be a refusal logged at the peer: let it
		 * say its hello and be declined */
		drop_dial(&p->stray);
		p->stray = p->dial;
		p->dial = NULL;
	}
	p->fd = fd;
	p->state = C_UP;
	p->tries = 0;
	LOOM_TRACE("connected to rank %d", i);
	if (e->closing)
		say_bye(e, i);
	if (p->sq) {
		do_write(e, i);
		wake_engine(e);
	}
}

static void start_dial(struct loom_engine *e, int i)
{
	struct peer *p = PEER(e, i);
	int rc;
	p->dial = calloc(1, sizeof *p->dial);
	if (!p->dial) {
		peer_lost(e, i, "out of memory for a connection");
		return;
	}
	if (!p->port && e->hooks->resolve && e->hooks->resolve(e->arg, i, &p->ip, &p->port)) {
		free(p->dial);
		p->dial = NULL;
		peer_lost(e, i, "its address cannot be looked up");
		return;
	}
	rc = loom_hs_dialer_start(p->dial, p->ip, p->port);
	if (rc) {
		free(p->dial);
		p->dial = NULL;
		peer_lost(e, i, "cannot open a socket to it");
		return;
	}
	if (p->state == C_IDLE)
		p->until = loom_now() + e->connect_tmo;
	p->state = C_DIAL;
	wake_engine(e);   /* the engine polls the new socket */
}

static void dial_step(struct loom_engine *e, int i)
{
	struct peer *p = PEER(e, i);
	char addr[INET_ADDRSTRLEN], why[160];
	int rc = loom_hs_dialer_step(p->dial, e->key, LOOM_HS_MESH, e->self, e->n, &e->hello,
				     sizeof e->hello);
	if (rc == 0)
		return;
	if (rc == 1) {
		became_up(e, i, p->dial->fd);
		return;
	}
	drop_dial(&p->dial);
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
	peer_lost(e, i, why);
}

/* a hello that proved the key (the acceptor calls this with e->lock held) */
static int mesh_peer(void *arg, const struct loom_hs_peer *hp)
{
	struct loom_engine *e = arg;
	struct mesh_hello h;
	struct peer *p;
	memcpy(&h, hp->payload, sizeof h);
	if (h.nonce != e->hello.nonce || hp->size != e->n || hp->rank < 0 || hp->rank >= e->n ||
	    hp->rank == e->self)
		return 0;  /* another world of the same key */
	if (!(p = peer_get(e, hp->rank)))
		return 0;
	if (p->gone || p->state == C_UP)
		return LOOM_HS_DECLINE;  /* the loser of a race whose winner came first */
	if (p->state == C_DIAL && hp->rank > e->self)
		return LOOM_HS_DECLINE;  /* ours, dialed by the lower rank, wins */
	if (loom_hs_reply(e->key, hp, NULL, 0, NULL, loom_now() + 5.0))
		return 0;
	became_up(e, hp->rank, hp->fd);
	return 1;
}

void loom_tcp_post(struct loom_engine *e, struct loom_treq *r)
{
	struct peer *p;
	atomic_store(&r->done, 0);
	r->status = 0;
	r->next = NULL;
	r->off = 0;
	pthread_mutex_lock(&e->lock);
	if (!(p = peer_get(e, r->peer))) {
		complete(r, LOOM_ERR_NOMEM);
	} else if (r->kind == TREQ_SEND) {
		pack(r, T_DATA, 0);
		if (r->peer == e->self) {
			struct umsg *u = calloc(1, sizeof *u);
			if (u)
				u->buf = malloc(r->len ? r->len : 1);
			if (!u || !u->buf) {
				free(u);
				complete(r, LOOM_ERR_NOMEM);
			} else {
				u->ctx = r->ctx;
				u->tag = r->tag;
				u->len = r->len;
				if (r->len)
					memcpy(u->buf, r->buf, r->len);
				keep(p, u);
				complete(r, LOOM_SUCCESS);
			}
		} else if (r->len >= RNDV_BYTES && !r->eager && !p->gone) {
			/* announced; its bytes go when the peer's T_CTS comes */
			r->rid = ++p->next_rid;
			r->next = p->rts_wait;
			p->rts_wait = r;
			send_hdr(e, r->peer, T_RTS, r->ctx, r->tag, r->len, r->rid);
		} else {
			enqueue_send(e, r->peer, r);
		}
	} else {
		struct umsg *u, *prev = NULL;
		for (u = p->unexp; u; prev = u, u = u->next)
			if (u->ctx == r->ctx && u->tag == r->tag)
				break;
		if (u) {
			if (prev)
				prev->next = u->next;
			else
				p->unexp = u->next;
			if (p->unexp_tail == u)
				p->unexp_tail = prev;
			if (u->rts) {
				p->unexp_bytes -= sizeof *u;
				bind_rts(e, r->peer, r, u->len, u->rid);
				free(u);
			} else {
				deliver_kept(r, u);
			}
		} else if (p->gone || p->bye) {
			complete(r, LOOM_ERR_PEER_LOST);
		} else {
			if (p->posted_tail)
				p->posted_tail->next = r;
			else
				p->posted = r;
			p->posted_tail = r;
			/* the receiver dials too: a sender that died before its
			 * first message is found out (its port refuses us) */
			if (p->state == C_IDLE && r->peer != e->self)
				start_dial(e, r->peer);
		}
	}
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
		do_read(e, peer);
	pthread_mutex_unlock(&e->lock);
}

void loom_tcp_cancel(struct loom_engine *e, struct loom_treq *r)
{
	struct peer *p;
	struct loom_treq *q, *prev = NULL;
	pthread_mutex_lock(&e->lock);
	p = PEER(e, r->peer);  /* made when r was posted */
	if (atomic_load(&r->done)) {
		pthread_mutex_unlock(&e->lock);
		return;
	}
	if (r->kind == TREQ_SEND && unlink_req(&p->rts_wait, r)) {
		/* announced, no byte sent: a later T_CTS finds nothing */
	} else if (r->kind == TREQ_SEND) {
		for (q = p->sq; q && q != r; prev = q, q = q->next)
			;
		if (q && q == p->sq && (p->shoff > 0 || r->off > 0)) {
			/* half on the wire: finish it from a copy, keeping the stream whole */
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
				peer_lost(e, r->peer, "out of memory while cancelling");
			}
		} else if (q) {
			if (prev)
				prev->next = r->next;
			else
				p->sq = r->next;
			if (p->sq_tail == r)
				p->sq_tail = prev;
		}
	} else if (unlink_req(&p->bound, r)) {
		/* its T_CTS went: the bytes that come are dropped */
	} else {
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
	r->status = LOOM_ERR_TIMEOUT;
	atomic_store(&r->done, 1);
	pthread_mutex_unlock(&e->lock);
}

void loom_tcp_control(struct loom_engine *e, int peer, int type, uint64_t ctx, int64_t a)
{
	struct loom_treq *r;
	if (!e || peer == e->self)
		return;
	r = calloc(1, sizeof *r);
	if (!r)
		return;
	r->kind = TREQ_SEND;
	r->peer = peer;
	r->ctx = ctx;
	r->owned = 1;
	pack(r, (uint32_t)type, a);
	pthread_mutex_lock(&e->lock);
	if (peer_get(e, peer))
		enqueue_send(e, peer, r);
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

static void *engine_main(void *arg)
{
	struct loom_engine *e = arg;
	size_t cap = 2 * 16 + 2 + LOOM_HS_PENDING;  /* a stray dial per peer at most; grows */
	struct pollfd *pf = calloc(cap, sizeof *pf);
	int *who = calloc(cap, sizeof *who);
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	if (!pf || !who) {
		LOOM_ERR("engine: out of memory");
		free(pf);
		free(who);
		return NULL;
	}
	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		int n = 0, i, k, lis = -1, acc0 = 0, nacc = 0;
		double now = loom_now(), wake = now + 0.5;
		if (2 * (size_t)e->nact + 2 + LOOM_HS_PENDING > cap) {
			size_t c2 = 2 * (2 * (size_t)e->nact + 2 + LOOM_HS_PENDING);
			struct pollfd *pf2 = realloc(pf, c2 * sizeof *pf);
			int *who2 = pf2 ? realloc(who, c2 * sizeof *who) : NULL;
			if (pf2)
				pf = pf2;
			if (who2)
				who = who2;
			if (!pf2 || !who2) {
				/* no room to watch every connection: wait for memory */
				pthread_mutex_unlock(&e->lock);
				LOOM_ERR("engine: out of memory for %d connections", e->nact);
				usleep(100000);
				pthread_mutex_lock(&e->lock);
				continue;
			}
			cap = c2;
		}
		pf[n].fd = e->evfd;
		pf[n].events = POLLIN;
		who[n++] = -1;
		if (e->listen_fd >= 0 && e->acc) {
			lis = n;
			pf[n].fd = e->listen_fd;
			pf[n].events = POLLIN;
			who[n++] = -1;
			acc0 = n;
			nacc = loom_hs_acceptor_poll(e->acc, pf + n, &wake);
			for (k = 0; k < nacc; k++)
				who[n++] = -1;
		}
		for (k = 0; k < e->nact; k++) {
			struct peer *p = PEER(e, i = e->act[k]);
			if (i == e->self || p->gone)
				continue;
			if (p->state == C_UP) {
				pf[n].fd = p->fd;
				pf[n].events = POLLIN | (p->sq ? POLLOUT : 0);
			} else if (p->state == C_DIAL) {
				pf[n].fd = p->dial->fd;
				pf[n].events = p->dial->events;
			} else {
				if (p->state == C_WAIT && p->retry_at < wake)
					wake = p->retry_at;
				continue;
			}
			if (p->state == C_DIAL && p->until < wake)
				wake = p->until;
			who[n++] = i;
			if (p->stray) {
				pf[n].fd = p->stray->fd;
				pf[n].events = p->stray->events;
				who[n++] = i;
			}
		}
		for (k = 0; k < n; k++)
			pf[k].revents = 0;
		pthread_mutex_unlock(&e->lock);
		k = poll(pf, (nfds_t)n, wake > now ? (int)((wake - now) * 1000) + 1 : 0);
		pthread_mutex_lock(&e->lock);
		if (k < 0)
			continue;
		if (pf[0].revents) {
			uint64_t v;
			if (read(e->evfd, &v, sizeof v) < 0) {
				/* nothing to drain */
			}
		}
		for (i = acc0 + nacc; i < n; i++) {
			int pi = who[i];
			struct peer *p = PEER(e, pi);
			if (p->gone || !pf[i].revents)
				continue;
			if (p->stray && p->stray->fd == pf[i].fd) {
				if (loom_hs_dialer_step(p->stray, e->key, LOOM_HS_MESH, e->self, e->n,
							&e->hello, sizeof e->hello))
					drop_dial(&p->stray);
				continue;
			}
			if (p->state == C_DIAL) {
				if (p->dial->fd == pf[i].fd)
					dial_step(e, pi);
				continue;
			}
			if (p->state != C_UP || p->fd != pf[i].fd)
				continue;
			if (pf[i].revents & (POLLIN | POLLHUP | POLLERR))
				if (do_read(e, pi) < 0)
					continue;
			if (p->sq)
				do_write(e, pi);
		}
		if (lis >= 0) {
			int rc = loom_hs_acceptor_step(e->acc, e->listen_fd, pf[lis].revents & POLLIN,
						       pf + acc0, nacc, e->n);
			if (rc < 0)
				LOOM_WARN("engine: accepting a connection failed: %s", loom_strerror(rc));
		}
		now = loom_now();
		for (k = 0; k < e->nact; k++) {
			struct peer *p = PEER(e, i = e->act[k]);
			if (p->gone || (p->state != C_DIAL && p->state != C_WAIT))
				continue;
			if (p->until < now)
				peer_lost(e, i, p->tries
					  ? "it declined every hello we sent within LOOM_BOOTSTRAP_TIMEOUT "
					    "(another LOOM_JOB_SECRET?)"
					  : "its listening socket took no connection within LOOM_BOOTSTRAP_TIMEOUT");
			else if (p->state == C_WAIT && p->retry_at <= now)
				start_dial(e, i);
		}
	}
	pthread_mutex_unlock(&e->lock);
	free(pf);
	free(who);
	return NULL;
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
	{
		double m = loom_env_double("LOOM_UNEXPECTED_MAX", 4.0 * (1ull << 30));
		e->unexp_max = m >= 1 ? (size_t)m : 4ull << 30;
	}
	e->connect_tmo = loom_env_double("LOOM_BOOTSTRAP_TIMEOUT", 120);
	if (!(e->connect_tmo > 0))
		e->connect_tmo = 120;
	memcpy(e->key, key, sizeof e->key);
	e->hello.nonce = cfg->nonce;
	snprintf(e->hs_what, sizeof e->hs_what, "rank %d's mesh port", cfg->rank);
	e->hs.key = e->key;
	e->hs.kind = LOOM_HS_MESH;
	e->hs.plen = sizeof e->hello;
	e->hs.what = e->hs_what;
	e->hs.on_peer = mesh_peer;
	e->hs.arg = e;
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

/* every connection's queue is out and the peer said goodbye too (or is
 * gone): closing now loses nothing either side still reads */
static int all_parted(struct loom_engine *e)
{
	int i, k;
	for (k = 0; k < e->nact; k++) {
		struct peer *p = PEER(e, i = e->act[k]);
		if (i == e->self || p->gone || p->state == C_IDLE)
			continue;
		if (p->state != C_UP || p->sq || !p->bye)
			return 0;
	}
	return 1;
}

void loom_engine_destroy(struct loom_engine *e)
{
	int i, k, parted;
	double until;
	if (!e)
		return;
	/* goodbye on every connection (made or under way); each side then
	 * waits for the other's, bounded, before anyone closes */
	pthread_mutex_lock(&e->lock);
	e->closing = 1;
	for (k = 0; k < e->nact; k++)
		if ((i = e->act[k]) != e->self && PEER(e, i)->state != C_IDLE)
			say_bye(e, i);
	pthread_mutex_unlock(&e->lock);
	until = loom_now() + (e->timeout < 30 ? e->timeout : 30);
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
			struct peer *p = PEER(e, i = e->act[k]);
			if (i != e->self && !p->gone && p->state != C_IDLE && (p->state != C_UP || p->sq || !p->bye))
				l += (size_t)snprintf(who + l, sizeof who - l, "%s%d", l ? "," : "", i);
		}
		pthread_mutex_unlock(&e->lock);
		LOOM_INFO("finalize: no goodbye from rank(s) %s within %.0f s; closing anyway", who,
			  e->timeout < 30 ? e->timeout : 30);
	}
	pthread_mutex_lock(&e->lock);
	e->stop = 1;
	LOOM_INFO("finalize: the engine made the state of %d peer(s) of %d world ranks", e->nact, e->n);
	LOOM_INFO("finalize: %llu message(s), %llu bytes, came before their receive was posted and were kept",
		  (unsigned long long)e->early_msgs, (unsigned long long)e->early_bytes);
	pthread_mutex_unlock(&e->lock);
	if (e->have_thr) {
		wake_engine(e);
		pthread_join(e->thr, NULL);
	}
	loom_hs_acceptor_free(e->acc);
	for (k = 0; k < e->nact; k++) {
		struct peer *p = PEER(e, i = e->act[k]);
		struct umsg *u, *nu;
		p->bye = 1;
		if (p->fd >= 0 && i != e->self) {
			shutdown(p->fd, SHUT_WR);
			close(p->fd);
		}
		drop_dial(&p->dial);
		drop_dial(&p->stray);
		fail_list(&p->sq);
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
	if (e->evfd >= 0)
		close(e->evfd);
	if (e->listen_fd >= 0)
		close(e->listen_fd);
	OPENSSL_cleanse(e->key, sizeof e->key);
	pthread_mutex_destroy(&e->lock);
	for (k = 0; k < e->nact; k++)
		free(PEER(e, e->act[k]));
	loom_intmap_clear(&e->peers);
	free(e->act);
	free(e->ip);
	free(e->port);
	free(e);
}
