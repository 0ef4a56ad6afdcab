/* runtime/loom_internal.h: what the runtime's files share. Not installed.
 *
 * Layers, bottom up:
 *   log.c, sync.c, reduce_ops.c         logging, time/futex bells, kernels
 *   transport_tcp.c                     world-wide TCP mesh + progress engine
 *   transport_shm.c                     per-communicator shm rings (in a node)
 *   xfer.c                              point-to-point inside one operation,
 *                                       over either transport; deadlines
 *   coll_*.c                            algorithms on top of xfer
 *   op.c                                the native backend runs one
 *                                       operation (LOOM_CHECK, fp16, AVG)
 *                                       and its non-blocking queue
 *   progress.c                          requests, loom_wait/loom_test
 *   comm.c, mesh.c, world.c, bootstrap_* communicators, the native world
 *   backend_native.c, backend_mpi.c,    instances of struct loom_backend
 *   backend_nccl.c
 *   coll.c, init.c, backend.c           the public layer: checks,
 *                                       descriptors, metrics, dispatch
 */
#ifndef LOOM_INTERNAL_H
#define LOOM_INTERNAL_H

#include "config.h"
#include "loom.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

/* ---- log.c ---- */
enum { LOOM_LOG_ERROR = 0, LOOM_LOG_WARN, LOOM_LOG_INFO, LOOM_LOG_TRACE };
extern int loom_log_level_v;
void loom_log_init(void);
void loom_log_identity(int rank, int size, const char *node);
void loom_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define LOOM_ERR(...) loom_log(LOOM_LOG_ERROR, __VA_ARGS__)
#define LOOM_WARN(...) loom_log(LOOM_LOG_WARN, __VA_ARGS__)
#define LOOM_INFO(...) do { if (loom_log_level_v >= LOOM_LOG_INFO) loom_log(LOOM_LOG_INFO, __VA_ARGS__); } while (0)
#define LOOM_TRACE(...) do { if (loom_log_level_v >= LOOM_LOG_TRACE) loom_log(LOOM_LOG_TRACE, __VA_ARGS__); } while (0)

/* ---- sync.c: time, environment, futex bells ---- */
double loom_now(void);  /* monotonic seconds */
double loom_env_double(const char *name, double dflt);
uint64_t loom_mix64(uint64_t a, uint64_t b);

/* A bell: a counter a waiter sleeps on (futex, also across processes when
 * it lives in shared memory). Ring it after changing what a waiter checks. */
struct loom_bell {
	_Atomic uint32_t seq;
	_Atomic uint32_t waiters;
};
void loom_bell_ring(struct loom_bell *b);
/* Sleep until the bell's seq differs from seen or timeout_s passes. */
void loom_bell_wait(struct loom_bell *b, uint32_t seen, double timeout_s);

/* ---- reduce_ops.c ---- */
float loom_half_to_float(uint16_t h);
uint16_t loom_float_to_half(float f);
float loom_bf16_to_float(uint16_t h);
uint16_t loom_float_to_bf16(float f);
int loom_dtype_ok(int dtype);
int loom_op_ok(int op);
/* inout[i] = inout[i] op in[i]; AVG reduces as SUM; 16-bit floats via fp32
 * per element (one rounding per call). */
void loom_reduce_local(void *inout, const void *in, size_t count, loom_dtype_t dtype, loom_op_t op);
/* AVG's last step: divide by n (integers truncate). */
void loom_avg_finish(void *buf, size_t count, loom_dtype_t dtype, int n);
void loom_to_f32(float *dst, const void *src, size_t count, loom_dtype_t dtype);
void loom_from_f32(void *dst, const float *src, size_t count, loom_dtype_t dtype);
static inline int loom_dtype_is16(loom_dtype_t d) { return d == LOOM_FLOAT16 || d == LOOM_BFLOAT16; }

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

/* ---- transport_shm.c ---- */
struct loom_shm;
int loom_shm_attach(struct loom_comm *c);   /* when c has >1 local member and shm allowed */
void loom_shm_detach(struct loom_comm *c);
/* Move bytes on the ring to/from local member peer_l; return bytes moved
 * this call (0: nothing possible now), or a negative status. */
