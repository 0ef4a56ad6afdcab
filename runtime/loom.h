/* loom.h: the public interface of libloom.
 *
 * Every call returns a loom status (LOOM_SUCCESS == 0, negative on error);
 * loom_strerror() turns one into text. Handles are opaque.
 */
#ifndef LOOM_H
#define LOOM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_VERSION_MAJOR 0
#define LOOM_VERSION_MINOR 1
#define LOOM_VERSION_PATCH 0

typedef enum {
	LOOM_SUCCESS = 0,
	LOOM_ERR_INVALID = -1,      /* a bad argument (null handle, bad dtype...) */
	LOOM_ERR_NOMEM = -2,
	LOOM_ERR_SYSTEM = -3,       /* a system call failed; see the log line */
	LOOM_ERR_TIMEOUT = -4,      /* the operation passed its deadline */
	LOOM_ERR_PEER_LOST = -5,    /* a peer process died or closed its link */
	LOOM_ERR_MISMATCH = -6,     /* ranks called different collectives (LOOM_CHECK=1) */
	LOOM_ERR_BOOTSTRAP = -7,    /* could not form the world (PMIx / rendezvous) */
	LOOM_ERR_UNSUPPORTED = -8,  /* not available in this build or backend */
	LOOM_ERR_ABORTED = -9,      /* the communicator was aborted */
	LOOM_ERR_IO = -10,          /* file I/O failed (checkpoint) */
	LOOM_ERR_CORRUPT = -11,     /* data failed its checksum or manifest check */
	LOOM_ERR_NOT_FOUND = -12,   /* nothing to load (no committed checkpoint) */
	LOOM_ERR_REVOKED = -13,     /* the communicator was revoked (loom_comm_revoke) */
} loom_status_t;

/* Text for a status code; never NULL. */
const char *loom_strerror(int status);

/* The library's version as "MAJOR.MINOR.PATCH". */
const char *loom_version(void);

/* ---------------------------------------------------------------------
 * Types
 * ------------------------------------------------------------------- */

typedef struct loom_comm loom_comm_t;        /* a communicator */
typedef struct loom_request loom_request_t;  /* a non-blocking operation */

typedef enum {
	LOOM_INT8 = 0,
	LOOM_INT32,
	LOOM_INT64,
	LOOM_FLOAT16,   /* IEEE half, stored as uint16_t */
	LOOM_BFLOAT16,  /* bfloat16, stored as uint16_t */
	LOOM_FLOAT32,
	LOOM_FLOAT64,
	LOOM_DTYPE_COUNT
} loom_dtype_t;

/* 16-bit floats are reduced with fp32 accumulation. LOOM_AVG is SUM
 * divided by the communicator size (integers: truncated division). */
typedef enum {
	LOOM_SUM = 0,
	LOOM_PROD,
	LOOM_MIN,
	LOOM_MAX,
	LOOM_AVG,
	LOOM_OP_COUNT
} loom_op_t;

typedef enum {
	LOOM_BACKEND_AUTO = 0,  /* LOOM_BACKEND from the environment, else native */
	LOOM_BACKEND_NATIVE,    /* shared memory inside a node, TCP between nodes */
	LOOM_BACKEND_MPI,
	LOOM_BACKEND_NCCL
} loom_backend_t;

/* color for loom_comm_split: this rank joins no new communicator */
#define LOOM_UNDEFINED (-32766)

/* Size in bytes of one element; 0 for an unknown dtype. */
size_t loom_dtype_size(loom_dtype_t dtype);
const char *loom_dtype_name(loom_dtype_t dtype);
const char *loom_op_name(loom_op_t op);

/* ---------------------------------------------------------------------
 * World and communicators
 * ------------------------------------------------------------------- */

/* Form the world communicator. Bootstrap order:
 *  1. PMIx, when the process runs under `srun --mpi=pmix` (PMIX_RANK set);
 *  2. RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (what loom.so writes, also
 *     what torchrun writes): a TCP rendezvous at MASTER_ADDR:MASTER_PORT;
 *  3. else a world of size 1.
 * The backend is chosen by LOOM_BACKEND=native|mpi|nccl|auto. */
int loom_init(loom_comm_t **world);
int loom_init_backend(loom_backend_t backend, loom_comm_t **world);
/* Free the world (and any communicator derived from it not yet freed). */
int loom_finalize(loom_comm_t *world);

