/* runtime/ckpt/ckpt_async.c: the background save. loom_ckpt_save starts
 * a thread per rank that runs the blocking save on a shadow handle whose
 * blocks point into staging memory (one buffer per rank, kept for the
 * next save), over a communicator duplicated from the user's: its
 * collectives never interleave with the caller's. Then the caller copies
 * every registered block into that buffer, front to back, and returns.
 * The copy and the save overlap: the save plans, creates its files and
 * writes what is staged while the rest is copied, its reads of the
 * buffer waiting at the staging gate (ckpt_gate.c) for the copy to pass
 * them, so a save is durable about one copy sooner than a copy followed
 * by a save. The data, sums and commit are those of a blocking save of
 * the copy. The next call that waits reports how it ended.
 *
 * Fresh memory costs far more to fault in than to copy into (a kernel
 * page fault and zeroing per page, an order of magnitude slower than the
 * copy), so a first save that faulted its staging in during the copy
 * would block several times longer than the next ones. The staging is
 * mapped populated, and prepared ahead: when async is turned on, and at
 * each registration while it is on, a thread maps and populates a buffer
 * the size of this rank's state while the caller works, or of the bytes
 * the program announced (loom_ckpt_reserve: a state registered only at
 * the save, as torch's DCP does); the first save waits for that thread
 * (never longer than faulting the pages in itself) and takes the buffer.
 * The staging, the prepared buffer and the duplicated communicator live
 * as long as the handle: loom_ckpt_clear keeps them for the next state. */
#include "config.h"
#include "util/util.h"
#include "ckpt/ckpt_internal.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MAP_POPULATE
#define MAP_POPULATE 0  /* then the copy faults the pages in */
#endif

struct ck_bg {
	loom_ckpt_t h;       /* the shadow handle the thread saves with */
	ck_gate_t gate;      /* h's reads wait for the caller's copy */
	loom_comm_t *comm;   /* duplicated from the user's */
	char *stage;
	size_t stage_cap;
	pthread_t th;
	int running, rc, warned, what;
	long long step;
	/* staging prepared ahead by pre_th (pre_running until joined) */
	char *pre;
	size_t pre_cap;
	pthread_t pre_th;
	int pre_running, pre_done;      /* pre_done: set by pre_th as it ends */
};

/* N bytes of anonymous memory, faulted in by the kernel (MAP_POPULATE
 * writes every page: faster than faults taken one at a time in a copy) */