struct loom_xreq;
int loom_shm_progress(struct loom_comm *c, struct loom_xreq *x, uint32_t tag);
struct loom_bell *loom_shm_bell(struct loom_comm *c);
int loom_shm_peer_pid(struct loom_comm *c, int local_idx);

/* ---- the world ---- */
enum { LOOM_TR_AUTO = 0, LOOM_TR_SHM, LOOM_TR_TCP };
struct loom_world {
	int rank, size;
	uint64_t nonce;           /* the same on every rank; names shm segments */
	int nnodes;
	int *node_of;             /* world rank -> node index (first-appearance order) */
	char (*nodename)[64];     /* world rank -> node name */
	int *pid;                 /* world rank -> pid */
	int transport;            /* LOOM_TR_* */
	double timeout;
	int check;
	struct loom_engine *eng;
	pthread_mutex_t comms_lock;
	struct loom_comm *comms;  /* every live communicator, for the engine */
	int pmix;
	const char *how;          /* "pmix", "env", "single" */
};

/* ---- the backend interface: native, mpi and nccl are instances of it ----
 * The public layer (coll.c, progress.c, comm.c, init.c) checks the
 * arguments, builds one operation descriptor, counts metrics for blocking
 * and non-blocking calls alike, then calls these. A request a backend
 * returns is a loom_request_t: the native ones of progress.c, or its own
 * state wrapped by loom_req_wrap (then wait/test get that state back and
 * free it once complete). */
struct loom_opdesc;
struct loom_backend {
	const char *name;
	int (*world)(struct loom_comm **world);
	/* one collective, arguments already validated; req NULL: blocking */
	int (*coll)(struct loom_comm *, const struct loom_opdesc *, loom_request_t **req);
	/* point to point, arguments already validated; req NULL: blocking */
	int (*p2p)(struct loom_comm *, int is_send, void *buf, size_t count, loom_dtype_t dt,
		   int peer, loom_request_t **req);
	int (*wait)(void *impl);
	int (*test)(void *impl, int *done);
	int (*split)(struct loom_comm *, int color, int key, struct loom_comm **);
	int (*dup)(struct loom_comm *, struct loom_comm **);
	int (*free)(struct loom_comm *);
	int (*abort)(struct loom_comm *);
	int (*finalize)(struct loom_comm *world);
	int (*set_stream)(struct loom_comm *, void *stream);  /* NULL: unsupported */
};
extern const struct loom_backend loom_native_backend;
#ifdef HAVE_MPI
extern const struct loom_backend loom_mpi_backend;   /* backend_mpi.c */
#endif
#ifdef HAVE_NCCL
extern const struct loom_backend loom_nccl_backend;  /* backend_nccl.c */
#endif

/* ---- communicators ---- */
struct loom_nbq;
struct loom_comm {
	struct loom_world *w;
	const struct loom_backend *be;
	uint64_t ctx;
	int rank, size;
	int *wrank;               /* comm rank -> world rank */
	int local_rank, local_size;
	int *local_idx;           /* comm rank -> index among my node's members, -1 elsewhere */
	int *local_members;       /* local index -> comm rank */
	int nnodes;               /* distinct nodes among members */
	int *node_pos;            /* comm rank -> node position in this comm (0..nnodes-1) */
	int *leaders;             /* node position -> comm rank of its first member */
	int max_local;            /* most members on one node */
	char name[64];
	double timeout;
	int check;
	int internal;             /* node/leader sub-communicator */
	_Atomic uint64_t seq;     /* collectives entered */
	uint64_t nsplit;
	_Atomic int failed;       /* 0, or the status every later op returns */
	pthread_mutex_t exec;     /* one collective at a time */
	struct loom_shm *shm;
	struct loom_bell pbell;   /* bell when there is no shm */
	struct loom_comm *nodec, *leaderc;
	pthread_mutex_t p2p_lock;
	uint64_t *p2p_sent, *p2p_rcvd;
	struct loom_nbq *nbq;
	_Atomic int64_t *status_rep;  /* timeout diagnosis: peers' entered seq */
	struct loom_comm *next;       /* world->comms */
	struct loom_comm *parent;     /* freed with the world */
	int is_world;
	void *impl;                   /* other backends' own state */
	struct loom_metrics *metrics;  /* made at the first public operation */
};

