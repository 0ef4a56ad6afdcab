/* loom-ckpt-bench: checkpoint write throughput, two-phase vs independent
 * writes of a block-cyclic matrix, next to dd-style sequential write
 * bandwidth (with fsync) measured in the same run; the cost of
 * loom_ckpt_should_stop; time from a stop signal to a durable commit.
 *
 *   srun --mpi=pmix -N2 -n4 loom-ckpt-bench --dir DIR [--size 1G]
 *        [--block-rows 16] [--cols 1024] [--reps 3]
 * Also the default mode (auto) and an async save: the time the caller is
 * blocked next to a memcpy of its share, and the time of a step of local
 * work while the flush runs next to without one. With --cache CDIR (a
 * LOOM_CKPT_CACHE pattern, e.g. /dev/shm/cache-%n): the save into the node
 * caches with partner copies, and one flushed to DIR in the background.
 */
#include "config.h"
#include "loom.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static size_t parse_size(const char *s)
{
	char *e;
	double v = strtod(s, &e);
	if (e == s || v <= 0)
		return 0;
	switch (*e) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1024 * 1024; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
	case 0: break;
	default: return 0;
	}
	return (size_t)v;
}

/* the blocks already made (block-cyclic by rows), on another handle */
static void register_again(loom_ckpt_t *ck, const size_t *sh, size_t brows, int rank, int np,
			   float **bufs, int nb)
{
	int b = 0;
	for (size_t r0 = 0, k = 0; r0 < sh[0] && b < nb; r0 += brows, k++) {
		if ((int)(k % (size_t)np) != rank)
			continue;
		size_t off[2] = { r0, 0 }, ext[2] = { r0 + brows <= sh[0] ? brows : sh[0] - r0, sh[1] };
		loom_ckpt_tensor(ck, "state", LOOM_FLOAT32, 2, sh, off, ext, bufs[b++]);
	}
	if (nb == 0)
		loom_ckpt_tensor(ck, "state", LOOM_FLOAT32, 2, sh, NULL, NULL, NULL);
}

static void usage(void)
{
	fprintf(stderr, "usage: loom-ckpt-bench [--dir DIR] [--size BYTES[KMG]] [--block-rows N] "
			"[--cols N] [--reps N] [--cache CDIR]\n"
			"  DIR defaults to $LOOM_CKPT_DIR; size default 64M (state size in total)\n");
}

/* the run: its settings, the state each rank registered, the handle */
struct bench {
	const char *dir, *cache;
	size_t size, cols, brows, rows, total, mine;
	size_t sh[2];
	int reps, rank, np, lr, nodes, nb;
	loom_comm_t *w;
	loom_ckpt_t *ck;
	long long step;
	float *bufs[1 << 16];
};

/* what the report prints */
struct results {
	double best_dd, best[3], best_sync;        /* sequential, each mode's MB/s */
	loom_ckpt_mode_t auto_took;
	double best_blk, best_cpy, step_bg, step_idle; /* async */
	double first_blk;                         /* the first async save's */
	int async_rc;
	double ss;                                /* should_stop, per call */
	int calls;
	double t0, tsig, tcommit;                 /* signal -> commit */
	int rc;
	double best_cache, best_flush;            /* --cache */
	int cache_rc;
};

static const char *mname[3] = { "two-phase", "independent", "auto" };

/* 0: run; otherwise main's exit status (help: 0, a bad argument: 2) */
static int parse_args(int argc, char **argv, struct bench *b)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			usage();
			return -1;
		} else if (i + 1 < argc && !strcmp(argv[i], "--dir")) {
			b->dir = argv[++i];
		} else if (i + 1 < argc && !strcmp(argv[i], "--size")) {
			if (!(b->size = parse_size(argv[++i]))) {
				fprintf(stderr, "loom-ckpt-bench: --size %s: expected a size like 64M\n", argv[i]);
				return 2;
			}
		} else if (i + 1 < argc && !strcmp(argv[i], "--block-rows")) {
			b->brows = (size_t)atol(argv[++i]);
		} else if (i + 1 < argc && !strcmp(argv[i], "--cols")) {
			b->cols = (size_t)atol(argv[++i]);
		} else if (i + 1 < argc && !strcmp(argv[i], "--cache")) {
			b->cache = argv[++i];
		} else if (i + 1 < argc && !strcmp(argv[i], "--reps")) {
			b->reps = atoi(argv[++i]);
		} else {
			usage();
			return 2;
		}
	}
	if (!b->dir || !b->brows || !b->cols || b->reps < 1) {
		usage();
		return 2;
	}
	return 0;
}

/* this rank's blocks of the block-cyclic matrix, made and registered;
 * the node count; the run's first line */
