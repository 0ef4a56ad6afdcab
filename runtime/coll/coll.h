/* runtime/coll/coll.h: transfers inside one operation (xfer.c), the flat
 * algorithms over them (coll_*.c), the choice among them and the
 * hierarchical compositions above them (coll_hier.c, plan.c). */
#ifndef LOOM_COLL_COLL_H
#define LOOM_COLL_COLL_H

#include "comm/comm.h"
#include "coll/coll_state.h"

/* ---- xfer.c: transfers inside one operation ---- */
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
#define LOOM_TAG_PHASE2 (1ull << 61)  /* a second phase posted ahead (ring allgather) */
#define LOOM_TAG_CHECK (1ull << 62)
#define LOOM_TAG_P2P (1ull << 63)
/* an operation's tag as the shm rings carry it */
static inline uint32_t loom_x_shm_tag(uint64_t tag) { return (uint32_t)(tag ^ (tag >> 32)); }
void loom_x_begin(struct loom_xctx *x, struct loom_comm *c, const char *opname, uint64_t seq,
		  uint64_t tag, double deadline);
int loom_x_send(struct loom_xctx *x, int peer, const void *buf, size_t len);
int loom_x_recv(struct loom_xctx *x, int peer, void *buf, size_t len);
int loom_x_recv_reduce(struct loom_xctx *x, int peer, void *buf, size_t count, loom_dtype_t dt,
		       loom_op_t op);
int loom_x_wait(struct loom_xctx *x, int handle);  /* -1: all */
/* wait until ready(arg), a change local rank peer makes in shared memory,
 * with the deadline and liveness checks of loom_x_wait */
int loom_x_wait_shm(struct loom_xctx *x, int peer, int (*ready)(void *), void *arg);
/* the same for room that peer frees (a box it is done with) while this
 * rank still has work queued ahead of it: looks every LOOM_SPACE_POLL
 * spins only, so that the peer's stores find their line at home */
int loom_x_wait_shm_space(struct loom_xctx *x, int peer, int (*ready)(void *), void *arg);
/* how long this communicator's waiters yield before they sleep, and the
 * record that decides it: after LOOM_SLEEPY_RUN waits in a row that
 * ended asleep, none (xfer.c says why) */
#define LOOM_SLEEPY_RUN 4
double loom_x_yield_window(const struct loom_comm *c);
void loom_x_wait_ended(struct loom_comm *c, int slept);
int loom_x_end(struct loom_xctx *x);               /* waits for all, frees; returns status */
void loom_x_abandon(struct loom_xctx *x);          /* cancel whatever is left */
/* the communicator's failure (its own, or its parent's), 0 if none */
int loom_x_comm_failed(struct loom_comm *c);
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
	double started; /* when it began (coarse clock): waits report from here */
	uint64_t seq;   /* this comm's sequence number: the tag */
	struct loom_comm *top;  /* the user's communicator and its sequence */
	uint64_t topseq;        /* number (timeout diagnosis) */
};
int loom_coll_allreduce(struct loom_comm *c, const void *s, void *r, size_t n, loom_dtype_t dt,
			loom_op_t op, struct loom_opctx *o);
int loom_coll_bcast(struct loom_comm *c, void *buf, size_t bytes, int root, struct loom_opctx *o);
/* the same, the root's data at src (NULL or buf: already there; else the root's buf
 * gets a copy, which may overlap src) */
int loom_coll_bcast_from(struct loom_comm *c, const void *src, void *buf, size_t bytes, int root,
			 struct loom_opctx *o);
int loom_coll_reduce(struct loom_comm *c, const void *s, void *r, size_t n, loom_dtype_t dt,
		     loom_op_t op, int root, struct loom_opctx *o);
int loom_coll_allgather(struct loom_comm *c, const void *s, void *r, size_t bytes,
			struct loom_opctx *o);
int loom_coll_reduce_scatter(struct loom_comm *c, const void *s, void *r, size_t n,
			     loom_dtype_t dt, loom_op_t op, struct loom_opctx *o);
int loom_coll_alltoall(struct loom_comm *c, const void *s, void *r, size_t bytes,
		       struct loom_opctx *o);