struct loom_comm *loom_comm_create(struct loom_world *w, uint64_t ctx, int n, const int *wranks,
				   int myrank, const char *name);
void loom_comm_destroy(struct loom_comm *c);
int loom_comm_ensure_hier(struct loom_comm *c);
struct loom_comm *loom_comm_find(struct loom_world *w, uint64_t ctx); /* comms_lock held */
struct loom_bell *loom_comm_bell(struct loom_comm *c);
uint64_t loom_op_enter(struct loom_comm *c);  /* start an operation: its seq */
/* engine hooks (comm_core.c) */
void loom_comms_peer_lost(struct loom_world *w, int peer, int status);
int64_t loom_comms_control(struct loom_world *w, int from, int type, uint64_t ctx, int64_t aux);
int loom_comm_uses_shm(const struct loom_comm *c, int peer);

/* ---- xfer.c: transfers inside one operation ---- */
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
	char *tmp;
};
struct loom_xctx {
	struct loom_comm *c;
	const char *opname;
	uint64_t seq;
	uint64_t tag;
	double deadline, started;
	struct loom_comm *top;
	uint64_t topseq;
	struct loom_xreq **x;
	int n, cap;
	int status;
	struct loom_xreq *inl[16];  /* small operations allocate nothing */
	struct loom_xreq pool[8];
};
#define LOOM_TAG_CHECK (1ull << 62)
#define LOOM_TAG_P2P (1ull << 63)
void loom_x_begin(struct loom_xctx *x, struct loom_comm *c, const char *opname, uint64_t seq,
		  uint64_t tag, double deadline);
int loom_x_send(struct loom_xctx *x, int peer, const void *buf, size_t len);
int loom_x_recv(struct loom_xctx *x, int peer, void *buf, size_t len);
int loom_x_recv_reduce(struct loom_xctx *x, int peer, void *buf, size_t count, loom_dtype_t dt,
		       loom_op_t op);
int loom_x_wait(struct loom_xctx *x, int handle);  /* -1: all */
int loom_x_end(struct loom_xctx *x);               /* waits for all, frees; returns status */
void loom_x_abandon(struct loom_xctx *x);          /* cancel whatever is left */
struct loom_opctx;
void loom_x_begin_o(struct loom_xctx *x, struct loom_comm *c, const struct loom_opctx *o,
		    uint64_t tag);
void loom_report_timeout(struct loom_comm *c, const char *opname, uint64_t seq, double waited,
			 const int *waiting, int nwaiting, struct loom_comm *top, uint64_t topseq);

/* ---- algorithms (coll_*.c). op is never AVG here; dtype never 16-bit for
 * reductions. deadline is absolute (loom_now()). ---- */
struct loom_opctx {
	const char *name;
	double deadline;
	uint64_t seq;   /* this comm's sequence number: the tag */
	struct loom_comm *top;  /* the user's communicator and its sequence */
	uint64_t topseq;        /* number (timeout diagnosis) */
};
int loom_coll_allreduce(struct loom_comm *c, const void *s, void *r, size_t n, loom_dtype_t dt,
			loom_op_t op, struct loom_opctx *o);
int loom_coll_bcast(struct loom_comm *c, void *buf, size_t bytes, int root, struct loom_opctx *o);
int loom_coll_reduce(struct loom_comm *c, const void *s, void *r, size_t n, loom_dtype_t dt,
		     loom_op_t op, int root, struct loom_opctx *o);
int loom_coll_allgather(struct loom_comm *c, const void *s, void *r, size_t bytes,
			struct loom_opctx *o);
int loom_coll_reduce_scatter(struct loom_comm *c, const void *s, void *r, size_t n,
			     loom_dtype_t dt, loom_op_t op, struct loom_opctx *o);
int loom_coll_alltoall(struct loom_comm *c, const void *s, void *r, size_t bytes,
		       struct loom_opctx *o);
int loom_coll_barrier(struct loom_comm *c, struct loom_opctx *o);
/* block i of count elements split over n ranks (first count%n get one more) */
static inline size_t loom_blk_cnt(size_t count, int n, int i)
{
	return count / (size_t)n + ((size_t)i < count % (size_t)n);
}
static inline size_t loom_blk_off(size_t count, int n, int i)
{
	size_t r = count % (size_t)n;
	return (size_t)i * (count / (size_t)n) + ((size_t)i < r ? (size_t)i : r);
}
static inline int loom_mod(int a, int n) { return ((a % n) + n) % n; }

