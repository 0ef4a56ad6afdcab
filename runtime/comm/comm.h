/* runtime/comm/comm.h: the world and communicator objects, the operation
 * descriptor and the backend interface every backend implements (native,
 * mpi, nccl), and what the algorithms and the engine need of a
 * communicator (comm_core.c). */
#ifndef LOOM_COMM_COMM_H
#define LOOM_COMM_COMM_H

#include "transport/transport.h"
#include "util/rankmap.h"
#include "util/intmap.h"

/* ---- the world ---- */
enum { LOOM_TR_AUTO = 0, LOOM_TR_SHM, LOOM_TR_TCP };
struct loom_world {
	int rank, size;
	uint64_t nonce;           /* the same on every rank, random from rank 0 */
	uint8_t shm_key[16];      /* random from rank 0: shm names (transport_shm.c) */
	int nnodes;
	struct loom_rankmap node_of;  /* world rank -> node index (first-appearance order) */
	char (*node_names)[64];   /* node index -> its name: nnodes, not N, names */
	int transport;            /* LOOM_TR_* */
	double timeout;
	int check;
	struct loom_engine *eng;
	pthread_mutex_t comms_lock;
	struct loom_comm *comms;  /* every live communicator, for the engine */
	int pmix;
	const char *how;          /* "pmix", "env", "single", "join" */
	int joined;               /* a newcomer's: its world communicator is a grown one */
};

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
	double called;  /* when the blocking call began (loom_op_clock); 0: read it when run */
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
	int (*device)(const struct loom_comm *);             /* NULL: no device (-1) */
	/* surviving a lost member (core/comm_ft.c); NULL: unsupported */
	int (*revoke)(struct loom_comm *);
	int (*agree)(struct loom_comm *, int *flag);
	int (*shrink)(struct loom_comm *, struct loom_comm **);
	int (*grow)(struct loom_comm *, int nnew, struct loom_comm **);
};

/* ---- communicators ---- */
struct loom_nbq;
struct loom_flight_slot;
struct loom_coll_state;
struct loom_comm {
	struct loom_world *w;
	const struct loom_backend *be;
	uint64_t ctx;
	int rank, size;
	/* the tables are rank maps (rankmap.h): a few words for a regular
	 * communicator; read them through the loom_comm_* functions below */
	struct loom_rankmap wr;   /* comm rank -> world rank */
	int local_rank, local_size;
	struct loom_rankmap lmem; /* local index -> comm rank (increasing) */
	int nnodes;               /* distinct nodes among members */
	struct loom_rankmap npos; /* comm rank -> node position in this comm (0..nnodes-1) */
	struct loom_rankmap lead; /* node position -> comm rank of its first member */
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
	struct loom_comm *lanec;
	/* coll/'s own state (coll/coll_state.h), made at its first use, and
	 * its destructor, which the destroy path calls: comm/ is below coll/ */
	struct loom_coll_state *coll;
	void (*coll_free)(struct loom_coll_state *);
	pthread_mutex_t p2p_lock;
	struct loom_intmap p2p;   /* peer -> its point-to-point sequence numbers */
	struct loom_nbq *nbq;
	/* timeout diagnosis: peers' entered seq, made by the first diagnosis
	 * (xfer.c) and read by the engine under comms_lock */
	_Atomic int64_t *_Atomic status_rep;
	struct loom_comm *next;       /* world->comms */
	struct loom_comm *parent;     /* freed with the world */
	int is_world;
	void *impl;                   /* other backends' own state */
	struct loom_metrics *metrics;  /* made at the first public operation */
	struct loom_flight_slot *flight;  /* flight record slot, made then too */
	int flight_tried;
	/* the agreements of core/comm_ft.c: calls made, the last failed set */
	uint64_t ft_epoch;
	int ft_nfailed;
	int *ft_failed;               /* comm ranks, ascending */
};

struct loom_comm *loom_comm_create(struct loom_world *w, uint64_t ctx, int n, const int *wranks,
				   int myrank, const char *name);
/* the same, made inside an operation of parent (NULL: none; not kept),
 * with its status: LOOM_ERR_PEER_LOST when a member of this node is gone
 * (parent's shared memory knows their pids), or parent's failure, while
 * its shared memory is being made */
int loom_comm_make(struct loom_world *w, uint64_t ctx, int n, const int *wranks, int myrank,
		   const char *name, struct loom_comm *parent, struct loom_comm **out);
void loom_comm_destroy(struct loom_comm *c);
int loom_comm_ensure_hier(struct loom_comm *c);
struct loom_comm *loom_comm_find(struct loom_world *w, uint64_t ctx); /* comms_lock held */
struct loom_bell *loom_comm_bell(struct loom_comm *c);
uint64_t loom_op_enter(struct loom_comm *c);  /* start an operation: its seq */
/* engine hooks (comm_core.c) */
void loom_comms_peer_lost(struct loom_world *w, int peer, int status);
int64_t loom_comms_control(struct loom_world *w, int from, int type, uint64_t ctx, int64_t aux);
int loom_comm_uses_shm(const struct loom_comm *c, int peer);

int loom_comm_max_local(const struct loom_comm *c);

/* ---- a communicator's tables ---- */
static inline int loom_comm_wrank(const struct loom_comm *c, int rank)
{
	return loom_rankmap_get(&c->wr, rank);
}
static inline int loom_comm_node_pos(const struct loom_comm *c, int rank)
{
	return loom_rankmap_get(&c->npos, rank);
}
static inline int loom_comm_leader(const struct loom_comm *c, int node_pos)
{
	return loom_rankmap_get(&c->lead, node_pos);
}
static inline int loom_comm_local_member(const struct loom_comm *c, int local_idx)
{
	return loom_rankmap_get(&c->lmem, local_idx);
}
/* rank's index among my node's members; -1 when it is on another node */
static inline int loom_comm_local_idx(const struct loom_comm *c, int rank)
{
	if (c->nnodes == 1)  /* all here, in rank order */
		return rank;
	if (loom_rankmap_get(&c->npos, rank) != loom_rankmap_get(&c->npos, c->rank))
		return -1;
	return loom_rankmap_find(&c->lmem, rank);
}
static inline int loom_world_node_of(const struct loom_world *w, int wrank)
{
	return loom_rankmap_get(&w->node_of, wrank);
}
/* heap bytes of a communicator's per-member tables (tests, docs/scale.md) */
size_t loom_comm_table_bytes(const struct loom_comm *c);

#endif