/* Rank and size; -1 for a NULL communicator. */
int loom_comm_rank(const loom_comm_t *comm);
int loom_comm_size(const loom_comm_t *comm);
/* Ranks of comm on this node (same SLURMD_NODENAME, else host name). */
int loom_comm_local_rank(const loom_comm_t *comm);
int loom_comm_local_size(const loom_comm_t *comm);

/* Collective over comm. Ranks with the same color form a new
 * communicator, ordered by key then by rank in comm. color ==
 * LOOM_UNDEFINED gives *newcomm = NULL. */
int loom_comm_split(loom_comm_t *comm, int color, int key, loom_comm_t **newcomm);
int loom_comm_dup(loom_comm_t *comm, loom_comm_t **newcomm);
int loom_comm_free(loom_comm_t *comm);

/* Tear comm down from any one rank: every rank's pending and future
 * operations on it fail with LOOM_ERR_ABORTED (or LOOM_ERR_PEER_LOST). */
int loom_comm_abort(loom_comm_t *comm);

/* ---- surviving a lost rank (native backend; docs/fault-tolerance.md).
 * The MPI and NCCL backends return LOOM_ERR_UNSUPPORTED. ----
 * Revoke comm from any one member: every member's pending and later
 * operations on it fail within about a second with LOOM_ERR_REVOKED (or
 * LOOM_ERR_PEER_LOST where a peer is known gone). Unlike an abort, comm
 * stays usable for the three calls below. */
int loom_comm_revoke(loom_comm_t *comm);
/* Collective over the members still alive, also on a failed or revoked
 * comm: a fault-tolerant AND of *flag (0 or not 0). Every survivor gets
 * the same *flag and the same failed set (loom_comm_failed), also when
 * more members die during the call. LOOM_ERR_TIMEOUT when a member that
 * is alive did not answer within comm's timeout (then nothing is agreed). */
int loom_comm_agree(loom_comm_t *comm, int *flag);
/* The failed set of the last agree (or shrink) on comm, in comm's
 * numbering, ascending: at most max ranks in ranks, their count in
 * *nfailed (none before the first agree). */
int loom_comm_failed(loom_comm_t *comm, int *ranks, int max, int *nfailed);
/* Collective over the survivors: an agree, then a new communicator of
 * the members not failed, ranks renumbered in their old order, with its
 * own context, shared memory and sub-communicators. A member the agree
 * counts as failed gets *newcomm = NULL and LOOM_ERR_REVOKED. */
int loom_comm_shrink(loom_comm_t *comm, loom_comm_t **newcomm);
/* Collective over the members: wait (up to comm's timeout) for nnew
 * (1..4096) newcomers, processes of the same job started by
 *   srun --jobid=$SLURM_JOB_ID --overlap -N1 -n K -w NODE --loom-join PROG
 * and return the communicator of the members, ranks kept, followed by the
 * newcomers, with its own context, shared memory and sub-communicators.
 * A newcomer's loom_init returns the same communicator as its world. A
 * process that does not hold the job's key (another user, another job)
 * is refused and not counted. LOOM_ERR_TIMEOUT when fewer came in time;
 * MASTER_PORT must be set on comm's rank 0 (loom.so sets it). */
int loom_comm_grow(loom_comm_t *comm, int nnew, loom_comm_t **newcomm);

/* Deadline for every operation on comm, in seconds (default LOOM_TIMEOUT,
 * else 600). On expiry the call returns LOOM_ERR_TIMEOUT and logs one line
 * naming the communicator, the operation, its sequence number and the
 * ranks that never arrived. */
int loom_comm_set_timeout(loom_comm_t *comm, double seconds);
/* A name used in log lines (default "world", "split<N>"...). Copied. */
int loom_comm_set_name(loom_comm_t *comm, const char *name);
const char *loom_comm_name(const loom_comm_t *comm);

/* ---- backends (runtime/backend_*.c) ----
 * Which backend comm runs on: "native", "mpi" or "nccl". */
const char *loom_comm_backend(const loom_comm_t *comm);
/* How comm's world was formed: "pmix" (srun --mpi=pmix), "env" (the
 * RANK/WORLD_SIZE/MASTER_ADDR rendezvous), "single" (a world of one),
 * "mpi" (the MPI backend: formed by MPI). NULL for a NULL comm. */