static char *stage_map(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void stage_unmap(char *p, size_t n)
{
	if (p)
		munmap(p, n);
}

static void *pre_fault(void *arg)
{
	struct ck_bg *bg = arg;
	bg->pre = stage_map(bg->pre_cap);
	__atomic_store_n(&bg->pre_done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* the prepared buffer, when the thread is done with it */
static void pre_join(struct ck_bg *bg)
{
	if (bg->pre_running)
		pthread_join(bg->pre_th, NULL);
	bg->pre_running = 0;
}

static void pre_drop(struct ck_bg *bg)
{
	pre_join(bg);
	stage_unmap(bg->pre, bg->pre_cap);
	bg->pre = NULL;
	bg->pre_cap = 0;
}

/* start a thread with every signal blocked: stop signals go to the
 * caller's threads */
static int start_quiet(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int rc;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static size_t staging_limit(void)
{
	return (size_t)loom_env_long("ckpt", "LOOM_CKPT_STAGING_MB", 4096, 1, 1L << 24) << 20;
}

static void *writer(void *arg)
{
	struct ck_bg *bg = arg;
	int shared = 0;
	bg->rc = LOOM_SUCCESS;
	if (bg->what & CK_BG_CACHE)
		bg->rc = loom_ck_save_cached(&bg->h, bg->step, &shared);
	/* with a cache, a shared save here is always the flush of a cached
	 * save (in this thread or the caller's): that one was counted */
	bg->h.flush_only = bg->h.cache != NULL;
	if (bg->rc == LOOM_SUCCESS && (bg->what & CK_BG_SHARED) && !shared)
		bg->rc = loom_ck_save_now(&bg->h, bg->step);
	bg->h.flush_only = 0;
	return NULL;
}

static size_t block_bytes(const ckpt_tensor_t *t, const ckpt_block_t *b)
{
	size_t e = t->esize;
	for (int d = 0; d < t->ndim; d++)
		e *= (size_t)b->ext[d];
	return e;
}

/* this rank's registered bytes */
static size_t local_bytes(const loom_ckpt_t *ck)
{
	size_t n = 0;
	for (int i = 0; i < ck->nt; i++)
		for (int b = 0; b < ck->t[i].nb; b++)
			n += block_bytes(&ck->t[i], &ck->t[i].b[b]);
	return n;
}

static void shadow_free(struct ck_bg *bg)
{
	for (int i = 0; i < bg->h.nt; i++)
		free(bg->h.t[i].b);
	free(bg->h.t);
	bg->h.t = NULL;
	bg->h.nt = 0;
}

/* the shadow table: ck's tensors, blocks pointing into the staging
 * buffer, one after another in table order (the copy comes later) */
static int shadow_fill(loom_ckpt_t *ck, struct ck_bg *bg)
{
	size_t at = 0;
	shadow_free(bg);
	if (!(bg->h.t = calloc((size_t)ck->nt + 1, sizeof *bg->h.t)))
		return LOOM_ERR_NOMEM;
	for (int i = 0; i < ck->nt; i++) {
		ckpt_tensor_t *s = &bg->h.t[i];
		*s = ck->t[i];
		s->b = calloc((size_t)s->nb + 1, sizeof *s->b);
		s->cap = s->nb;
		bg->h.nt = i + 1;
		if (!s->b) {
			s->nb = 0;
			return LOOM_ERR_NOMEM;
		}
		for (int b = 0; b < s->nb; b++) {
			size_t n = block_bytes(s, &ck->t[i].b[b]);
			s->b[b] = ck->t[i].b[b];
			s->b[b].data = bg->stage + at;
			at += n;
		}
	}
	return LOOM_SUCCESS;
}

/* the caller's copy into the staging buffer, in the shadow table's order,
 * opening the gate behind it a piece at a time (the writer runs).
 * LOOM_CKPT_TEST_HOLD (tests): after the first piece, the copy holds
 * until the writer waits for the next (10 s at most) */
#define COPY_PIECE ((size_t)4 << 20)
static void stage_copy(loom_ckpt_t *ck, struct ck_bg *bg)
{
	size_t at = 0;
	int hold = getenv("LOOM_CKPT_TEST_HOLD") != NULL;
	for (int i = 0; i < ck->nt; i++)
		for (int b = 0; b < ck->t[i].nb; b++) {
			const char *src = ck->t[i].b[b].data;
			size_t n = block_bytes(&ck->t[i], &ck->t[i].b[b]);
			for (size_t o = 0; o < n; o += COPY_PIECE) {
				size_t k = n - o < COPY_PIECE ? n - o : COPY_PIECE;
				memcpy(bg->stage + at, src + o, k);
				at += k;
				loom_ck_gate_open(&bg->gate, at);
				if (hold) {
					loom_ck_gate_hold(&bg->gate, 10);
					hold = 0;
				}
			}
		}
	loom_ck_gate_open(&bg->gate, SIZE_MAX);
}

/* the staging for MINE bytes: the prepared buffer when it is large
 * enough (after waiting for its thread), else a fresh populated map.
 * Only while no writer runs: the old buffer is unmapped. 0, or -1. */
static int stage_take(struct ck_bg *bg, size_t mine)
{
	pre_join(bg);
	if (bg->pre && bg->pre_cap >= mine && bg->pre_cap > bg->stage_cap) {
		stage_unmap(bg->stage, bg->stage_cap);
		bg->stage = bg->pre;
		bg->stage_cap = bg->pre_cap;
		bg->pre = NULL;
		bg->pre_cap = 0;
	}
	pre_drop(bg);
	if (mine <= bg->stage_cap)
		return 0;
	char *n = stage_map(mine);
	if (!n)
		return -1;
	stage_unmap(bg->stage, bg->stage_cap);
	bg->stage = n;
	bg->stage_cap = mine;
	return 0;
}

/* start pre_th on a buffer of MINE bytes, unless one that large is held
 * or being made, or it exceeds the staging limit */
static void prepare_bytes(loom_ckpt_t *ck, size_t mine)
{
	struct ck_bg *bg = ck->bg;
	const char *be = loom_comm_backend(ck->comm);
	if (!bg || !be || strcmp(be, "native") ||
	    (bg->pre_running && !__atomic_load_n(&bg->pre_done, __ATOMIC_ACQUIRE)))
		return;         /* one at a time: the save maps what is missing */
	if (mine <= bg->stage_cap || mine <= bg->pre_cap || mine > staging_limit())
		return;
	pre_drop(bg);   /* too small now: the state grew */
	bg->pre_cap = mine;
	bg->pre_done = 0;
	if (start_quiet(&bg->pre_th, pre_fault, bg) == 0)
		bg->pre_running = 1;
	else
		bg->pre_cap = 0;        /* the first save maps it */
}

void loom_ck_bg_prepare(loom_ckpt_t *ck)
{
	if (ck->async)
		prepare_bytes(ck, local_bytes(ck));
}

void loom_ck_bg_reserve(loom_ckpt_t *ck, size_t bytes)
{
	prepare_bytes(ck, bytes);
}

/* 1 where async cannot run at all (said once): the MPI and NCCL backends
 * are not asked to run two threads' collectives at once */
static int async_unsupported(loom_ckpt_t *ck, struct ck_bg *bg)
{
	const char *be = loom_comm_backend(ck->comm);
	if (be && !strcmp(be, "native"))
		return 0;
	if (!bg->warned && ck->rank == 0)
		LOOM_WARN("ckpt: async save needs the native backend (this communicator runs on "
			  "%s); saving blocking", be ? be : "?");
	bg->warned = 1;
	return 1;
}

/* the writer could not start everywhere: stop the ones that did */
static void start_undo(struct ck_bg *bg)
{
	loom_ck_gate_open(&bg->gate, SIZE_MAX); /* unstaged: the save fails, never commits */
	loom_comm_abort(bg->comm); /* their save fails on the duplicated comm */
	if (bg->running)
		pthread_join(bg->th, NULL);
	bg->running = 0;
	loom_comm_free(bg->comm);
	bg->comm = NULL;
}

int loom_ck_bg_start(loom_ckpt_t *ck, long long step, int what)
{
	struct ck_bg *bg = ck->bg;
	size_t mine = local_bytes(ck), limit;
	int32_t ok, all;
	int rc;
	if (!bg) /* allocated at loom_ckpt_open */
		return 1;
	if (async_unsupported(ck, bg))
		return 1;
	limit = staging_limit();
	ok = mine <= limit;
	if (ok && stage_take(bg, mine) < 0)
		ok = 0;
	if ((rc = loom_allreduce(&ok, &all, 1, LOOM_INT32, LOOM_MIN, ck->comm)))
		return rc;
	if (!all) {
		if (!bg->warned)
			LOOM_WARN("ckpt: rank %d: async save skipped: this rank's state (%zu MiB) %s "
				  "LOOM_CKPT_STAGING_MB=%zu; saving blocking (raise "
				  "LOOM_CKPT_STAGING_MB to save in the background)", ck->rank,
				  mine >> 20, ok ? "fits, another rank's does not fit" :
				  "does not fit (or cannot be allocated within)", limit >> 20);
		bg->warned = 1;
		return 1;
	}
	if (!bg->comm) {
		if ((rc = loom_comm_dup(ck->comm, &bg->comm)))
			return rc;
		loom_comm_set_name(bg->comm, "ckpt-writer");
	}
	rc = loom_ck_agree(ck, shadow_fill(ck, bg));
	if (rc)
		return rc;
	/* the shadow: ck's settings, the copy's table, the duplicated comm */
	bg->h.comm = bg->comm;
	bg->h.dir = ck->dir;
	bg->h.sweep = ck->sweep;
	bg->h.rank = ck->rank;
	bg->h.size = ck->size;
	bg->h.keep = ck->keep;
	bg->h.mode = ck->mode;
	bg->h.cache = ck->cache;
	bg->h.partner = ck->partner;
	bg->h.flush_every = ck->flush_every;
	memcpy(bg->h.job, ck->job, sizeof bg->h.job);
	memset(&bg->h.st, 0, sizeof bg->h.st);
	bg->h.stopped = 0;
	bg->h.gate = &bg->gate;
	bg->step = step;
	bg->what = what;
	bg->rc = LOOM_SUCCESS;
	loom_ck_gate_close(&bg->gate, bg->stage);
	/* stop signals go to the caller's threads, never to the writer */
	rc = start_quiet(&bg->th, writer, bg) == 0 ? LOOM_SUCCESS : LOOM_ERR_NOMEM;
	if (rc == LOOM_SUCCESS)
		bg->running = 1;
	else
		LOOM_WARN("ckpt: rank %d: cannot start the background writer; saving blocking",
			  ck->rank);
	/* a rank without a thread saves blocking; so must the others */
	if ((rc = loom_ck_agree(ck, rc)) == LOOM_SUCCESS) {
		stage_copy(ck, bg);
		return 0;
	}
	start_undo(bg);
	return 1;
}

int loom_ck_bg_settle(loom_ckpt_t *ck)
{
	struct ck_bg *bg = ck->bg;
	double blocked = ck->st.blocked_s;
	int rc;
	if (!bg || !bg->running)
		return LOOM_SUCCESS;
	pthread_join(bg->th, NULL);
	bg->running = 0;
	ck->st = bg->h.st;
	ck->st.blocked_s = blocked;
	rc = loom_ck_agree(ck, bg->rc);
	if (rc && ck->rank == 0)
		LOOM_ERR("ckpt: the background save of step %lld failed: %s (latest still names "
			 "the previous checkpoint)", bg->step, loom_strerror(rc));
	return rc;
}

int loom_ck_bg_free(loom_ckpt_t *ck)
{
	int rc = loom_ck_bg_settle(ck);
	struct ck_bg *bg = ck->bg;
	if (!bg)
		return rc;
	if (bg->comm)
		loom_comm_free(bg->comm);
	shadow_free(bg);
	pre_drop(bg);
	stage_unmap(bg->stage, bg->stage_cap);
	loom_ck_gate_destroy(&bg->gate);
	free(bg);
	ck->bg = NULL;
	return rc;
}

int loom_ck_bg_new(loom_ckpt_t *ck)
{
	ck->bg = calloc(1, sizeof *ck->bg);
	if (!ck->bg)
		return LOOM_ERR_NOMEM;
	if (loom_ck_gate_init(&ck->bg->gate) == LOOM_SUCCESS)
		return LOOM_SUCCESS;
	free(ck->bg);
	ck->bg = NULL;
	return LOOM_ERR_NOMEM;
}
