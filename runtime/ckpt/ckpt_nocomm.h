/* runtime/ckpt/ckpt_nocomm.h: the parts of checkpoint/restart that need
 * no communicator: pure functions (layouts, domains, checksums, manifest,
 * the plan) and the files of one rank (directory, save times), unit
 * tested on their own; the collective parts and the handle are declared
 * in ckpt_internal.h. */
#ifndef LOOM_CKPT_NOCOMM_H
#define LOOM_CKPT_NOCOMM_H

#include "../../common/loom_files.h" /* LOOM_REQUEUE_FILE, LOOM_SAVE_TIMES_* */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CKPT_MAX_NDIM 8
#define CKPT_NAME_MAX 200
#define CKPT_DEFAULT_CHUNK ((uint64_t)4 << 20)
/* the chunk sizes a manifest (and LOOM_CKPT_CHUNK) may have: a chunk of a
 * few bytes would make the table of chunk sums larger than the data */
#define CKPT_CHUNK_MIN ((uint64_t)4 << 10)
#define CKPT_CHUNK_MAX ((uint64_t)1 << 30)
/* a tensor's bytes (and any product of its shape) stay below this, so
 * that offsets in the virtual byte space and on the wire (int64) hold */
#define CKPT_BYTES_MAX ((uint64_t)1 << 60)
#define CKPT_MANIFEST_MAX (64u << 20)
/* LOOM_CKPT_MODE=auto: independent writes from this mean piece size on
 * (LOOM_CKPT_AUTO_BYTES; the measurements: docs/checkpoint-format.md) */
#define CKPT_AUTO_BYTES (1L << 20)

/* ---- checksums (ckpt_format.c) ---- */
enum { CKPT_SUM_CRC32C = 1, CKPT_SUM_XXH3 = 2 };

typedef struct {
	int algo;
	uint32_t crc;
	void *xx; /* XXH3_state_t * when algo == CKPT_SUM_XXH3 */
} ckpt_hash_t;

/* The algorithm new checkpoints use: xxh3-64 when built with xxHash. */
int loom_ck_sum_default(void);
const char *loom_ck_sum_name(int algo);
int loom_ck_sum_parse(const char *name); /* 0 when unknown */
int loom_ck_sum_supported(int algo);
int loom_ck_hash_init(ckpt_hash_t *h, int algo);
void loom_ck_hash_update(ckpt_hash_t *h, const void *p, size_t n);
uint64_t loom_ck_hash_final(ckpt_hash_t *h); /* also frees */
uint64_t loom_ck_hash_buf(int algo, const void *p, size_t n);
uint32_t loom_ck_crc32c(uint32_t crc, const void *p, size_t n); /* crc = 0 to start */
/* sum of a file: the hash of its chunk sums, each as 8 little-endian bytes */
uint64_t loom_ck_file_sum(int algo, const uint64_t *chunk_sums, size_t n);

/* ---- layouts (ckpt_layout.c) ----
 * A block of a row-major tensor of shape[ndim]: offset[] and extent[]
 * per dimension, stored densely row-major in the rank's buffer. Its bytes
 * form runs: (file offset, length, offset in the local buffer), in file
 * order; contiguous trailing dimensions are merged into one run. */
typedef struct {
	uint64_t foff, len, loff;
} ckpt_run_t;

/* Validates the block (offset + extent <= shape, ndim 1..8); esize is
 * the element size. Calls cb for each run in increasing file offset;
 * returns the number of runs, or -1 for a bad block. cb may be NULL. */
long loom_ck_block_runs(int ndim, const uint64_t *shape, const uint64_t *offset,
		     const uint64_t *extent, size_t esize,
		     void (*cb)(void *arg, const ckpt_run_t *run), void *arg);

/* Split a byte space of `total` bytes, made of files of bytes[i] (in
 * order) cut into chunks of `chunk` bytes from each file's start, among
 * naggr aggregators: start[j] .. start[j+1] is aggregator j's domain
 * (start has naggr + 1 entries; start[0] = 0, start[naggr] = total).
 * Every boundary is a chunk start; domains are contiguous and balanced to
 * within one chunk. */
void loom_ck_domains(size_t nfiles, const uint64_t *bytes, uint64_t chunk, int naggr,
		  uint64_t *start);

/* Number of chunks of a file of n bytes (0 for an empty file). */
static inline uint64_t loom_ck_nchunks(uint64_t n, uint64_t chunk)
{
	return (n + chunk - 1) / chunk;
}

/* ---- registered tensors (the handle's table; the plan reads it) ----
 * A rank registers blocks of a tensor: offset/extent per dimension, data
 * dense row-major in its buffer. */
typedef struct {
	uint64_t off[CKPT_MAX_NDIM], ext[CKPT_MAX_NDIM];
	void *data;
} ckpt_block_t;