const char *loom_comm_bootstrap(const loom_comm_t *comm);
/* What carries comm's messages to peer on the native backend: "self",
 * "shm" (shared memory, same node) or "tcp"; on the other backends their
 * name ("mpi", "nccl"). NULL for a bad comm or peer. */
const char *loom_comm_peer_transport(const loom_comm_t *comm, int peer);
/* NCCL backend: enqueue comm's device-memory operations on this CUDA
 * stream (a cudaStream_t; NULL: the library's own stream). A blocking
 * call still returns only when its work on the stream is done.
 * LOOM_ERR_UNSUPPORTED on the other backends. */
int loom_comm_set_stream(loom_comm_t *comm, void *cuda_stream);
/* The CUDA device (an index among the visible devices) of comm's
 * device-memory operations on the NCCL backend; -1 on the other
 * backends and for a NULL comm. */
int loom_comm_device(const loom_comm_t *comm);
/* 1 when this libloom was built with backend (native and auto: always),
 * else 0. What loom_init_backend needs besides (a GPU for NCCL) is not
 * checked. */
int loom_backend_built(loom_backend_t backend);
/* MPI backend: an MPI program adopts loom on one of its communicators
 * (duplicated; MPI must be initialized). The result is a world of its
 * own: free it with loom_finalize, which does not finalize MPI. Declared
 * when <mpi.h> was included before <loom.h>, or with LOOM_WANT_MPI. */
#if defined(LOOM_WANT_MPI) && !defined(MPI_VERSION)
#include <mpi.h>
#endif
#ifdef MPI_VERSION
int loom_comm_from_mpi(MPI_Comm mpi_comm, loom_comm_t **comm);
#endif

/* ---------------------------------------------------------------------
 * Parallelism mesh
 *
 * loom_mesh(world, dp, tp, pp) with dp * tp * pp == size(world) gives this
 * rank's data-, tensor- and pipeline-parallel communicators. Tensor
 * parallel ranks are contiguous (fastest-varying), then data parallel,
 * then pipeline stages:
 *
 *     rank = (pp_index * dp + dp_index) * tp + tp_index
 *
 *   dp=2 tp=2 pp=2, 8 ranks (two nodes of 4: TP groups stay in a node)
 *
 *              stage 0 (pp_index 0)       stage 1 (pp_index 1)
 *            +---------+---------+      +---------+---------+
 *   dp 0     | r0   r1 |         |      | r4   r5 |         |
 *   dp 1     |         | r2   r3 |      |         | r6   r7 |
 *            +---------+---------+      +---------+---------+
 *     tp groups: {0,1} {2,3} {4,5} {6,7}
 *     dp groups: {0,2} {1,3} {4,6} {5,7}
 *     pp groups: {0,4} {1,5} {2,6} {3,7}
 * ------------------------------------------------------------------- */
typedef struct {
	loom_comm_t *dp, *tp, *pp;          /* this rank's groups */
	int dp_index, tp_index, pp_index;   /* this rank's coordinates */
	int dp_size, tp_size, pp_size;
} loom_mesh_t;

int loom_mesh(loom_comm_t *world, int dp, int tp, int pp, loom_mesh_t *mesh);
int loom_mesh_free(loom_mesh_t *mesh);

/* ---------------------------------------------------------------------
 * Collectives. Argument order: send, recv, count, dtype, [op,] [root,]
 * comm. In place when send == recv (allgather: send == recv + rank*count;
 * reduce_scatter: send == recv is allowed, the result lands at recv).
 * count is in elements.
 * ------------------------------------------------------------------- */
int loom_allreduce(const void *send, void *recv, size_t count, loom_dtype_t dtype,
		   loom_op_t op, loom_comm_t *comm);
/* root's send is copied to every rank's recv (root: send may equal recv) */
int loom_broadcast(const void *send, void *recv, size_t count, loom_dtype_t dtype,
		   int root, loom_comm_t *comm);
/* recv significant at root only */
int loom_reduce(const void *send, void *recv, size_t count, loom_dtype_t dtype,
		loom_op_t op, int root, loom_comm_t *comm);
/* send: count elements; recv: size*count, rank i's block at i*count */
int loom_allgather(const void *send, void *recv, size_t count, loom_dtype_t dtype,
		   loom_comm_t *comm);
/* send: size*count elements; recv: count, the reduction of block rank */
int loom_reduce_scatter(const void *send, void *recv, size_t count, loom_dtype_t dtype,
			loom_op_t op, loom_comm_t *comm);