/* ---- plan.c: which algorithm ---- */
enum { LOOM_ALG_TRIVIAL = 0, LOOM_ALG_RD, LOOM_ALG_RING, LOOM_ALG_HIER, LOOM_ALG_TREE,
       LOOM_ALG_CHAIN };
int loom_plan_allreduce(int transport, int size, int nnodes, int local_size_max, size_t bytes,
			size_t count);
int loom_plan_bcast(int transport, int size, int nnodes, int local_size_max, size_t bytes);
int loom_plan_reduce(int transport, int size, int nnodes, int local_size_max, size_t bytes,
		     size_t count);
int loom_plan_uses_hier(int transport, int size, int nnodes, int local_size_max);
int loom_comm_max_local(const struct loom_comm *c);
#define LOOM_SMALL_BYTES (32 * 1024)

/* ---- coll.c / progress.c ---- */
enum { LOOM_OP_ALLREDUCE = 1, LOOM_OP_BCAST, LOOM_OP_REDUCE, LOOM_OP_ALLGATHER,
       LOOM_OP_REDUCE_SCATTER, LOOM_OP_ALLTOALL, LOOM_OP_BARRIER };
struct loom_opdesc {
	int kind;
	const void *s;
	void *r;
	size_t count;
	loom_dtype_t dt;
	loom_op_t op;
	int root;
};
const char *loom_opdesc_name(int kind);
int loom_op_validate(const struct loom_comm *c, const struct loom_opdesc *d);
int loom_op_run(struct loom_comm *c, const struct loom_opdesc *d);  /* exec held */
/* the native backend's entries (coll.c, progress.c, comm.c, init.c) */
int loom_native_coll(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req);
int loom_nbq_post(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req);
void loom_nbq_drain(struct loom_comm *c);
void loom_nbq_stop(struct loom_comm *c);
void loom_native_destroy(struct loom_comm *c);  /* its queue, then the communicator */
int loom_native_p2p(struct loom_comm *c, int is_send, void *buf, size_t count, loom_dtype_t dt,
		    int peer, loom_request_t **req);
int loom_native_split(struct loom_comm *c, int color, int key, struct loom_comm **out);
int loom_native_dup(struct loom_comm *c, struct loom_comm **out);
int loom_native_free(struct loom_comm *c);
int loom_native_abort(struct loom_comm *c);
int loom_native_world(struct loom_comm **world);
int loom_native_finalize(struct loom_comm *world);

/* ---- bootstrap ---- */
struct loom_boot {
	int rank, size;
	uint64_t nonce;
	int listen_fd;
	int *peer_fds;           /* world rank -> connected socket (-1 for self) */
	char (*nodename)[64];
	int *pid;
};
int loom_boot_env(struct loom_boot *b);
#ifdef HAVE_PMIX
int loom_boot_pmix(struct loom_boot *b);
int loom_pmix_finalize(void);
#endif
/* shared by both: listen, and build the mesh from an address table */
int loom_boot_listen(int *fd, uint16_t *port);
int loom_boot_mesh(struct loom_boot *b, const uint32_t *ip, const uint16_t *port, double deadline);
void loom_node_identity(char out[64]);
int loom_fd_write_all(int fd, const void *buf, size_t len, double deadline);
int loom_fd_read_all(int fd, void *buf, size_t len, double deadline);

/* ---- progress.c: requests ---- */
loom_request_t *loom_req_wrap(struct loom_comm *c, void *impl);
loom_request_t *loom_req_coll(struct loom_comm *c, const struct loom_opdesc *d);
loom_request_t *loom_req_next(loom_request_t *q);
void loom_req_set_next(loom_request_t *q, loom_request_t *next);
const struct loom_opdesc *loom_req_desc(const loom_request_t *q);
void loom_req_finish(loom_request_t *q, int status);
/* Count q's operation (enum loom_metric_op) on c when it completes. */
void loom_req_meter(loom_request_t *q, struct loom_comm *c, int metric, size_t bytes, double t0);
/* Count a public operation that ended with rc; returns rc. */
int loom_metered(struct loom_comm *c, int metric, size_t bytes, double t0, int rc);

#endif