static void make_state(struct bench *b)
{
	b->rows = b->size / (b->cols * 4);
	if (b->rows < 1)
		b->rows = 1;
	b->sh[0] = b->rows;
	b->sh[1] = b->cols;
	for (size_t r0 = 0, k = 0; r0 < b->rows && b->nb < (1 << 16); r0 += b->brows, k++) {
		if ((int)(k % (size_t)b->np) != b->rank)
			continue;
		size_t off[2] = { r0, 0 },
		       ext[2] = { r0 + b->brows <= b->rows ? b->brows : b->rows - r0, b->cols };
		b->bufs[b->nb] = malloc(ext[0] * ext[1] * sizeof(float));
		for (size_t i = 0; i < ext[0] * ext[1]; i++)
			b->bufs[b->nb][i] = (float)(r0 * b->cols + i);
		loom_ckpt_tensor(b->ck, "state", LOOM_FLOAT32, 2, b->sh, off, ext, b->bufs[b->nb]);
		b->mine += ext[0] * ext[1] * 4;
		b->nb++;
	}
	if (b->nb == 0)
		loom_ckpt_tensor(b->ck, "state", LOOM_FLOAT32, 2, b->sh, NULL, NULL, NULL);
	b->total = b->rows * b->cols * 4;
	int one, n32;
	b->lr = loom_comm_local_rank(b->w);
	one = b->lr == 0;
	loom_allreduce(&one, &n32, 1, LOOM_INT32, LOOM_SUM, b->w);
	b->nodes = n32;
	if (b->rank == 0)
		printf("loom-ckpt-bench: %d ranks on %d nodes, state %.1f MiB (%zu x %zu float32, "
		       "block-cyclic blocks of %zu rows), dir %s\n",
		       b->np, b->nodes, (double)b->total / 1048576, b->rows, b->cols, b->brows, b->dir);
}

/* dd-style: one writer per node, sequential 8 MiB pwrites + fsync; the
 * best MB/s of all nodes together */
static double bench_dd(const struct bench *b)
{
	double best_dd = 0;
	size_t part = b->total / (size_t)b->nodes, chunk = 8u << 20;
	char *buf = malloc(chunk), path[4096];
	memset(buf, 0x5a, chunk);
	for (int r = 0; r < b->reps; r++) {
		loom_barrier(b->w);
		double t0 = now_s();
		if (b->lr == 0) {
			snprintf(path, sizeof path, "%s/dd-%d.bin", b->dir, b->rank);
			int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			for (size_t o = 0; o < part && fd >= 0; o += chunk)
				if (pwrite(fd, buf, part - o < chunk ? part - o : chunk, (off_t)o) < 0)
					break;
			if (fd >= 0) {
				fsync(fd);
				close(fd);
			}
		}
		loom_barrier(b->w);
		double bw = (double)part * b->nodes / (now_s() - t0) / 1e6;
		if (bw > best_dd)
			best_dd = bw;
		if (b->lr == 0)
			unlink(path);
	}
	free(buf);
	return best_dd;
}

/* blocking saves in each mode: the best MB/s, auto's quickest save and
 * the mode it took; a failed save: its status */
static int bench_modes(struct bench *b, struct results *res)
{
	int rc;
	for (int mode = 0; mode < 3; mode++) {
		loom_ckpt_set_mode(b->ck, (loom_ckpt_mode_t)mode);
		for (int r = 0; r < b->reps; r++) {
			loom_ckpt_stats_t st;
			loom_barrier(b->w);
			double t0 = now_s();
			if ((rc = loom_ckpt_save(b->ck, ++b->step))) {
				if (b->rank == 0)
					fprintf(stderr, "save: %s\n", loom_strerror(rc));
				return rc;
			}
			double t = now_s() - t0, bw = (double)b->total / t / 1e6;
			loom_ckpt_stats(b->ck, &st);
			if (bw > res->best[mode])
				res->best[mode] = bw;
			if (mode == 2 && t < res->best_sync)
				res->best_sync = t;
			res->auto_took = st.mode;
			if (b->rank == 0 && r == 0)
				printf("  %-11s save: %.3f s (data %.3f, commit %.3f), %d aggregators, %d rounds\n",
				       mname[mode], t, st.data_s, st.commit_s, st.aggregators, st.rounds);
		}
	}
	return 0;
}