/* send and recv: size*count; block j of send goes to rank j, block i of
 * recv came from rank i */
int loom_alltoall(const void *send, void *recv, size_t count, loom_dtype_t dtype,
		  loom_comm_t *comm);
int loom_barrier(loom_comm_t *comm);

/* Point to point; messages between a pair of ranks arrive in order. */
int loom_send(const void *buf, size_t count, loom_dtype_t dtype, int peer, loom_comm_t *comm);
int loom_recv(void *buf, size_t count, loom_dtype_t dtype, int peer, loom_comm_t *comm);

/* ---------------------------------------------------------------------
 * Non-blocking forms. They progress in the background (the caller need
 * not call in) and complete in the order they were started on a
 * communicator. Buffers must stay valid until completion.
 * ------------------------------------------------------------------- */
int loom_iallreduce(const void *send, void *recv, size_t count, loom_dtype_t dtype,
		    loom_op_t op, loom_comm_t *comm, loom_request_t **req);
int loom_ibroadcast(const void *send, void *recv, size_t count, loom_dtype_t dtype,
		    int root, loom_comm_t *comm, loom_request_t **req);
int loom_ireduce(const void *send, void *recv, size_t count, loom_dtype_t dtype,
		 loom_op_t op, int root, loom_comm_t *comm, loom_request_t **req);
int loom_iallgather(const void *send, void *recv, size_t count, loom_dtype_t dtype,
		    loom_comm_t *comm, loom_request_t **req);
int loom_ireduce_scatter(const void *send, void *recv, size_t count, loom_dtype_t dtype,
			 loom_op_t op, loom_comm_t *comm, loom_request_t **req);
int loom_ialltoall(const void *send, void *recv, size_t count, loom_dtype_t dtype,
		   loom_comm_t *comm, loom_request_t **req);
int loom_ibarrier(loom_comm_t *comm, loom_request_t **req);
int loom_isend(const void *buf, size_t count, loom_dtype_t dtype, int peer,
	       loom_comm_t *comm, loom_request_t **req);
int loom_irecv(void *buf, size_t count, loom_dtype_t dtype, int peer,
	       loom_comm_t *comm, loom_request_t **req);

/* Wait for completion; returns the operation's status and frees req. */
int loom_wait(loom_request_t *req);
/* *done = 1 when complete (then returns its status and frees req),
 * else *done = 0 and returns LOOM_SUCCESS. */
int loom_test(loom_request_t *req, int *done);


/* ---- Data-parallel gradient helper (runtime/dp.c) ------------------ */
/* ---------------------------------------------------------------------
 * Data-parallel gradient helper
 *
 *   loom_dp_create(comm, 0, 0, &dp);          cap from LOOM_BUCKET_MB (25)
 *   loom_dp_add(dp, g_w1, n_w1, &i_w1); ...   every gradient, forward order
 *   loom_dp_broadcast_params(dp, w1, n_w1);   once: rank 0's parameters
 *   each step:
 *     backward: loom_dp_ready(dp, i_w3); ... loom_dp_ready(dp, i_w1);
 *     loom_dp_finish(dp);                     gradients now averaged
 *
 * Buckets are formed in backward order (the last registered tensor is in
 * bucket 0) of whole tensors up to the cap (wire bytes); a tensor bigger
 * than the cap gets a bucket of its own. A bucket's non-blocking
 * reduction starts inside the loom_dp_ready() that completes it, and
 * buckets start in bucket order on every rank. Between loom_dp_ready(i)
 * and loom_dp_finish() gradient i must not change (it has been copied).
 * loom_dp_finish() takes tensors never marked ready as ready, waits for
 * every bucket and writes grad = (sum over ranks) / size back.
 *
 * Flags:
 *   LOOM_DP_BF16_WIRE  gradients rounded to bfloat16 (nearest even) on the
 *                      wire, accumulated in fp32; the cap counts 2 bytes
 *                      per element.
 *   LOOM_DP_ORDERED    fixed reduction order: each bucket is allgathered
 *                      and summed locally in rank order in fp32,
 *                      ((g_0 + g_1) + g_2) + ... then divided by size, so
 *                      the result is bit-identical on every rank and to a
 *                      serial emulation doing the same; costs size times
 *                      the bucket memory and wire volume of an allgather.
 * Without LOOM_DP_ORDERED the sum is loom_iallreduce(LOOM_SUM), whose
 * order is the algorithm's.
 * ------------------------------------------------------------------- */
