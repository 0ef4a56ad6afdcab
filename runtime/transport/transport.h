/* runtime/transport/transport.h: bytes between processes: the world-wide
 * TCP engine (its own thread) and the per-communicator shared-memory
 * rings. Each has a handle of its own (struct loom_engine, struct
 * loom_shm), made from what the layers above fill in for it (struct
 * loom_engine_cfg, struct loom_shm_group); it reports upward only
 * through the hooks it is given. */
#ifndef LOOM_TRANSPORT_TRANSPORT_H
#define LOOM_TRANSPORT_TRANSPORT_H

#include "util/util.h"

#include <poll.h>
#include <sys/socket.h>

/* ---- transport_handshake.c: the authenticated hello of every connection ---- */
#define LOOM_HS_CH 16
#define LOOM_HS_MAX_PAYLOAD 128
#define LOOM_HS_RENDEZVOUS 1u   /* kinds: what the connection is for */
#define LOOM_HS_MESH 2u
#define LOOM_HS_NODE 3u         /* a node's ranks meeting their leader (AF_UNIX) */
#define LOOM_HS_TREE 4u         /* the env rendezvous' table, from a parent in its fan-out */
#define LOOM_HS_JOIN 5u         /* a newcomer to the leader of a growing communicator
				 * (core/comm_grow.c): to 0, the leader's role */
#define LOOM_HS_FORGED 1        /* loom_hs_read_reply: the server lacks the key */
#define LOOM_HS_DECLINE 2       /* on_peer: a real peer, closed without a word (a race's loser) */
#define LOOM_HS_PENDING 128     /* connections an acceptor keeps in their hello at once */
#define LOOM_HS_NOT_OURS 3      /* loom_hs_dial, AF_UNIX: another user's process holds the name */
#define LOOM_HS_GAVE_UP 4       /* loom_hs_dial, loom_hs_read_reply: the server failed and says so */
#define LOOM_HS_REFUSED 5       /* loom_hs_read_reply: the server says our hello failed its check */
#define LOOM_HS_CLOSED 6        /* loom_hs_hello, loom_hs_read_reply: closed before a reply, without
				 * a word (evicted under a flood, the server restarting): dial again */
/* a connection as one side sees it, in both MACs: the client's address
 * and port (its getsockname, the server's getpeername) and the server's
 * (the other way round); AF_UNIX: zeros (SO_PEERCRED guards it). A relay
 * holds two connections, so the two sides' views of one differ. */
struct loom_hs_bind {
	uint32_t cli_ip, srv_ip;        /* network order */
	uint16_t cli_port, srv_port;    /* host order */
};
struct loom_hs_peer {
	int fd, rank, size;             /* rank: the client's */
	int srv_rank;                   /* the rank or role the client meant to reach (cfg->self) */
	uint32_t kind;
	uint32_t ip;                    /* network order; on the server, the client's bound address */
	int local_pid, local_uid;       /* AF_UNIX: the other process (SO_PEERCRED) */
	struct loom_hs_bind bind;       /* the connection, as both sides agreed */
	uint8_t srv_ch[LOOM_HS_CH], cli_ch[LOOM_HS_CH];
	uint8_t payload[LOOM_HS_MAX_PAYLOAD];
};
struct loom_hs_cfg {
	const uint8_t *key;
	uint32_t kind;
	size_t plen;                    /* the hello's payload length, fixed by kind */
	const char *what;               /* names the port in log lines */
	/* a hello that proved the key: 1 takes p->fd, 0 refuses (logged,
	 * dropped), < 0 a fatal status for the whole accept */
	int (*on_peer)(void *arg, const struct loom_hs_peer *p);
	void *arg;
	int strict;                     /* a hello without the key is fatal, not dropped:
					 * only the job's own user can reach the socket */
	int *left_pending;              /* if set: connections in their hello when the accept ended */
	int self;                       /* who this side is, what a hello must mean to reach:
					 * RENDEZVOUS 0, MESH the engine's rank, TREE the
					 * parent's rank, NODE 0 (LOCAL_RANK 0) */
};
/* accept until `need` peers were taken: LOOM_ERR_TIMEOUT at deadline;
 * AF_UNIX listeners take only this user's processes (SO_PEERCRED) */
