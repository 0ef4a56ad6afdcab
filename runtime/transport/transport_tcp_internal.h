/* runtime/transport/transport_tcp_internal.h: what the files of the TCP
 * engine share: the engine, a peer's state, the wire format, and the
 * steps each file offers the others (e->lock held for all of them). The
 * files, bottom up; each calls only into the files listed before it
 * (t/t0008-call-circles.t fails on a circle):
 *   transport_tcp_peer.c    a peer's state: made, its first dial begun,
 *                           lost (what waits on it fails); request lists;
 *                           the engine's wake-up
 *   transport_tcp_wire.c    sending: the send queue, engine messages,
 *                           writing headers and payloads
 *   transport_tcp_match.c   matching: posted receives, messages that came
 *                           first, the rendezvous of large messages
 *   transport_tcp_conn.c    connections: dialing, the mesh hello both ways,
 *                           races, retries, goodbyes
 *   transport_tcp_heartbeat.c  pings, silent peers lost, fences (this
 *                           process's own, and of peers agreed failed)
 *   transport_tcp_read.c    reading: headers and payloads, each header to
 *                           its kind's handler (match's, or the control
 *                           messages handled there)
 *   transport_tcp.c         the entry points (post, pull, cancel, control,
 *                           peer_gone)
 *   transport_tcp_engine.c  the engine thread (its poll loop), create and
 *                           destroy
 *
 * At most one connection per pair of world ranks, made when the first
 * message for the peer is posted (so a rank holds connections only to
 * the peers its algorithms talk to over TCP), non-blocking, driven by one
 * engine thread per process (poll), which also answers control messages
 * (abort, timeout diagnosis) while the application computes, and accepts
 * its peers' connections on the listening socket it keeps for the job's
 * life. Messages carry (communicator context, tag) and are matched in
 * FIFO order per sender; a message with no posted receive is kept
 * (eagerly) until one is posted. A sender also writes directly when its
 * queue is empty, and a receiver waiting for a small message reads the
 * socket itself (loom_tcp_pull), so small messages skip the thread.
 *
 * Wire: 40-byte header {magic, type, ctx, tag, len, aux} then len bytes. */
#ifndef LOOM_TRANSPORT_TCP_INTERNAL_H
#define LOOM_TRANSPORT_TCP_INTERNAL_H

#include "transport/transport.h"
#include "util/intmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
/* the heartbeat's (transport_tcp_heartbeat.c): a ping, and "you are out" */
#define T_PING 32
#define T_FENCE 33
#define BURST (8u << 20)

struct wire {
	uint32_t magic, type;
	uint64_t ctx, tag, len;
	int64_t aux;
};

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

/* the mesh hello's payload (transport_tcp_conn.c) */
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
	double dial_at;       /* C_DIAL: this attempt began then */
	int tries;            /* dials declined so far */
	int bye_sent;
	int bye;              /* said goodbye */
	int gone;             /* connection closed */
	double heard, pinged; /* C_UP: when a byte last came from it, our last ping */
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
	double hb;            /* LOOM_HEARTBEAT: seconds, 0 off */
	double hb_round;      /* when the engine's loop last ran */
	int fenced;           /* this process is out: no connection, no hello */
	void *arg;            /* the hooks' */
	const struct loom_engine_hooks *hooks;
	char scratch[65536];
};

/* a peer's state; NULL until made (loom_tcp_peer_get) */
#define PEER(e, i) ((struct peer *)loom_intmap_get(&(e)->peers, (i)))

/* r is finished: its owner is told (an engine-owned request is freed) */
static inline void tcp_complete(struct loom_treq *r, int status)
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

/* r's wire header */
static inline void tcp_pack(struct loom_treq *r, uint32_t type, int64_t aux)
{
	struct wire h = { WIRE_MAGIC, type, r->ctx, r->tag, r->len, aux };
	memcpy(r->hdr, &h, HDR_LEN);
}