int loom_coll_barrier(struct loom_comm *c, struct loom_opctx *o);
/* ---- the flat algorithms of the collectives with a hierarchical form
 * (coll_allreduce.c, coll_reduce.c, coll_bcast.c): coll_hier.c chooses
 * among them and composes them; they never call up into it ---- */
/* allreduce in place on buf: recursive doubling, ring */
int loom_rd_allreduce(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
		      struct loom_opctx *o);
int loom_ring_allreduce(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
			struct loom_opctx *o);
/* the ring's halves: after the reduce-scatter rank r holds block (r+k) % N
 * of buf reduced over all ranks (k = 1 the ring's own; k = 0 where the
 * lanes need block r, as the direct reads leave it); the allgather
 * spreads every block from there */
int loom_ring_rs(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
		 struct loom_opctx *o, int k);
int loom_ring_ag(struct loom_comm *c, char *buf, size_t n, size_t es, struct loom_opctx *o, int k);
/* reduce to root: binomial tree, ring reduce-scatter + gather */
int loom_tree_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
		     loom_op_t op, int root, struct loom_opctx *o);
int loom_ring_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
		     loom_op_t op, int root, struct loom_opctx *o);
/* broadcast in place on buf: binomial tree, pipelined chain */
int loom_tree_bcast(struct loom_comm *c, char *buf, size_t bytes, int root, struct loom_opctx *o);
int loom_chain_bcast(struct loom_comm *c, char *buf, size_t bytes, int root, struct loom_opctx *o);

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

/* ---- coll_fbox.c: small operations of a one-node communicator ---- */
int loom_fbox_allreduce(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
			struct loom_opctx *o);
int loom_fbox_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
		     loom_op_t op, int root, struct loom_opctx *o);
int loom_fbox_bcast(struct loom_comm *c, char *buf, size_t bytes, int root, struct loom_opctx *o);
int loom_fbox_allgather(struct loom_comm *c, const char *s, char *r, size_t bytes,
			struct loom_opctx *o);
int loom_fbox_reduce_scatter(struct loom_comm *c, const char *s, char *r, size_t n,
			     loom_dtype_t dt, loom_op_t op, struct loom_opctx *o);
int loom_fbox_alltoall(struct loom_comm *c, const char *s, char *r, size_t bytes,
		       struct loom_opctx *o);
int loom_fbox_barrier(struct loom_comm *c, struct loom_opctx *o);

/* ---- coll_staged.c ---- */
/* in a node, from these sizes a rank, allreduce (its buffer), and
 * allgather and alltoall (their result) go through the ring slots with
 * streaming stores rather than direct reads (plan.c says why) */
#define LOOM_STAGED_REDUCE_BYTES (256u << 10)
#define LOOM_STAGED_COPY_BYTES (4u << 20)
/* in-node allreduce through the ring slots, s may be r; LOOM_ALG_STAGED */
int loom_staged_allreduce(struct loom_comm *c, const char *s, char *r, size_t n,
			  loom_dtype_t dt, loom_op_t op, struct loom_opctx *o);
/* the same for allgather (mine: this rank's part, which may be its place
 * in r) and alltoall (s apart from r) */
int loom_staged_allgather(struct loom_comm *c, const char *mine, char *r, size_t bytes,
			  struct loom_opctx *o);
int loom_staged_alltoall(struct loom_comm *c, const char *s, char *r, size_t bytes,
			 struct loom_opctx *o);
/* ---- near.c: for what plan.c gives the slots (loom_plan_staged), of
 * bytes of result: 1 = the slots (written with streaming stores while
 * c's coll state says near_far), 0 = direct reads (LOOM_STAGED=0).
 * Counts the call, and at the first and once LOOM_NEAR_EVERY calls or
 * LOOM_NEAR_BYTES have gone by, measures with the peers how fast their
 * cores hand a line over (a collective: every rank of c calls it at the
 * same calls, with the same bytes). 0 with *rc set on failure. ---- */
int loom_staged_wanted(struct loom_comm *c, size_t bytes, struct loom_opctx *o, int *rc);
enum { LOOM_STAGED_AUTO = 1, LOOM_STAGED_ALWAYS, LOOM_STAGED_STREAM, LOOM_STAGED_NEVER };
/* LOOM_STAGED's value: auto (NULL, empty), 1, stream, 0; -1 otherwise */
int loom_staged_mode_parse(const char *v);
/* 1 when two of the n CPUs (-1: unknown) are the same */
int loom_cpus_shared(const int32_t *cpu, int n);
/* cached stores into the slots, when the slowest rank's fast-box
 * allreduce took worst_ns, or ranks share a CPU (their hand-offs stay in
 * its cache); else streaming ones */