int loom_hs_accept(int lfd, const struct loom_hs_cfg *cfg, int need, double deadline);
/* the same until enough(cfg->arg) says every peer is in (its peers differ in worth) */
int loom_hs_accept_until(int lfd, const struct loom_hs_cfg *cfg, int (*enough)(void *arg), double deadline);
/* the same acceptor for a poll loop of one's own (cfg outlives it): _poll
 * fills pf with its pending connections (at most LOOM_HS_PENDING) and
 * lowers *wake to the earliest of their deadlines; _step then reads them,
 * judges whole hellos, drops the late and accepts what listen_ready says
 * is waiting on lfd (non-blocking): peers taken, or a fatal status */
struct loom_hs_acceptor;
struct loom_hs_acceptor *loom_hs_acceptor_new(const struct loom_hs_cfg *cfg);
void loom_hs_acceptor_free(struct loom_hs_acceptor *a);
int loom_hs_acceptor_poll(struct loom_hs_acceptor *a, struct pollfd *pf, double *wake);
int loom_hs_acceptor_step(struct loom_hs_acceptor *a, int lfd, int listen_ready,
			  const struct pollfd *pf, int np, int need);
/* digest: SHA-256 of reply when the caller has it (one table, many
 * replies), else NULL. A reply of rlen > 0 travels encrypted (AES-256-GCM
 * under a key of this connection's: LOOM_AEAD_TAG more bytes) */
int loom_hs_reply(const uint8_t *key, const struct loom_hs_peer *p, const void *reply, size_t rlen,
		  const uint8_t *digest, double deadline);
/* in a reply's place: "your hello failed its check" (gave_up 0, which
 * ends the client's rendezvous) or "this side failed" (1); -1 unsent */
int loom_hs_refuse(int fd, int gave_up);
/* client: connect (retrying until deadline) and read the challenge; send
 * the hello; read and check the reply. AF_INET or AF_UNIX; on AF_UNIX a
 * listener of another user is LOOM_HS_NOT_OURS; p->local_pid/uid name the
 * listener it reached, if any (also when it sent no challenge in time) */
int loom_hs_dial(const struct sockaddr *to, socklen_t tolen, uint32_t kind, double deadline,
		 struct loom_hs_peer *p);
int loom_hs_dial_tcp(uint32_t ip, uint16_t port, uint32_t kind, double deadline, struct loom_hs_peer *p);
/* rank: this side's; to: the rank or role it means to reach (the
 * server's cfg->self, else refused as a relay) */
int loom_hs_hello(const uint8_t *key, struct loom_hs_peer *p, uint32_t kind, int rank, int size, int to,
		  const void *payload, size_t plen, double deadline);
int loom_hs_read_reply(const uint8_t *key, const struct loom_hs_peer *p, void *reply, size_t rlen,
		       double deadline);
/* the client without blocking: _start connects, then poll d->fd for
 * d->events and call _step: 0 under way, 1 authenticated (d->fd is the
 * connection), else LOOM_HS_DIAL_*: nothing loom answered, the server
 * closed without a reply after our hello (it refused or declined us), or
 * its reply was forged */
#define LOOM_HS_DIAL_UNREACHABLE (-1)
#define LOOM_HS_DIAL_DECLINED (-2)
#define LOOM_HS_DIAL_FORGED (-3)
struct loom_hs_dialer {
	int fd, phase, to;
	short events;
	size_t got;
	uint8_t buf[32];
	struct loom_hs_peer p;
};
int loom_hs_dialer_start(struct loom_hs_dialer *d, uint32_t ip, uint16_t port, int to);
int loom_hs_dialer_step(struct loom_hs_dialer *d, const uint8_t *key, uint32_t kind, int rank,
			int size, const void *payload, size_t plen);
/* a server that failed answers the next `count` dialers (until deadline)
 * with a challenge that says so, instead of leaving them to retry */
void loom_hs_give_up(int lfd, int count, double deadline);
int loom_fd_write_all(int fd, const void *buf, size_t len, double deadline);
int loom_fd_read_all(int fd, void *buf, size_t len, double deadline);