typedef struct loom_dp loom_dp_t;

#define LOOM_DP_BF16_WIRE 0x1u
#define LOOM_DP_ORDERED   0x2u

/* Cumulative since create (or loom_dp_stats_reset). A bucket's completion
 * is observed at the next loom_dp_ready/loom_dp_poll/loom_dp_finish call,
 * so comm_s is measured at the granularity of those calls. */
typedef struct {
	double comm_s;      /* wall time with at least one bucket in flight */
	double wait_s;      /* of that, time blocked in loom_dp_finish (exposed) */
	double overlap;     /* 1 - wait_s / comm_s: share hidden behind compute */
	long steps;         /* loom_dp_finish calls */
	int buckets;        /* buckets per step (0 before the plan is made) */
	size_t wire_bytes;  /* bytes this rank contributes per step */
} loom_dp_stats_t;

/* bucket_bytes 0: LOOM_BUCKET_MB MiB from the environment (a positive
 * number, may be fractional), default 25. comm must outlive dp. */
int loom_dp_create(loom_comm_t *comm, size_t bucket_bytes, unsigned flags, loom_dp_t **dp);
/* Register count floats at grad; *index (may be NULL) gets 0, 1, ...
 * Only before the first ready/finish/bucket call (the plan is then fixed). */
int loom_dp_add(loom_dp_t *dp, float *grad, size_t count, int *index);
/* Gradient index is complete for this step (call in backward order). */
int loom_dp_ready(loom_dp_t *dp, int index);
/* Note completed buckets (optional, e.g. between layers of backward). */
int loom_dp_poll(loom_dp_t *dp);
/* Wait for all buckets, write the averaged gradients back; next step. */
int loom_dp_finish(loom_dp_t *dp);
int loom_dp_stats(loom_dp_t *dp, loom_dp_stats_t *stats);
int loom_dp_stats_reset(loom_dp_t *dp);
/* In place: rank 0's count floats at params to every rank of dp's comm. */
int loom_dp_broadcast_params(loom_dp_t *dp, float *params, size_t count);
/* The bucket plan: number of buckets, tensor index -> bucket, bytes on the
 * wire of a bucket (0 for a bad one). Negative status on error. */
int loom_dp_bucket_count(loom_dp_t *dp);
int loom_dp_bucket_of(loom_dp_t *dp, int index);
size_t loom_dp_bucket_bytes(loom_dp_t *dp, int bucket);
/* x rounded to bfloat16 and back, as LOOM_DP_BF16_WIRE does. */
float loom_dp_bf16_round(float x);
/* Waits for buckets in flight, frees everything. */
int loom_dp_free(loom_dp_t *dp);
/* ---- end Data-parallel gradient helper ------------------------------ */

