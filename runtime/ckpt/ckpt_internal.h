/* runtime/ckpt/ckpt_internal.h: what the files of checkpoint/restart share
 * beyond what ckpt_nocomm.h declares: the handle, the state of one save
 * or load, and the collective steps. The files bottom-up: each calls
 * only those above it in this list (and ckpt_nocomm.h's: format, layout,
 * plan, dir, times).
 *   ckpt_gate.c      the staging gate: an async save's reads wait for its copy
 *   ckpt_signal.c    stop signals: handler, install/remove, names
 *   ckpt_agree.c     agreement: worst status, same tensor table, comm failures
 *   ckpt_window.c    an aggregator's window: file I/O, chunk sums, writer
 *   ckpt_exchange.c  gathering the plan, pieces to/from aggregators
 *   ckpt_save.c      the blocking save to the shared directory, and commit
 *   ckpt_load.c      the load of one step from one source
 *   ckpt_cache.c     the node-local tier: its path and checks, save with
 *                    partner copies (the shared directory when it cannot)
 *   ckpt_cache_restore.c  census of the caches, choice of copies, restore
 *   ckpt_async.c     the background save: staging copy, writer thread
 *   ckpt_handle.c    open/close/settings/tensor/should_stop
 *   ckpt_api.c       save/load/latest/restore/resume_step, async, wait:
 *                    which tier, blocking or in the background */
#ifndef LOOM_CKPT_INTERNAL_H
#define LOOM_CKPT_INTERNAL_H

#include "loom.h"
#include "ckpt/ckpt_nocomm.h"

#include <pthread.h>
#include <stdint.h>

/* ---- ckpt_gate.c ---- */
/* How far the caller's copy into an async save's staging buffer has got:
 * the background writer reads [p, p + len) of the buffer only once
 * done >= p + len - base. Open (done = SIZE_MAX) when no copy runs. */
typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	const char *base;
	size_t done;       /* atomic: bytes copied from base */
	int waited;        /* the writer has waited since the gate closed */
} ck_gate_t;
int loom_ck_gate_init(ck_gate_t *g);     /* open; a loom status */
void loom_ck_gate_destroy(ck_gate_t *g);
void loom_ck_gate_close(ck_gate_t *g, const char *base);   /* a copy into base starts */
void loom_ck_gate_open(ck_gate_t *g, size_t done);         /* SIZE_MAX: all the way */
void loom_ck_gate_wait(ck_gate_t *g, const char *p, uint64_t len);
/* for tests: until the writer has waited at the gate (S seconds at most) */
void loom_ck_gate_hold(ck_gate_t *g, int s);

struct loom_ckpt {
	loom_comm_t *comm;
	char *dir;
	int rank, size, keep;
	loom_ckpt_mode_t mode;
	ckpt_tensor_t *t;
	int nt, cap;
	char job[64];
	loom_ckpt_stats_t st;
	int stopped;       /* the signal number agreed on by should_stop */
	int async;         /* loom_ckpt_set_async, LOOM_CKPT_ASYNC */
	struct ck_bg *bg;  /* the background save (ckpt_async.c); NULL before the first */
	struct ck_sweep *sweep; /* rank 0: removing pruned steps (ckpt_save.c) */
	char *cache;       /* LOOM_CKPT_CACHE expanded: this node's cache; NULL: none */
	int partner;       /* LOOM_CKPT_REDUNDANCY: a copy of each node's pieces next door */
	int flush_every;   /* LOOM_CKPT_FLUSH: every Nth cached save goes to dir too */
	long cached;       /* saves into the cache since open */
	int flush_only;    /* the writer's handle flushes a cached save: counted there */
	ck_gate_t *gate;   /* the writer's shadow handle: its blocks are being staged */
};

/* ---- ckpt_signal.c ---- */
void loom_ck_signals_install(void);
void loom_ck_signals_remove(void);
int loom_ck_signal_seen(void);        /* the stop signal caught, 0: none */
const char *loom_ck_sig_name(int sig); /* "TERM", or the number */

/* ---- ckpt_agree.c ---- */
/* every rank gets the worst (most negative) status */
int loom_ck_agree(loom_ckpt_t *ck, int rc);
/* all ranks registered the same tensors (names, dtypes, shapes, order) */
int loom_ck_table_check(loom_ckpt_t *ck);
/* a failure of the communicator (stop trying older steps), not of a step */
int loom_ck_comm_error(int rc);

/* streaming chunk sums over an aggregator's domain, fed in order */
typedef struct {
	int algo;
	ckpt_hash_t h;
	int open;
	uint64_t *sums; /* all chunks of the plan (zero where not ours) */
} ck_sums_t;