/* ---- transport_tcp.c: the engine ---- */
enum { TREQ_SEND = 1, TREQ_RECV = 2 };
struct loom_treq {
	int kind;
	int peer;               /* world rank */
	uint64_t ctx, tag;
	char *buf;
	size_t len;             /* send: bytes; recv: expected bytes */
	size_t off;
	int status;
	_Atomic int done;
	struct loom_bell *bell; /* rung on completion */
	struct loom_treq *next;
	int owned;              /* engine frees it (control messages) */
	uint64_t rid;           /* rendezvous: the sender's number for a large message */
	int eager;              /* send: never by rendezvous (point to point: a blocking
				 * send returns once its bytes are written, whatever
				 * the receiver does, as it always has) */
	unsigned char hdr[48];  /* send: wire header */
};
struct loom_engine;
/* What the engine needs of the world, filled in by the layer that makes
 * the engine (the bootstrap layer) and copied at create */
struct loom_engine_cfg {
	int rank, size;         /* this process's world rank, the world's size */
	uint64_t nonce;         /* the world's, the same on every rank: the hello's payload */
	double timeout;         /* LOOM_TIMEOUT: destroy waits up to min(timeout, 30 s) for goodbyes */
	void *arg;              /* handed back to every hook */
};
/* What the engine reports upward, to the communicators: a peer's
 * connection lost (every communicator with it fails with status), and a
 * control message for communicator ctx (CTL_STATUS_REQ: returns the
 * operations it has entered, for the engine's reply; CTL_ABORT: 1 when
 * it newly failed the communicator, and the engine passes the abort on;
 * else -1). A CTL_ABORT's aux is LOOM_ABORT_AUX(status, world rank that
 * aborted), so a passed-on abort still names its origin. Each hook gets
 * the cfg's arg. */
#define LOOM_ABORT_AUX(status, origin) \
	((int64_t)(((uint64_t)(uint32_t)((origin) + 1) << 32) | (uint32_t)(int32_t)(status)))
#define LOOM_ABORT_STATUS(aux) ((int)(int32_t)(uint32_t)((uint64_t)(aux) & 0xffffffffu))
#define LOOM_ABORT_ORIGIN(aux, from) \
	((int)((uint64_t)(aux) >> 32) ? (int)((uint64_t)(aux) >> 32) - 1 : (from))
struct loom_engine_hooks {
	void (*peer_lost)(void *arg, int peer, int status);  /* peer -1: this process was
								 * fenced: every communicator */
	int64_t (*control)(void *arg, int from, int type, uint64_t ctx, int64_t aux);
	/* NULL: every address was given at create; else the address of a
	 * peer given as port 0, asked for at its first dial (LOOM_SUCCESS) */
	int (*resolve)(void *arg, int peer, uint32_t *ip, uint16_t *port);
};
/* listen_fd (taken: kept open for the job's life, closed at destroy) and
 * every rank's address, ip and port (malloc'd arrays, taken: freed at
 * destroy, or at once where hooks->resolve looks addresses up or the
 * create fails): connections are made on first use, authenticated with
 * key (copied, wiped at destroy). *out is set before the engine's thread
 * starts (its hooks may run at once); a create that fails after setting
 * it leaves the engine to loom_engine_destroy. */
int loom_engine_create(struct loom_engine **out, const struct loom_engine_cfg *cfg, int listen_fd,
		       uint32_t *ip, uint16_t *port, const uint8_t *key,
		       const struct loom_engine_hooks *hooks);
void loom_engine_destroy(struct loom_engine *e);  /* NULL: nothing */
/* The calls below take the engine (NULL: a world without one; post and
 * cancel need one) and world ranks. */
void loom_tcp_post(struct loom_engine *e, struct loom_treq *r);
/* read what peer has sent, on this thread, if the engine is not at it */
void loom_tcp_pull(struct loom_engine *e, int peer);
/* Take r back before completion; after it returns the engine no longer
 * touches r or its buffer. */
