/* runtime/ckpt.h: internals of checkpoint/restart (runtime/ckpt*.c).
 * Pure functions here (layouts, domains, checksums, manifest) are unit
 * tested without a communicator; the collective parts live in ckpt.c. */
#ifndef LOOM_CKPT_H
#define LOOM_CKPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CKPT_MAX_NDIM 8
#define CKPT_NAME_MAX 200
#define CKPT_DEFAULT_CHUNK ((uint64_t)4 << 20)

/* ---- checksums (ckpt_format.c) ---- */
enum { CKPT_SUM_CRC32C = 1, CKPT_SUM_XXH3 = 2 };

typedef struct {
	int algo;
	uint32_t crc;
	void *xx; /* XXH3_state_t * when algo == CKPT_SUM_XXH3 */
} ckpt_hash_t;

/* The algorithm new checkpoints use: xxh3-64 when built with xxHash. */
int ckpt_sum_default(void);
const char *ckpt_sum_name(int algo);
int ckpt_sum_parse(const char *name); /* 0 when unknown */
int ckpt_sum_supported(int algo);
int ckpt_hash_init(ckpt_hash_t *h, int algo);
void ckpt_hash_update(ckpt_hash_t *h, const void *p, size_t n);
uint64_t ckpt_hash_final(ckpt_hash_t *h); /* also frees */
uint64_t ckpt_hash_buf(int algo, const void *p, size_t n);
uint32_t ckpt_crc32c(uint32_t crc, const void *p, size_t n); /* crc = 0 to start */
/* sum of a file: the hash of its chunk sums, each as 8 little-endian bytes */
uint64_t ckpt_file_sum(int algo, const uint64_t *chunk_sums, size_t n);

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
long ckpt_block_runs(int ndim, const uint64_t *shape, const uint64_t *offset,
		     const uint64_t *extent, size_t esize,
		     void (*cb)(void *arg, const ckpt_run_t *run), void *arg);

/* Split a byte space of `total` bytes, made of files of bytes[i] (in
 * order) cut into chunks of `chunk` bytes from each file's start, among
 * naggr aggregators: start[j] .. start[j+1] is aggregator j's domain
 * (start has naggr + 1 entries; start[0] = 0, start[naggr] = total).
 * Every boundary is a chunk start; domains are contiguous and balanced to
 * within one chunk. */
void ckpt_domains(size_t nfiles, const uint64_t *bytes, uint64_t chunk, int naggr,
		  uint64_t *start);

/* Number of chunks of a file of n bytes (0 for an empty file). */
static inline uint64_t ckpt_nchunks(uint64_t n, uint64_t chunk)
{
	return (n + chunk - 1) / chunk;
}

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
int ckpt_manifest_write(FILE *f, const ckpt_manifest_t *m);
/* Parses; on failure returns a loom status and a reason in why. */
int ckpt_manifest_parse(const char *text, size_t len, ckpt_manifest_t *m, char *why,
			size_t whylen);
void ckpt_manifest_free(ckpt_manifest_t *m);
/* Reads DIR/step-N/MANIFEST. */
int ckpt_manifest_load(const char *stepdir, ckpt_manifest_t *m, char *why, size_t whylen);

/* A tensor name is 1..200 printable non-space ASCII characters. */
int ckpt_name_ok(const char *name);

/* ---- directory (ckpt_format.c) ---- */
int ckpt_fsync_path(const char *path);
/* committed steps in dir (step-<N> with a MANIFEST), descending; *n set */
int ckpt_list_steps(const char *dir, long long **steps, int *n);
/* remove a directory tree made by us (one level of files) */
int ckpt_rmtree(const char *path);
/* keep the `keep` highest committed steps, remove the others */
int ckpt_prune(const char *dir, int keep, long long just_committed);
/* DIR/latest: "step-<N>\n" replaced atomically; read: -1 when absent */
int ckpt_write_latest(const char *dir, long long step);
/* NAME in DIR replaced atomically by TEXT (fsynced) */
int ckpt_write_small(const char *dir, const char *name, const char *text);
/* The file a stop-triggered checkpoint leaves for loom.so, which requeues
 * the job (docs/environment.md, "Requeue after a checkpoint") */
#define CKPT_REQUEUE_FILE ".loom-requeue"
long long ckpt_read_latest(const char *dir);

#endif