/* ---- transport_tcp_peer.c ---- */
void loom_tcp_wake_engine(struct loom_engine *e);  /* e->lock held or not */
/* made on first need; NULL: no memory */
struct peer *loom_tcp_peer_get(struct loom_engine *e, int i);
int loom_tcp_unlink_req(struct loom_treq **list, struct loom_treq *r);  /* 1: it was there */
void loom_tcp_fail_list(struct loom_treq **list);  /* every request of it fails: PEER_LOST */
void loom_tcp_drop_dial(struct loom_hs_dialer **d);
void loom_tcp_peer_lost(struct loom_engine *e, int i, const char *why);
void loom_tcp_dial_start(struct loom_engine *e, int i);

/* after a failed recv/send with peer i: 1 to retry, 0 when nothing more
 * can move now, -1 when the peer is lost (loom_tcp_peer_lost) */
static inline int tcp_io_failed(struct loom_engine *e, int i)
{
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	if (errno == EINTR)
		return 1;
	loom_tcp_peer_lost(e, i, strerror(errno));
	return -1;
}

/* ---- transport_tcp_wire.c ---- */
/* a message of the engine's own (freed once sent): NULL, no memory */
struct loom_treq *loom_tcp_ctl_new(int peer, uint64_t ctx, uint32_t type, int64_t aux);
/* a header alone (no bytes follow) to peer i: T_RTS, T_CTS */
void loom_tcp_send_hdr(struct loom_engine *e, int i, uint32_t type, uint64_t ctx,
		       uint64_t tag, uint64_t len, uint64_t rid);
void loom_tcp_enqueue_send(struct loom_engine *e, int i, struct loom_treq *r);
void loom_tcp_cancel_send(struct loom_engine *e, struct peer *p, struct loom_treq *r);
int loom_tcp_do_write(struct loom_engine *e, int i);  /* 0, or -1: the peer went away */

/* ---- transport_tcp_match.c ---- */
void loom_tcp_post_recv(struct loom_engine *e, struct peer *p, struct loom_treq *r);
void loom_tcp_send_self(struct peer *p, struct loom_treq *r);  /* kept as a message that came */
void loom_tcp_cancel_recv(struct peer *p, struct loom_treq *r);
/* a header of each kind came from peer i: 0, or -1 when i was lost over it;
 * T_DATA and T_RDATA leave p ready for the payload (rstate 1) */
int loom_tcp_got_rts(struct loom_engine *e, int i, const struct wire *h);
void loom_tcp_got_cts(struct loom_engine *e, int i, const struct wire *h);
int loom_tcp_got_data(struct loom_engine *e, int i, const struct wire *h);
void loom_tcp_got_rdata(struct loom_engine *e, int i, const struct wire *h);
void loom_tcp_payload_done(struct peer *p);  /* its last byte came */

/* ---- transport_tcp_conn.c ---- */
void loom_tcp_hello_init(struct loom_engine *e, const struct loom_engine_cfg *cfg);
void loom_tcp_dial_step(struct loom_engine *e, int i);   /* p->dial's socket is ready */
void loom_tcp_stray_step(struct loom_engine *e, struct peer *p);  /* p->stray's is */
void loom_tcp_dial_timers(struct loom_engine *e, double now);  /* give up, dial again */
void loom_tcp_say_bye(struct loom_engine *e, int i);

/* ---- transport_tcp_heartbeat.c ---- */
void loom_tcp_heartbeat_init(struct loom_engine *e);
/* a round of the engine's loop: returns when its poll must return at the latest */
double loom_tcp_heartbeat_round(struct loom_engine *e, double now, double wake);
void loom_tcp_self_fence(struct loom_engine *e, const char *why);

/* ---- transport_tcp_read.c ---- */
int loom_tcp_do_read(struct loom_engine *e, int i);   /* 0, or -1: the peer went away */

#endif