typedef struct {
	char name[CKPT_NAME_MAX + 1];
	int dtype, ndim;
	uint64_t shape[CKPT_MAX_NDIM];
	uint64_t bytes;
	size_t esize;
	ckpt_block_t *b;
	int nb, cap;
} ckpt_tensor_t;

/* ---- the plan (ckpt_plan.c) ----
 * The tensor files one after another form a virtual byte space (tensor
 * i's file at base[i]). Every rank's blocks become runs in it; aggregator
 * j owns the domain dom[j] .. dom[j+1] and moves it one window of
 * `window` bytes per round. A function of its inputs only: the collective
 * gathering of them is loom_ck_plan_make (ckpt_exchange.c). */
typedef struct {
	uint64_t v, len;  /* virtual offset, length */
	uint64_t loff;    /* offset in the block's buffer */
	int tensor, block;
} ckpt_vrun_t;

typedef struct {
	int nranks, nt;
	uint64_t *base;       /* virtual offset of tensor i's file; [nt] = total */
	uint64_t *cbase;      /* index of tensor i's first chunk; [nt] = chunk count */
	uint64_t chunk;
	int naggr, *aggr;     /* aggregator ranks, ascending */
	int my_aggr;          /* index of this rank in aggr, -1 if none */
	uint64_t *dom;        /* naggr + 1 domain starts */
	ckpt_vrun_t **runs;   /* per rank, sorted by v */
	long *nruns;
	uint64_t *maxlen;     /* per rank: longest run */
	uint64_t window;
	uint64_t direct_min;  /* see loom_ck_plan_direct */
	int rounds;
} ckpt_plan_t;

/* A block on the wire: tensor, block, off[8], ext[8]; tensor -1 pads. */
#define CKPT_DESC_W (2 + 2 * CKPT_MAX_NDIM)

typedef struct {
	int nranks, rank;          /* rank: the one whose my_aggr is set */
	int nt;
	const ckpt_tensor_t *t;    /* geometry (ndim, shape, esize) of nt tensors */
	const uint64_t *bytes;     /* file sizes (the manifest's on load) */
	uint64_t chunk;
	const int32_t *local_rank; /* per rank: its rank on its node */
	long want_aggr;            /* aggregator count; 0: local rank 0 of each node */
	uint64_t window, direct_min;
	const int64_t *desc;       /* per rank, ndesc descriptors of CKPT_DESC_W */
	int64_t ndesc;
	/* given aggregators (distinct ranks) and their domains (naggr_given +
	 * 1 starts, chunk starts from 0 to the total): a load from the node
	 * caches reads each domain where it is cached. 0: picked here */
	int naggr_given;
	const int32_t *aggr_given;
	const uint64_t *dom_given;
} ckpt_plan_in_t;

/* the blocks of a rank's table, and their descriptors padded to ndesc */
int64_t loom_ck_plan_nblocks(const ckpt_tensor_t *t, int nt);
void loom_ck_plan_pack(const ckpt_tensor_t *t, int nt, int64_t *desc, int64_t ndesc);
/* Fills p (zeroed first); returns a loom status: LOOM_ERR_MISMATCH for a
 * descriptor outside the table. loom_ck_plan_free(p) in every case. */
int loom_ck_plan_build(ckpt_plan_t *p, const ckpt_plan_in_t *in);
void loom_ck_plan_free(ckpt_plan_t *p);
/* aggregator j's window of round k: [*lo, *hi), empty past its domain */
void loom_ck_plan_window(const ckpt_plan_t *p, int j, int k, uint64_t *lo, uint64_t *hi);
/* the tensor whose file holds virtual offset v (files may be empty) */
int loom_ck_plan_tensor_of(const ckpt_plan_t *p, uint64_t v);

/* The pieces of rank r's runs inside [lo, hi), in order: calls fn (if
 * not NULL) for each (virtual offset, length, run). Returns the byte total. */
typedef void (*ckpt_piece_fn)(void *arg, uint64_t v, uint64_t len, const ckpt_vrun_t *run);
uint64_t loom_ck_plan_pieces(const ckpt_plan_t *p, int r, uint64_t lo, uint64_t hi,
			  ckpt_piece_fn fn, void *arg);
/* rank r's pieces in [lo, hi): their bytes (*bytes), and whether they go
 * one message each (1) or packed into one (0). Both ends get the same
 * answer: it depends on the plan only. */
int loom_ck_plan_direct(const ckpt_plan_t *p, int r, uint64_t lo, uint64_t hi, uint64_t *bytes);
/* does `rank` touch tensor t's file (independent: it writes its own runs) */
int loom_ck_plan_touches(const ckpt_plan_t *p, int rank, int t, int independent);

/* owner[c] for every chunk c (p->cbase[nt] entries): the lowest rank
 * one of whose runs holds the whole chunk (it can sum it from memory),
 * -1 where no single run does */