/* one memcpy of this rank's share into dst (touched before): seconds */
static double copy_share(const struct bench *b, char *dst)
{
	double c0 = now_s();
	size_t at = 0;
	for (size_t r0 = 0, k = 0, i = 0; r0 < b->rows && (int)i < b->nb; r0 += b->brows, k++) {
		if ((int)(k % (size_t)b->np) != b->rank)
			continue;
		size_t len = (r0 + b->brows <= b->rows ? b->brows : b->rows - r0) * b->cols * 4;
		memcpy(dst + at, b->bufs[i++], len);
		at += len;
	}
	return now_s() - c0;
}

/* "training steps" of local work: the mean seconds of one of 20 */
static double local_steps(char *work)
{
	double s0 = now_s();
	int n = 0;
	for (; n < 20; n++)
		for (int i = 0; i < 4; i++)
			memmove(work + (i & 1), work + 1 - (i & 1), (8u << 20) - 1);
	return (now_s() - s0) / n;
}

/* async (the default mode): the caller's time in the call next to one
 * memcpy of its own share (into memory touched before), and the step
 * time of a loop of local work while a flush runs, next to without */
static void bench_async(struct bench *b, struct results *res)
{
	char *dst = malloc(b->mine + 1), *work = malloc(8u << 20);
	memset(dst, 1, b->mine + 1);
	memset(work, 2, 8u << 20);
	/* turned on as a job does at its start: the copies below are its
	 * work before the first save */
	loom_ckpt_set_async(b->ck, 1);
	for (int r = 0; r < b->reps; r++) {
		double c = copy_share(b, dst);
		if (c < res->best_cpy)
			res->best_cpy = c;
	}
	for (int r = 0; r < b->reps + 1 && !res->async_rc; r++) {
		loom_ckpt_stats_t st;
		loom_barrier(b->w);
		res->async_rc = loom_ckpt_save(b->ck, ++b->step);
		loom_ckpt_stats(b->ck, &st);
		/* the first save takes the staging memory: shown apart */
		if (r == 0)
			res->first_blk = st.blocked_s;
		else if (st.blocked_s < res->best_blk)
			res->best_blk = st.blocked_s;
		/* "training steps" while the flush runs */
		res->step_bg += local_steps(work);
		if (!res->async_rc)
			res->async_rc = loom_ckpt_wait(b->ck);
		loom_barrier(b->w);
		res->step_idle += local_steps(work);
	}
	loom_ckpt_set_async(b->ck, 0);
	res->step_bg /= b->reps + 1;
	res->step_idle /= b->reps + 1;
	double v[3] = { res->best_blk, res->best_cpy, res->first_blk }, m[3];
	loom_allreduce(v, m, 3, LOOM_FLOAT64, LOOM_MAX, b->w);
	res->best_blk = m[0];
	res->best_cpy = m[1];
	res->first_blk = m[2];
	free(dst);
	free(work);
}

/* the cost of should_stop, then the time from a stop signal (on the
 * last rank) to the durable commit of the stop save */
static void bench_stop(struct bench *b, struct results *res)
{
	int stop = 0;
	res->calls = 200;
	loom_barrier(b->w);
	double t0 = now_s();
	for (int i = 0; i < res->calls; i++)
		loom_ckpt_should_stop(b->ck, 1000 + i, &stop);
	res->ss = (now_s() - t0) / res->calls;
	/* signal -> durable commit */
	loom_barrier(b->w);
	res->t0 = now_s();
	if (b->rank == b->np - 1)
		raise(SIGUSR1);
	long long s = 100000;
	do
		loom_ckpt_should_stop(b->ck, s++, &stop);
	while (!stop);
	res->tsig = now_s();
	res->rc = loom_ckpt_save(b->ck, s);
	res->tcommit = now_s() - res->t0;
}

/* the node-local tier: a second handle on the same blocks */
static void bench_cache(struct bench *b, struct results *res)
{
	loom_ckpt_t *cc;
	setenv("LOOM_CKPT_CACHE", b->cache, 1);
	setenv("LOOM_CKPT_FLUSH", "1000000", 1);
	if ((res->cache_rc = loom_ckpt_open(b->w, b->dir, &cc)) == 0) {
		register_again(cc, b->sh, b->brows, b->rank, b->np, b->bufs, b->nb);
		for (int r = 0; r < b->reps && !res->cache_rc; r++) {
			loom_barrier(b->w);
			double c0 = now_s();
			res->cache_rc = loom_ckpt_save(cc, 200000 + r);
			if (now_s() - c0 < res->best_cache)
				res->best_cache = now_s() - c0;
		}
		loom_ckpt_close(cc);
	}
	/* every save flushed to DIR in the background: the caller's time */
	setenv("LOOM_CKPT_FLUSH", "1", 1);
	if (!res->cache_rc && (res->cache_rc = loom_ckpt_open(b->w, b->dir, &cc)) == 0) {
		register_again(cc, b->sh, b->brows, b->rank, b->np, b->bufs, b->nb);
		for (int r = 0; r < b->reps + 1 && !res->cache_rc; r++) {
			loom_ckpt_stats_t st;
			loom_barrier(b->w);
			res->cache_rc = loom_ckpt_save(cc, 300000 + r);
			loom_ckpt_stats(cc, &st);
			if (r > 0 && st.blocked_s < res->best_flush) /* the first allocates staging */
				res->best_flush = st.blocked_s;
			if (!res->cache_rc)
				res->cache_rc = loom_ckpt_wait(cc);
		}
		loom_ckpt_close(cc);
	}
}