/* ---- Checkpoint/restart (runtime/ckpt.c) --------------------------- */
/* ---------------------------------------------------------------------
 * Coordinated checkpoint/restart (format: docs/checkpoint-format.md)
 *
 *   loom_ckpt_open(world, NULL, &ck);          dir from LOOM_CKPT_DIR
 *   loom_ckpt_tensor(ck, "w", LOOM_FLOAT32, 2, shape, off, ext, w_local);
 *   if (loom_ckpt_restore(ck, &s) == LOOM_SUCCESS) first = s + 1;
 *   for (step = first; ...; step++) {
 *     train...;
 *     loom_ckpt_should_stop(ck, step, &stop);   same answer on every rank
 *     if (stop || step % 100 == 0) loom_ckpt_save(ck, step);
 *     if (stop) break;                           exit, get requeued
 *   }
 *   loom_ckpt_close(ck);
 *
 * Calls taking ck are collective over its communicator (all ranks, same
 * order) except loom_ckpt_tensor, loom_ckpt_clear, loom_ckpt_set_keep,
 * loom_ckpt_set_mode, loom_ckpt_set_async, loom_ckpt_reserve,
 * loom_ckpt_stats and loom_ckpt_dir. Every rank gets the same status.
 *
 * Tensors are row-major; a rank registers its shard(s) of a tensor as
 * hyper-rectangles (offset and extent per dimension within global_shape)
 * stored densely row-major at data. Several calls with one name add
 * blocks (block-cyclic layouts); offset/extent/data NULL declares the
 * tensor with no block on this rank. Every rank must declare the same
 * tensors (name, dtype, shape) in the same order; blocks of different
 * ranks should not overlap (bytes no rank holds are saved as zeros).
 * Names: 1..200 printable ASCII characters, no spaces. At most 8 dims.
 *
 * Saving: two-phase I/O (LOOM_CKPT_MODE=two-phase): the byte range of
 * the tensor files is cut into one contiguous domain per aggregator (one
 * rank per node, or LOOM_CKPT_AGGREGATORS=N); ranks send their pieces to
 * the owning aggregator, which issues large sequential writes.
 * LOOM_CKPT_MODE=independent: each rank writes its own pieces.
 * LOOM_CKPT_MODE=auto (the default): per save, independent when the
 * pieces average at least LOOM_CKPT_AUTO_BYTES (default 1 MiB), else
 * two-phase (docs/checkpoint-format.md has the measurements).
 * A checkpoint becomes visible only when complete (atomic rename), the
 * last K are kept (LOOM_CKPT_KEEP, default 2).
 *
 * Loading works for any rank count and shard layout (resharding);
 * buffers are filled through the same aggregators, and the data is
 * checked against the manifest's checksums.
 *
 * Stop signal: while a checkpoint handle is open, SIGTERM and the signal
 * named by LOOM_CKPT_SIGNAL ("USR1", "SIGUSR1", "10"; a "@seconds" suffix
 * is ignored) only set a flag, and a handler the program installed
 * itself still runs (it is chained); a signal the program ignores stays
 * ignored. The old dispositions come back at the last loom_ckpt_close.
 * ------------------------------------------------------------------- */
typedef struct loom_ckpt loom_ckpt_t;

typedef enum {
	LOOM_CKPT_TWO_PHASE = 0,
	LOOM_CKPT_INDEPENDENT = 1,
	LOOM_CKPT_AUTO = 2      /* per save: independent for large pieces */
} loom_ckpt_mode_t;

/* Collective. dir NULL: $LOOM_CKPT_DIR. The directory must exist and be
 * writable (else LOOM_ERR_IO, or LOOM_ERR_INVALID when no directory is
 * given at all, with a log line naming it). */
int loom_ckpt_open(loom_comm_t *comm, const char *dir, loom_ckpt_t **ck);
/* Keep the newest keep >= 1 committed checkpoints. */
int loom_ckpt_set_keep(loom_ckpt_t *ck, int keep);
int loom_ckpt_set_mode(loom_ckpt_t *ck, loom_ckpt_mode_t mode);
/* Register a block of a tensor (see above); data must stay valid while
 * ck is open. Sizes are in elements. */
int loom_ckpt_tensor(loom_ckpt_t *ck, const char *name, loom_dtype_t dtype, int ndim,
		     const size_t *global_shape, const size_t *offset, const size_t *extent,
		     void *data);
/* Forget every registered tensor, keeping the handle's settings, its
 * async staging memory and background writer: the next registrations
 * make a new table (other buffers, shapes or tensors), saved or loaded
 * without reopening, so the staging is not faulted in again. Not
 * collective (every rank clears before registering again). A save in
 * flight is unaffected: it saves its staging copy. */
int loom_ckpt_clear(loom_ckpt_t *ck);
/* *stop = 1 on every rank when any rank has received a stop signal by
 * the time it called this for step; 0 on every rank otherwise. All ranks
 * must pass the same step (else LOOM_ERR_MISMATCH). One 24-byte
 * allreduce. Once 1, it stays 1. */
int loom_ckpt_should_stop(loom_ckpt_t *ck, long long step, int *stop);
/* Write and commit checkpoint `step` (>= 0) of every registered tensor.
 * Async (below): returns once the blocks are copied; a save still in
 * flight is waited for first, and its failure is returned (this save is
 * then not started). */
int loom_ckpt_save(loom_ckpt_t *ck, long long step);
/* Not collective (set the same on every rank). on = 1: loom_ckpt_save
 * copies the registered blocks into staging memory loom owns (reused,
 * at most LOOM_CKPT_STAGING_MB per rank, default 4096; a state that does
 * not fit is saved blocking, said once) and returns: the buffers may be
 * changed at once, the checkpoint holds their values at the call. A
 * thread per rank writes and commits it on a communicator duplicated
 * from ck's. `latest` moves only once data and manifest are fsynced and
 * renamed. Default: LOOM_CKPT_ASYNC=1 turns it on. A save after a stop
 * signal is always blocking. */