void loom_tcp_cancel(struct loom_engine *e, struct loom_treq *r);
enum { CTL_ABORT = 2, CTL_STATUS_REQ = 3, CTL_STATUS_REP = 4, CTL_BYE = 5 };
void loom_tcp_control(struct loom_engine *e, int peer, int type, uint64_t ctx, int64_t a);
int loom_tcp_peer_gone(struct loom_engine *e, int peer);
/* transport_tcp_heartbeat.c (LOOM_HEARTBEAT): fence a peer agreed failed
 * (told if it still listens, closed, its hellos declined from now on);
 * whether this process fenced itself (it was silent long enough to be
 * counted failed); probe a peer: dial it if never connected, 1 when it
 * is known gone */
void loom_tcp_fence(struct loom_engine *e, int peer);
int loom_tcp_fenced(struct loom_engine *e);
int loom_tcp_probe(struct loom_engine *e, int peer);
/* the world grows to size ranks (more than now): ip and port of the
 * ranks from the engine's old size on (copied); what the engine knows
 * of rank i's address (0 and 0: nothing yet); the handshakes' key, for
 * a newcomer's hello (core/comm_grow.c) */
int loom_engine_grow(struct loom_engine *e, int size, const uint32_t *ip, const uint16_t *port);
void loom_engine_addr(struct loom_engine *e, int i, uint32_t *ip, uint16_t *port);
const uint8_t *loom_engine_key(const struct loom_engine *e);

/* one transfer of an operation (xfer.c starts them; the shm rings and
 * the engine move their bytes) */
enum { XSEND = 1, XRECV, XRECV_REDUCE };
struct loom_xreq {
	int kind, peer;           /* peer: comm rank */
	char *buf;
	size_t len, off;
	loom_dtype_t dt;
	loom_op_t op;
	int shm;
	int done, status;
	int nseg, segdone;
	struct loom_treq *segs;
	char *tmp;                /* TCP receive-reduce: where the bytes land first */
	int tmp_lent;             /* tmp is the communicator's scratch (xfer.c) */
};
/* ---- transport_shm.c ---- */
/* What the rings need of the communicator they serve, filled in by the
 * layer that owns it (comm/) and copied at attach: the segments' names
 * come from ctx, node and key; members is read only for log lines and
 * must outlive the attachment. */
struct loom_shm_group {
	int local_rank, local_size;    /* this rank among its node's members, and their number */
	int node;                      /* this rank's node (world node index) */
	uint64_t ctx;                  /* the communicator's context */
	uint8_t key[16];               /* random bits from rank 0, the same on every rank */
	double timeout;                /* how long the local ranks may be apart at attach */
	char name[64];                 /* the communicator's name, for log lines */
	const struct loom_rankmap *members;  /* local index -> communicator rank */
	/* NULL, or asked while the attach waits for the local peers (at most
	 * every 0.1 s; not kept after): a status once one of them is known
	 * gone, else 0 */
	int (*lost)(void *arg);
	void *lost_arg;
};
struct loom_rankmap;
struct loom_shm;
/* when the group has >1 local member and shm is allowed: *out set on success */
int loom_shm_attach(const struct loom_shm_group *g, struct loom_shm **out);
void loom_shm_detach(struct loom_shm *s);  /* NULL: nothing */
/* the checked create (local leader, O_EXCL) and open (the others, never
 * creating; owner, mode 0600 and size checked): an fd, or -1 logged */
int loom_shm_segment_create(const char *name, size_t size);
int loom_shm_segment_open(const char *name, size_t size, double deadline);
/* Move x's bytes on the ring to/from local member local_idx (x->peer's
 * index among the node's members); return bytes moved this call (0:
 * nothing possible now), or a negative status. */
int loom_shm_progress(struct loom_shm *s, int local_idx, struct loom_xreq *x, uint32_t tag);
struct loom_bell *loom_shm_bell(struct loom_shm *s);
/* its process no longer exists; it sleeps on its bell (s NULL: 0, both) */
int loom_shm_peer_gone(struct loom_shm *s, int local_idx);
int loom_shm_peer_asleep(struct loom_shm *s, int local_idx);
/* its process is stopped now (SIGSTOP, a debugger): /proc/PID/stat */
int loom_shm_peer_stopped(struct loom_shm *s, int local_idx);
/* here: note the CPU this rank runs on (as it posts a fast box or begins
 * a wait); beside: the local peer last noted the caller's CPU, so it is
 * not running now (unless moved since): spinning for it only keeps it
 * off this CPU */