/* one save or load: its plan, files and first local I/O failure */
typedef struct {
	ckpt_plan_t p;
	ck_sums_t sums;
	uint64_t *bytes;  /* file sizes */
	char **fnames;    /* file names in the step directory */
	int *fds;         /* -1 where this rank does not touch the file */
	int io_rc;
	char why[600];    /* what io_rc is about */
	int independent;  /* save: how it writes (LOOM_CKPT_MODE=auto decides per save) */
	int32_t *owner;   /* independent save: loom_ck_plan_chunk_owners */
} ck_op_t;

/* aggregators and domains given to the plan (ckpt_plan_in_t) */
typedef struct {
	int naggr;
	int32_t *aggr;
	uint64_t *dom;
} ck_domains_t;

/* ---- ckpt_save.c ---- */
/* rank 0 removes what a commit pruned (.prune-step-N) in a thread of its
 * own, so that no rank waits for the deletion of an old checkpoint (it
 * may overlap the next save: nothing else has such a name); one at a
 * time, joined at close */
struct ck_sweep {
	pthread_t th;
	int active;
	char *dir;
};
void loom_ck_sweep_join(loom_ckpt_t *ck);
/* the whole save on ck's communicator, blocking (also the writer thread's) */
int loom_ck_save_now(loom_ckpt_t *ck, long long step);
/* the steps of a save other tiers share: names, sizes and plan of the
 * files; the data on disk (fsynced) with every chunk's sum on every rank;
 * op's MANIFEST in dir (fsynced). All agreed but the last (rank 0's, or
 * each node leader's, own status). */
int loom_ck_save_plan(loom_ckpt_t *ck, ck_op_t *op);
/* the temporary directory of step's save, in any tier (a crashed one's
 * is pruned as .tmp-*) */
void loom_ck_tmp_name(const loom_ckpt_t *ck, long long step, char *out, size_t len);
/* DIR/TMPNAME and its full-size files, made by the creator; each rank
 * opens those it writes, open_all ranks every one */
int loom_ck_save_files(loom_ckpt_t *ck, ck_op_t *op, const char *dir, const char *tmpname,
		  int creator, int open_all);
int loom_ck_save_data(loom_ckpt_t *ck, ck_op_t *op, long long step);
int loom_ck_write_manifest(loom_ckpt_t *ck, const ck_op_t *op, long long step, const char *dir);

/* ---- ckpt_cache.c ---- */
/* LOOM_CKPT_CACHE and its settings into ck (at open; a local status, the
 * caller agrees) */
int loom_ck_cache_open(loom_ckpt_t *ck);
/* Collective, after open: LOOM_ERR_INVALID (said) when two nodes of the
 * communicator see the same cache directory */
int loom_ck_cache_check(loom_ckpt_t *ck);
/* Collective: step into every node's cache, each node's pieces copied to
 * the next node's cache when ck->partner, each node's copy committed on
 * its own (MANIFEST, PIECES, rename). */
int loom_ck_cache_save(loom_ckpt_t *ck, long long step);
/* the save into the node caches; when they cannot take it (an I/O
 * failure on a node: full, removed), the step goes to the shared
 * directory instead, said so, and *shared is set */
int loom_ck_save_cached(loom_ckpt_t *ck, long long step, int *shared);
/* Collective: the newest step restorable from the caches of this job's
 * nodes that is newer than or as new as `newer_than` (-1: any): loaded
 * (0, *step set, said which copies), or LOOM_ERR_NOT_FOUND (said why when
 * a newer step could not be used), or a communication failure.
 * want >= 0: only that step. */
int loom_ck_cache_restore(loom_ckpt_t *ck, long long newer_than, long long want, long long *step);
/* Collective: the newest step the caches can restore, -1 when none */
int loom_ck_cache_latest(loom_ckpt_t *ck, long long *step);
/* the cache's shared pieces: is this rank its node's first, a rank's node
 * name, a name made safe for a path (anything but [A-Za-z0-9._-] -> _) */
int loom_ck_is_leader(const loom_ckpt_t *ck);
const char *loom_ck_node_name(const loom_ckpt_t *ck, int rank);
void loom_ck_path_safe(char *s);

/* ---- ckpt_load.c ---- */
/* where a load reads from: the step directory this rank's files are in;
 * mroot >= 0: that rank reads MANIFEST and sends it to the others (the
 * node caches: not every node holds one); given: the plan's aggregators */
typedef struct {
	const char *sdir;
	int mroot;
	const ck_domains_t *given;
} ck_src_t;
int loom_ck_load_from(loom_ckpt_t *ck, long long step, const ck_src_t *src);

/* ---- ckpt_async.c ---- */
/* Collective. Copies the registered blocks into staging memory and starts
 * the background save of step (to the node cache, the shared directory
 * or both, in that order: what): 0. 1 when the state does not fit
 * LOOM_CKPT_STAGING_MB (said once; the caller saves blocking), < 0 a
 * failure. Every rank gets the same answer. */