int loom_ckpt_set_async(loom_ckpt_t *ck, int on);
/* Not collective. Prepare staging memory for async saves of a state of
 * `bytes` bytes on this rank: a thread maps and faults it in now, while
 * the caller works, for a program that registers its state only at the
 * save (torch's DCP writer; loom_ckpt_set_async and loom_ckpt_tensor
 * prepare for what is registered already). The first async save waits
 * for that thread (never longer than faulting the pages in during its
 * copy) and takes the buffer when it is large enough. Nothing when the
 * handle holds as much already, bytes exceed LOOM_CKPT_STAGING_MB or the
 * communicator is not on the native backend. The memory stays with the
 * handle until loom_ckpt_close. */
int loom_ckpt_reserve(loom_ckpt_t *ck, size_t bytes);
/* Wait until the save in flight is committed (or failed); its status on
 * every rank (LOOM_SUCCESS when none is in flight). load, latest,
 * restore, resume_step, close, and should_stop when *stop becomes 1,
 * wait the same way and return that failure first. */
int loom_ckpt_wait(loom_ckpt_t *ck);
/* Newest committed checkpoint (its manifest present and sound); its data
 * is checked only by a load. LOOM_ERR_NOT_FOUND when there is none. */
int loom_ckpt_latest(loom_ckpt_t *ck, long long *step);
/* Fill the registered blocks from checkpoint `step`. LOOM_ERR_CORRUPT
 * (with a log line naming the file, expected and found) when its data or
 * manifest is damaged; the buffers are then undefined. Tensors of the
 * checkpoint that are not registered are skipped; a registered one it
 * lacks is LOOM_ERR_NOT_FOUND, a different dtype/shape LOOM_ERR_MISMATCH. */
int loom_ckpt_load(loom_ckpt_t *ck, long long step);
/* Load the newest checkpoint that verifies, falling back to older ones
 * with a warning for each damaged one; *step gets its step.
 * LOOM_ERR_NOT_FOUND (and *step = -1) when none is usable. */
int loom_ckpt_restore(loom_ckpt_t *ck, long long *step);
/* The step a (re)started job resumes after: the newest committed
 * checkpoint, -1 when there is none (fresh start). When SLURM_RESTART_COUNT
 * is > 0 (a requeued job) a line says so and what was found. */
int loom_ckpt_resume_step(loom_ckpt_t *ck, long long *step);
/* Timing of the last save or load on this rank (seconds). */
typedef struct {
	double total_s;      /* the whole call */
	double data_s;       /* moving and writing/reading the data (incl. fsync) */
	double commit_s;     /* save: manifest, renames, latest, prune */
	size_t bytes;        /* bytes of the checkpoint's tensor files */
	int aggregators;
	int rounds;          /* exchange rounds (LOOM_CKPT_BUFFER_MB per aggregator) */
	loom_ckpt_mode_t mode;
	double blocked_s;    /* save: how long the caller was blocked in the call
			      * (async: the staging copy; else total_s) */
} loom_ckpt_stats_t;
int loom_ckpt_stats(const loom_ckpt_t *ck, loom_ckpt_stats_t *stats);
const char *loom_ckpt_dir(const loom_ckpt_t *ck);
/* Not collective, no handle: for programs that write checkpoints with
 * their own code. Call on one rank once that checkpoint of `step` is
 * durable: writes dir/.loom-requeue (dir NULL: $LOOM_CKPT_DIR) naming this
 * job, its restart count and Slurm step, step and signal (the stop
 * signal's number): the request loom.so acts on (docs/environment.md,
 * "Requeue after a checkpoint"), as loom_ckpt_save does after a stop signal.
 * LOOM_ERR_INVALID (with a log line) when no directory is given or
 * SLURM_JOB_ID is unset, LOOM_ERR_IO when the file cannot be written;
 * LOOM_CKPT_REQUEUE=0 writes nothing and returns LOOM_SUCCESS. */
int loom_ckpt_request_requeue(const char *dir, long long step, int signal);
int loom_ckpt_close(loom_ckpt_t *ck);
/* ---- end Checkpoint/restart ----------------------------------------- */

#ifdef __cplusplus
}
#endif
#endif