/* rank 0's summary */
static void report(const struct bench *b, const struct results *res)
{
	double best_dd = res->best_dd;
	printf("dd-style sequential write + fsync (%d writer%s): %8.1f MB/s\n", b->nodes,
	       b->nodes > 1 ? "s" : "", best_dd);
	printf("two-phase checkpoint write:      %8.1f MB/s  (%.0f %% of sequential)\n", res->best[0],
	       100 * res->best[0] / best_dd);
	printf("independent checkpoint write:    %8.1f MB/s  (%.0f %% of sequential)\n", res->best[1],
	       100 * res->best[1] / best_dd);
	printf("auto checkpoint write:           %8.1f MB/s  (%.0f %% of sequential; took %s)\n",
	       res->best[2], 100 * res->best[2] / best_dd,
	       mname[res->auto_took == LOOM_CKPT_INDEPENDENT]);
	printf("async save: blocked %.4f s (memcpy of the largest share %.4f s, %.1fx; "
	       "%.1f %% of a blocking save's %.3f s)%s\n", res->best_blk, res->best_cpy,
	       res->best_blk / res->best_cpy, 100 * res->best_blk / res->best_sync, res->best_sync,
	       res->async_rc ? " FAILED" : "");
	printf("first async save: blocked %.4f s (%.1fx the memcpy)\n", res->first_blk,
	       res->first_blk / res->best_cpy);
	printf("step time with a flush in the background %.4f s, without %.4f s\n", res->step_bg,
	       res->step_idle);
	printf("should_stop: %.1f us per call (%d calls)\n", 1e6 * res->ss, res->calls);
	if (b->cache)
		printf("node cache %s: save %.3f s (%.1f MB/s; the auto save to the shared "
		       "directory: %.3f s); flushed in the background: blocked %.3f s%s\n", b->cache,
		       res->best_cache, (double)b->total / res->best_cache / 1e6, res->best_sync,
		       res->best_flush, res->cache_rc ? " FAILED" : "");
	printf("signal to durable commit (%.1f MiB): %.3f s (agreement %.3f s)%s\n",
	       (double)b->total / 1048576, res->tcommit, res->tsig - res->t0,
	       res->rc ? " FAILED" : "");
}

int main(int argc, char **argv)
{
	static struct bench b; /* bufs: half a MiB, off the stack */
	struct results res = { .best_sync = 1e30, .auto_took = LOOM_CKPT_AUTO, .best_blk = 1e30,
			       .best_cpy = 1e30, .best_cache = 1e30, .best_flush = 1e30 };
	int rc;
	b.dir = getenv("LOOM_CKPT_DIR");
	b.size = 64u << 20;
	b.cols = 1024;
	b.brows = 16;
	b.reps = 3;
	if ((rc = parse_args(argc, argv, &b)))
		return rc < 0 ? 0 : rc;
	setenv("LOOM_CKPT_SIGNAL", "USR1", 1);
	setenv("LOOM_CKPT_KEEP", "1", 0);
	setenv("LOOM_CKPT_REQUEUE", "0", 1);    /* its stop is a drill: no requeue */
	unsetenv("LOOM_CKPT_CACHE");            /* the shared directory first; --cache below */
	if ((rc = loom_init(&b.w))) {
		fprintf(stderr, "loom_init: %s\n", loom_strerror(rc));
		return 1;
	}
	b.rank = loom_comm_rank(b.w);
	b.np = loom_comm_size(b.w);
	if ((rc = loom_ckpt_open(b.w, b.dir, &b.ck)))
		return 1;
	make_state(&b);
	res.best_dd = bench_dd(&b);
	if (bench_modes(&b, &res))
		return 1;
	bench_async(&b, &res);
	bench_stop(&b, &res);
	if (b.cache)
		bench_cache(&b, &res);
	if (b.rank == 0)
		report(&b, &res);
	loom_ckpt_close(b.ck);
	for (int i = 0; i < b.nb; i++)
		free(b.bufs[i]);
	loom_finalize(b.w);
	return res.rc ? 1 : 0;
}