enum { CK_BG_CACHE = 1, CK_BG_SHARED = 2 }; /* what the writer saves to */
int loom_ck_bg_start(loom_ckpt_t *ck, long long step, int what);
/* Collective when a save is in flight (the same on every rank): waits
 * for it, copies its timings into ck->st and returns its agreed status
 * (a failure logged). 0 at once when none is in flight. */
int loom_ck_bg_settle(loom_ckpt_t *ck);
/* ck->bg for loom_ck_bg_start (at open; a loom status, not agreed) */
int loom_ck_bg_new(loom_ckpt_t *ck);
/* Not collective. While async is on: map and fault in this rank's
 * staging memory in a thread of its own, for the next save to take
 * (nothing when it has enough, or the state exceeds LOOM_CKPT_STAGING_MB) */
void loom_ck_bg_prepare(loom_ckpt_t *ck);
/* Not collective. The same for a state of BYTES (async on or not) */
void loom_ck_bg_reserve(loom_ckpt_t *ck, size_t bytes);
/* settle, then free the staging memory and the duplicated communicator */
int loom_ck_bg_free(loom_ckpt_t *ck);

/* ---- ckpt_exchange.c ---- */
/* op's arrays for ck->nt files (fds all -1); a loom status, not agreed */
int loom_ck_op_alloc(loom_ckpt_t *ck, ck_op_t *op, int algo);
void loom_ck_op_free(loom_ckpt_t *ck, ck_op_t *op);
/* the chunk sums of all aggregators, on every rank */
int loom_ck_op_sum_chunks(loom_ckpt_t *ck, ck_op_t *op);
/* bytes, aggregators and rounds of op into ck->st */
void loom_ck_op_stats(loom_ckpt_t *ck, const ck_op_t *op);
/* Gathers every rank's blocks and settings and builds the plan; given
 * NULL: the aggregators and domains are picked as usual. */
int loom_ck_plan_make(loom_ckpt_t *ck, ckpt_plan_t *p, const uint64_t *bytes, uint64_t chunk,
		 const ck_domains_t *given);
/* save (writing = 1): ranks -> aggregators -> files; load: the reverse.
 * Aggregators keep chunk sums of what they write or read. op->io_rc
 * gets the first local I/O failure (the exchange goes on so that no rank
 * hangs); the return value is a communication failure. */
int loom_ck_exchange(loom_ckpt_t *ck, ck_op_t *op, int writing);

/* ---- ckpt_window.c ---- */
int loom_ck_pwrite_all(int fd, const char *buf, uint64_t len, uint64_t off);
void loom_ck_sums_feed(const ckpt_plan_t *p, ck_sums_t *s, const char *buf, uint64_t lo,
		  uint64_t len);
/* write (or read) the window [lo, hi) of the virtual space to op's files */
int loom_ck_window_io(const ck_op_t *op, char *buf, uint64_t lo, uint64_t hi, int writing,
		 char *why, size_t whylen);
/* independent mode: every rank writes its own runs and sums the chunks it
 * owns (op->owner) from memory as it writes them (the first local
 * failure into op->io_rc); aggregators read back the rest of their
 * domains */
void loom_ck_write_own(loom_ckpt_t *ck, ck_op_t *op);
int loom_ck_readback_sums(ck_op_t *op);

/* A window hashed and written by a thread while the next one is
 * exchanged; one job at a time. */
typedef struct {
	const ck_op_t *op;
	ck_sums_t *sums;
	char *buf;
	uint64_t lo, hi;
	int skip_io, rc, active;
	pthread_t th;
	char why[512];
} ck_writer_t;
/* starts w on buf (runs it inline when no thread can be made); returns 1
 * when a thread now owns buf */
int loom_ck_writer_start(ck_writer_t *w, ck_op_t *op, char *buf, uint64_t lo, uint64_t hi);
/* waits for the running job; its failure becomes op->io_rc if the first */
void loom_ck_writer_join(ck_writer_t *w, ck_op_t *op);

/* where run r's byte at virtual offset v lives in this rank's buffer */
static inline char *loom_ck_run_ptr(loom_ckpt_t *ck, const ckpt_vrun_t *r, uint64_t v)
{
	return (char *)ck->t[r->tensor].b[r->block].data + r->loff + (v - r->v);
}

/* the same, to read LEN bytes from in a save: on the background writer's
 * handle, once the caller's staging copy has passed them */
static inline const char *loom_ck_run_src(loom_ckpt_t *ck, const ckpt_vrun_t *r, uint64_t v,
					  uint64_t len)
{
	const char *p = loom_ck_run_ptr(ck, r, v);
	if (ck->gate)
		loom_ck_gate_wait(ck->gate, p, len);
	return p;
}

#endif