void loom_ck_plan_chunk_owners(const ckpt_plan_t *p, int32_t *owner);
/* the mean length of the runs of all ranks (0 without runs) */
uint64_t loom_ck_plan_mean_piece(const ckpt_plan_t *p);

/* scratch of loom_ck_plan_zero_holes: intervals some rank holds */
typedef struct {
	uint64_t (*iv)[2];
	long n, cap;
	int oom;
} ckpt_cover_t;
/* zero the bytes of window [lo, hi) (in win) that no rank holds */
void loom_ck_plan_zero_holes(const ckpt_plan_t *p, ckpt_cover_t *c, char *win, uint64_t lo,
			  uint64_t hi);

/* ---- manifest (ckpt_format.c) ---- */
typedef struct {
	char name[CKPT_NAME_MAX + 1];
	int dtype;
	int ndim;
	uint64_t shape[CKPT_MAX_NDIM];
	uint64_t bytes;
	char file[32];
	uint64_t sum;
} ckpt_mtensor_t;

typedef struct {
	long long step;
	int algo;
	uint64_t chunk;
	int ntensors;
	ckpt_mtensor_t *t;
	char writer[128]; /* informational: job id, ranks */
} ckpt_manifest_t;

/* Writes the manifest text to f (including its own checksum line). */
int loom_ck_manifest_write(FILE *f, const ckpt_manifest_t *m);
/* Parses; on failure returns a loom status and a reason in why. */
int loom_ck_manifest_parse(const char *text, size_t len, ckpt_manifest_t *m, char *why,
			size_t whylen);
void loom_ck_manifest_free(ckpt_manifest_t *m);
/* STEPDIR/NAME whole (NUL-terminated) when a regular file of at most max
 * bytes; neither followed if a link. A loom status, the reason in why. */
int loom_ck_read_small(const char *stepdir, const char *name, size_t max, char **text,
		    size_t *len, char *why, size_t whylen);
/* Reads DIR/step-N/MANIFEST. */
int loom_ck_manifest_load(const char *stepdir, ckpt_manifest_t *m, char *why, size_t whylen);

/* A tensor name is 1..200 printable non-space ASCII characters. */
int loom_ck_name_ok(const char *name);
/* product(shape[0..ndim)) * esize into *bytes; 0 when it would reach
 * CKPT_BYTES_MAX (or ndim is outside 1..CKPT_MAX_NDIM) */
int loom_ck_shape_bytes(int ndim, const uint64_t *shape, uint64_t esize, uint64_t *bytes);

/* ---- directory (ckpt_dir.c) ----
 * Entries below DIR are never followed if links, and entries of another
 * user are skipped: both with a warning (docs/checkpoint-format.md). */
int loom_ck_fsync_path(const char *path);
/* "step-<N>": 1 and *step; 0 for any other name */
int loom_ck_step_name(const char *s, long long *step);
/* committed steps in dir (real step-<N> directories of ours with a
 * MANIFEST), descending; *n set */
int loom_ck_list_steps(const char *dir, long long **steps, int *n);
/* remove DIR/NAME, a directory made by us (one level of files); a link
 * is left alone: 0, -1 */
int loom_ck_rmtree(const char *dir, const char *name);
/* keep the `keep` highest committed steps, remove the others and the
 * leftovers of crashed saves and writers */
int loom_ck_prune(const char *dir, int keep, long long just_committed);
/* the same, but the old steps are only renamed to .prune-step-N (quick:
 * no longer loadable) and left there; loom_ck_prune_sweep removes every
 * .prune-step-N of ours (the commit's sweep runs it in the background:
 * nothing a save or load uses has such a name) */
int loom_ck_prune_mark(const char *dir, int keep, long long just_committed);
int loom_ck_prune_sweep(const char *dir);
/* DIR/latest: "step-<N>\n" replaced atomically; read: -1 when absent */
int loom_ck_write_latest(const char *dir, long long step);
/* NAME in DIR replaced atomically by TEXT (fsynced) */
int loom_ck_write_small(const char *dir, const char *name, const char *text);
/* The node cache's record of which byte ranges a cached step holds
 * (docs/checkpoint-format.md, "The node-local tier") */
#define CKPT_PIECES_FILE "PIECES"
#define CKPT_PIECES_HEADER "loom-cache-pieces 1"
#define CKPT_PIECES_MAX (64u << 10)
long long loom_ck_read_latest(const char *dir);

/* DIR/LOOM_SAVE_TIMES_FILE (common/loom_files.h): the last
 * CKPT_TIMES_KEEP committed saves, seconds = total_s, bytes = the
 * checkpoint's bytes. Read by loom.so for --loom-ckpt-signal=SIG@auto;
 * rank 0 appends after each commit. */
#define CKPT_TIMES_KEEP 8
int loom_ck_times_record(const char *dir, long long step, double seconds, unsigned long long bytes);

#endif
