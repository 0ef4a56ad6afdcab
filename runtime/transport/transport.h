/* runtime/transport/transport.h: bytes between processes: the world-wide
 * TCP engine (its own thread) and the per-communicator shared-memory
 * rings. Reads the world and communicator tables (comm/comm.h) as data;
 * reports upward only through the hooks it is given. */
#ifndef LOOM_TRANSPORT_TRANSPORT_H
#define LOOM_TRANSPORT_TRANSPORT_H

#include "util/util.h"

struct loom_world;
struct loom_comm;

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
	unsigned char hdr[48];  /* send: wire header */
};
struct loom_engine;
struct loom_world;
/* What the engine reports upward, to the communicators: a peer's
 * connection lost (every communicator with it fails with status), and a
 * control message for communicator ctx (CTL_STATUS_REQ: returns the
 * operations it has entered, for the engine's reply; else -1). */
struct loom_engine_hooks {
	void (*peer_lost)(struct loom_world *w, int peer, int status);
	int64_t (*control)(struct loom_world *w, int from, int type, uint64_t ctx, int64_t aux);
};
int loom_engine_create(struct loom_world *w, int listen_fd, int *peer_fds,
		       const struct loom_engine_hooks *hooks);
void loom_engine_destroy(struct loom_world *w);
void loom_tcp_post(struct loom_world *w, struct loom_treq *r);
/* Take r back before completion; after it returns the engine no longer
 * touches r or its buffer. */
void loom_tcp_cancel(struct loom_world *w, struct loom_treq *r);
enum { CTL_ABORT = 2, CTL_STATUS_REQ = 3, CTL_STATUS_REP = 4, CTL_BYE = 5 };
void loom_tcp_control(struct loom_world *w, int peer, int type, uint64_t ctx, int64_t a);
int loom_tcp_peer_gone(struct loom_world *w, int peer);

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
struct loom_shm;
int loom_shm_attach(struct loom_comm *c);   /* when c has >1 local member and shm allowed */
void loom_shm_detach(struct loom_comm *c);
/* the checked create (local leader, O_EXCL) and open (the others, never
 * creating; owner, mode 0600 and size checked): an fd, or -1 logged */
int loom_shm_segment_create(const char *name, size_t size);
int loom_shm_segment_open(const char *name, size_t size, double deadline);
/* Move bytes on the ring to/from local member peer_l; return bytes moved
 * this call (0: nothing possible now), or a negative status. */
int loom_shm_progress(struct loom_comm *c, struct loom_xreq *x, uint32_t tag);
struct loom_bell *loom_shm_bell(struct loom_comm *c);
int loom_shm_peer_pid(struct loom_comm *c, int local_idx);
int loom_shm_peer_asleep(struct loom_comm *c, int local_idx);
/* sleep on this rank's bell up to nap s unless ready(arg) holds (checked
 * after announcing the sleep, so posters ring) */
void loom_shm_nap(struct loom_comm *c, double nap, int (*ready)(void *), void *arg);
/* Fast boxes (small operations of a communicator inside one node): per
 * rank and operation parity, LOOM_FBOX_BYTES. writable: every peer (or
 * local_idx) is done with what my box of seq's parity held; mine: its data, to fill; post:
 * publish it for seq; peek: local rank local_idx's data for seq, NULL
 * until posted (a different kind or length sets *mismatch, logged);
 * done: this rank read what it needed of seq (saw_all: it saw every peer
 * post seq). */
#define LOOM_FBOX_BYTES 4096
uint64_t loom_shm_fbox_next(struct loom_comm *c);  /* number this rank's next fast-box use */
/* direct reads of a local peer's memory (process_vm_readv): whether they
 * work here (0 not known yet, 1, -1; kept per communicator), and one read */
int *loom_shm_direct(struct loom_comm *c);
int loom_shm_direct_allowed(void);  /* not turned off by LOOM_DIRECT_READS=0 */
int loom_shm_peer_read(struct loom_comm *c, int local_idx, void *dst, uint64_t src, size_t len);
int loom_shm_fbox_writable(struct loom_comm *c, uint64_t seq, int local_idx);  /* -1: all */
void *loom_shm_fbox_mine(struct loom_comm *c, uint64_t seq);
void loom_shm_fbox_post(struct loom_comm *c, uint64_t seq, uint32_t kind, size_t len);
const void *loom_shm_fbox_peek(struct loom_comm *c, int local_idx, uint64_t seq, uint32_t kind,
			       size_t len, int *mismatch);
void loom_shm_fbox_done(struct loom_comm *c, uint64_t seq, int saw_all);

#endif