void loom_shm_here(struct loom_shm *s);
int loom_shm_peer_beside(struct loom_shm *s, int local_idx);
/* A wait on the fast boxes that has spun long enough dozes: announce it
 * (loom_shm_doze(s, 1)), nap as often as needed, and end it
 * (loom_shm_doze(s, 0)). A nap sleeps on this rank's bell up to nap s
 * unless ready(arg) holds. Posters store without a fence and ring when
 * they see a dozer, so one that posts just as the doze is announced may
 * miss it: the first nap of a doze is LOOM_SHM_FIRST_NAP at most. */
#define LOOM_SHM_FIRST_NAP 50e-6
void loom_shm_doze(struct loom_shm *s, int on);
void loom_shm_nap(struct loom_shm *s, double nap, int (*ready)(void *), void *arg);
/* Fast boxes (small operations of a communicator inside one node): per
 * rank, a few used in turn, LOOM_FBOX_BYTES each, and a ring of entries
 * for posts of up to 8 bytes, several to a cache line (len says which).
 * writable: every peer (or local_idx) is done with what my box for seq
 * held last; mine: its data, to fill; post: publish it for seq; peek:
 * local rank local_idx's data for seq, NULL until posted (NULL and
 * *mismatch set, logged: a different kind or length);
 * done: this rank read what it needed of seq (saw_all: it saw every peer
 * post seq). */
#define LOOM_FBOX_BYTES 4096
uint64_t loom_shm_fbox_next(struct loom_shm *s);  /* number this rank's next fast-box use */
/* direct reads of a local peer's memory (process_vm_readv): whether they
 * work here (0 not known yet, 1, -1; kept per communicator), and one read */
int *loom_shm_direct(struct loom_shm *s);
int loom_shm_direct_allowed(void);  /* not turned off by LOOM_DIRECT_READS=0 */
int loom_shm_peer_read(struct loom_shm *s, int local_idx, void *dst, uint64_t src, size_t len);
/* the same into a local peer's memory (process_vm_writev) */
int loom_shm_peer_write(struct loom_shm *s, int local_idx, uint64_t dst, const void *src,
			size_t len);
/* local_idx -1: every peer; more: a waiter's test, true only once a
 * quarter of the ring is free too */
int loom_shm_fbox_writable(struct loom_shm *s, uint64_t seq, size_t len, int local_idx,
			   int more);
void *loom_shm_fbox_mine(struct loom_shm *s, uint64_t seq, size_t len);
void loom_shm_fbox_post(struct loom_shm *s, uint64_t seq, uint32_t kind, size_t len);
const void *loom_shm_fbox_peek(struct loom_shm *s, int local_idx, uint64_t seq, uint32_t kind,
			       size_t len, int *mismatch);
void loom_shm_fbox_done(struct loom_shm *s, uint64_t seq, int saw_all);
/* The rings slot by slot, with no copy in or out (coll_staged.c): to
 * returns the slot that the next message to local peer local_idx goes
 * in (NULL: the ring is full; NULL and *rc set: it could not be made),
 * to fill with up to LOOM_SHM_SLOT_BYTES and post; from returns the next
 * message from local_idx (NULL: none yet; NULL and *rc LOOM_ERR_MISMATCH,
 * logged: it is not tag's, or not len bytes), to read and release. A
 * message is the size of its ring slot; messages of one direction keep
 * their order, whether sent so or through loom_shm_progress. */
#define LOOM_SHM_SLOT_BYTES (64u * 1024)
void *loom_shm_slot_to(struct loom_shm *s, int local_idx, int *rc);
void loom_shm_slot_post(struct loom_shm *s, int local_idx, uint32_t tag, size_t len);
const void *loom_shm_slot_from(struct loom_shm *s, int local_idx, uint32_t tag, size_t len,
			       int *rc);
void loom_shm_slot_release(struct loom_shm *s, int local_idx);

#endif