int loom_cached_slots(uint64_t worst_ns, int cpus_shared);
/* whether to look again, calls and bytes of results since the last look */
int loom_near_due(uint64_t calls, uint64_t bytes);
/* a look to set aside (a rank kept off its CPU), after tries such in a row */
int loom_look_unsure(uint64_t worst_ns, int cpus_shared, int tries);
#define LOOM_NEAR_UNSURE_NS 2000u
#define LOOM_NEAR_UNSURE_TRIES 3
#define LOOM_NEAR_NS 240u     /* between near and far hand-offs (near.c) */
#define LOOM_NEAR_ROUNDS 8
#define LOOM_NEAR_BATCHES 8
#define LOOM_NEAR_EVERY 64
#define LOOM_NEAR_BYTES (256ull << 20)  /* 64 MiB allreduces: every 4th */

/* in-node reduce whose peers' inputs fit one slot together; LOOM_ALG_SLOTS */
int loom_slots_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
		      loom_op_t op, int root, struct loom_opctx *o);

/* ---- coll_direct.c: large operations of a one-node communicator by
 * direct reads of the peers' buffers. *fallback 1: not possible here and
 * nothing done (the caller runs its ring algorithm). ---- */
int loom_direct_allreduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
			  loom_op_t op, struct loom_opctx *o, int *fallback);
int loom_direct_rs(struct loom_comm *c, const char *s, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
		   struct loom_opctx *o, int *fallback);
int loom_direct_ag(struct loom_comm *c, char *buf, size_t n, size_t es, struct loom_opctx *o,
		   int *fallback);
int loom_direct_reduce_scatter(struct loom_comm *c, const char *s, char *r, size_t n,
			       loom_dtype_t dt, loom_op_t op, struct loom_opctx *o, int *fallback);
int loom_direct_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
		       loom_op_t op, int root, struct loom_opctx *o, int *fallback);
int loom_direct_bcast(struct loom_comm *c, const char *src, char *buf, size_t bytes, int root,
		      struct loom_opctx *o, int *fallback);
int loom_direct_allgather(struct loom_comm *c, const char *src, char *r, size_t bytes,
			  struct loom_opctx *o, int *fallback);
int loom_direct_alltoall(struct loom_comm *c, const char *s, char *r, size_t bytes,
			 struct loom_opctx *o, int *fallback);

/* ---- plan.c: which algorithm ---- */
enum { LOOM_ALG_TRIVIAL = 0, LOOM_ALG_RD, LOOM_ALG_RING, LOOM_ALG_HIER, LOOM_ALG_TREE,
       LOOM_ALG_CHAIN, LOOM_ALG_FBOX,
       LOOM_ALG_LANES_RS, LOOM_ALG_DIRECT, LOOM_ALG_STAGED, LOOM_ALG_SLOTS };
/* the fast boxes, for an operation where each rank posts post_bytes */
int loom_plan_fbox(int transport, int size, int nnodes, size_t post_bytes);
/* direct reads, for an operation of bytes per rank buffer */
int loom_plan_direct(int transport, int size, int nnodes, size_t bytes);
/* the staged slots, bytes per rank result: allreduce (reduces), or
 * allgather and alltoall */
int loom_plan_staged(int transport, int size, int nnodes, size_t bytes, int reduces);
int loom_plan_allreduce(int transport, int size, int nnodes, int local_size_max, size_t bytes,
			size_t count);
int loom_plan_bcast(int transport, int size, int nnodes, int local_size_max, size_t bytes);
int loom_plan_bcast_node_part(int transport, int size, size_t bytes);
int loom_plan_reduce(int transport, int size, int nnodes, int local_size_max, size_t bytes,
		     size_t count);
int loom_plan_uses_hier(int transport, int size, int nnodes, int local_size_max);
#define LOOM_SMALL_BYTES (32 * 1024)
#define LOOM_DIRECT_BYTES (8 * 1024)  /* from here direct reads in a node */

#endif
