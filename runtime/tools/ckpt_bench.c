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

int main(int argc, char **argv)
{
	const char *dir = getenv("LOOM_CKPT_DIR"), *cache = NULL;
	size_t size = 64u << 20, cols = 1024, brows = 16;
	int reps = 3, rank, np, rc;
	loom_comm_t *w;
	loom_ckpt_t *ck;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			usage();
			return 0;
		} else if (i + 1 < argc && !strcmp(argv[i], "--dir")) {
			dir = argv[++i];
		} else if (i + 1 < argc && !strcmp(argv[i], "--size")) {
			if (!(size = parse_size(argv[++i]))) {
				fprintf(stderr, "loom-ckpt-bench: --size %s: expected a size like 64M\n", argv[i]);
				return 2;
			}
		} else if (i + 1 < argc && !strcmp(argv[i], "--block-rows")) {
			brows = (size_t)atol(argv[++i]);
		} else if (i + 1 < argc && !strcmp(argv[i], "--cols")) {
			cols = (size_t)atol(argv[++i]);
		} else if (i + 1 < argc && !strcmp(argv[i], "--cache")) {
			cache = argv[++i];
		} else if (i + 1 < argc && !strcmp(argv[i], "--reps")) {
			reps = atoi(argv[++i]);
		} else {
			usage();
			return 2;
		}
	}
	if (!dir || !brows || !cols || reps < 1) {
		usage();
		return 2;
	}
	setenv("LOOM_CKPT_SIGNAL", "USR1", 1);
	setenv("LOOM_CKPT_KEEP", "1", 0);
	setenv("LOOM_CKPT_REQUEUE", "0", 1);    /* its stop is a drill: no requeue */
	unsetenv("LOOM_CKPT_CACHE");            /* the shared directory first; --cache below */
	if ((rc = loom_init(&w))) {
		fprintf(stderr, "loom_init: %s\n", loom_strerror(rc));
		return 1;
	}
	rank = loom_comm_rank(w);
	np = loom_comm_size(w);
	if ((rc = loom_ckpt_open(w, dir, &ck)))
		return 1;
	size_t rows = size / (cols * 4);
	if (rows < 1)
		rows = 1;
	size_t sh[2] = { rows, cols };
	float *bufs[1 << 16];
	int nb = 0;
	size_t mine = 0;
	for (size_t r0 = 0, k = 0; r0 < rows && nb < (1 << 16); r0 += brows, k++) {
		if ((int)(k % (size_t)np) != rank)
			continue;
		size_t off[2] = { r0, 0 }, ext[2] = { r0 + brows <= rows ? brows : rows - r0, cols };
		bufs[nb] = malloc(ext[0] * ext[1] * sizeof(float));
		for (size_t i = 0; i < ext[0] * ext[1]; i++)
			bufs[nb][i] = (float)(r0 * cols + i);
		loom_ckpt_tensor(ck, "state", LOOM_FLOAT32, 2, sh, off, ext, bufs[nb]);
		mine += ext[0] * ext[1] * 4;
		nb++;
	}
	if (nb == 0)
		loom_ckpt_tensor(ck, "state", LOOM_FLOAT32, 2, sh, NULL, NULL, NULL);
	size_t total = rows * cols * 4;
	int lr = loom_comm_local_rank(w), nodes = 0, one = lr == 0, n32;
	loom_allreduce(&one, &n32, 1, LOOM_INT32, LOOM_SUM, w);
	nodes = n32;
	if (rank == 0)
		printf("loom-ckpt-bench: %d ranks on %d nodes, state %.1f MiB (%zu x %zu float32, "
		       "block-cyclic blocks of %zu rows), dir %s\n",
		       np, nodes, (double)total / 1048576, rows, cols, brows, dir);

	/* dd-style: one writer per node, sequential 8 MiB pwrites + fsync */
	double best_dd = 0;
	{
		size_t part = total / (size_t)nodes, chunk = 8u << 20;
		char *buf = malloc(chunk), path[4096];
		memset(buf, 0x5a, chunk);
		for (int r = 0; r < reps; r++) {
			loom_barrier(w);
			double t0 = now_s();
			if (lr == 0) {
				snprintf(path, sizeof path, "%s/dd-%d.bin", dir, rank);
				int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
				for (size_t o = 0; o < part && fd >= 0; o += chunk)
					if (pwrite(fd, buf, part - o < chunk ? part - o : chunk, (off_t)o) < 0)
						break;
				if (fd >= 0) {
					fsync(fd);
					close(fd);
				}
			}
			loom_barrier(w);
			double bw = (double)part * nodes / (now_s() - t0) / 1e6;
			if (bw > best_dd)
				best_dd = bw;
			if (lr == 0)
				unlink(path);
		}
		free(buf);
	}
	double best[3] = { 0, 0, 0 }, best_sync = 1e30;
	static const char *mname[3] = { "two-phase", "independent", "auto" };
	loom_ckpt_mode_t auto_took = LOOM_CKPT_AUTO;
	long long step = 0;
	for (int mode = 0; mode < 3; mode++) {
		loom_ckpt_set_mode(ck, (loom_ckpt_mode_t)mode);
		for (int r = 0; r < reps; r++) {
			loom_ckpt_stats_t st;
			loom_barrier(w);
			double t0 = now_s();
			if ((rc = loom_ckpt_save(ck, ++step))) {
				if (rank == 0)
					fprintf(stderr, "save: %s\n", loom_strerror(rc));
				return 1;
			}
			double t = now_s() - t0, bw = (double)total / t / 1e6;
			loom_ckpt_stats(ck, &st);
			if (bw > best[mode])
				best[mode] = bw;
			if (mode == 2 && t < best_sync)
				best_sync = t;
			auto_took = st.mode;
			if (rank == 0 && r == 0)
				printf("  %-11s save: %.3f s (data %.3f, commit %.3f), %d aggregators, %d rounds\n",
				       mname[mode], t, st.data_s, st.commit_s, st.aggregators, st.rounds);
		}
	}
	/* async (the default mode): the caller's time in the call next to one
	 * memcpy of its own share (into memory touched before), and the step
	 * time of a loop of local work while a flush runs, next to without */
	double best_blk = 1e30, best_cpy = 1e30, step_bg = 0, step_idle = 0;
	int async_rc = 0;
	{
		char *dst = malloc(mine + 1), *work = malloc(8u << 20);
		memset(dst, 1, mine + 1);
		memset(work, 2, 8u << 20);
		for (int r = 0; r < reps; r++) {
			double c0 = now_s();
			size_t at = 0;
			for (size_t r0 = 0, k = 0, b = 0; r0 < rows && (int)b < nb; r0 += brows, k++) {
				if ((int)(k % (size_t)np) != rank)
					continue;
				size_t len = (r0 + brows <= rows ? brows : rows - r0) * cols * 4;
				memcpy(dst + at, bufs[b++], len);
				at += len;
			}
			double c = now_s() - c0;
			if (c < best_cpy)
				best_cpy = c;
		}
		loom_ckpt_set_async(ck, 1);
		for (int r = 0; r < reps + 1 && !async_rc; r++) {
			loom_ckpt_stats_t st;
			loom_barrier(w);
			async_rc = loom_ckpt_save(ck, ++step);
			loom_ckpt_stats(ck, &st);
			/* the first save allocates the staging memory: not counted */
			if (r > 0 && st.blocked_s < best_blk)
				best_blk = st.blocked_s;
			/* "training steps" while the flush runs */
			double s0 = now_s();
			int n = 0;
			for (; n < 20; n++)
				for (int i = 0; i < 4; i++)
					memmove(work + (i & 1), work + 1 - (i & 1), (8u << 20) - 1);
			step_bg += (now_s() - s0) / n;
			if (!async_rc)
				async_rc = loom_ckpt_wait(ck);
			loom_barrier(w);
			s0 = now_s();
			for (n = 0; n < 20; n++)
				for (int i = 0; i < 4; i++)
					memmove(work + (i & 1), work + 1 - (i & 1), (8u << 20) - 1);
			step_idle += (now_s() - s0) / n;
		}
		loom_ckpt_set_async(ck, 0);
		step_bg /= reps + 1;
		step_idle /= reps + 1;
		double v[2] = { best_blk, best_cpy }, m[2];
		loom_allreduce(v, m, 2, LOOM_FLOAT64, LOOM_MAX, w);
		best_blk = m[0];
		best_cpy = m[1];
		free(dst);
		free(work);
	}
	/* should_stop cost */
	int stop = 0, calls = 200;
	loom_barrier(w);
	double t0 = now_s();
	for (int i = 0; i < calls; i++)
		loom_ckpt_should_stop(ck, 1000 + i, &stop);
	double ss = (now_s() - t0) / calls;
	/* signal -> durable commit */
	loom_barrier(w);
	t0 = now_s();
	if (rank == np - 1)
		raise(SIGUSR1);
	long long s = 100000;
	do
		loom_ckpt_should_stop(ck, s++, &stop);
	while (!stop);
	double tsig = now_s();
	rc = loom_ckpt_save(ck, s);
	double tcommit = now_s() - t0;
	/* the node-local tier: a second handle on the same blocks */
	double best_cache = 1e30, best_flush = 1e30;
	int cache_rc = 0;
	if (cache) {
		loom_ckpt_t *cc;
		setenv("LOOM_CKPT_CACHE", cache, 1);
		setenv("LOOM_CKPT_FLUSH", "1000000", 1);
		if ((cache_rc = loom_ckpt_open(w, dir, &cc)) == 0) {
			register_again(cc, sh, brows, rank, np, bufs, nb);
			for (int r = 0; r < reps && !cache_rc; r++) {
				loom_barrier(w);
				double c0 = now_s();
				cache_rc = loom_ckpt_save(cc, 200000 + r);
				if (now_s() - c0 < best_cache)
					best_cache = now_s() - c0;
			}
			loom_ckpt_close(cc);
		}
		/* every save flushed to DIR in the background: the caller's time */
		setenv("LOOM_CKPT_FLUSH", "1", 1);
		if (!cache_rc && (cache_rc = loom_ckpt_open(w, dir, &cc)) == 0) {
			register_again(cc, sh, brows, rank, np, bufs, nb);
			for (int r = 0; r < reps + 1 && !cache_rc; r++) {
				loom_ckpt_stats_t st;
				loom_barrier(w);
				cache_rc = loom_ckpt_save(cc, 300000 + r);
				loom_ckpt_stats(cc, &st);
				if (r > 0 && st.blocked_s < best_flush) /* the first allocates staging */
					best_flush = st.blocked_s;
				if (!cache_rc)
					cache_rc = loom_ckpt_wait(cc);
			}
			loom_ckpt_close(cc);
		}
	}
	if (rank == 0) {
		printf("dd-style sequential write + fsync (%d writer%s): %8.1f MB/s\n", nodes,
		       nodes > 1 ? "s" : "", best_dd);
		printf("two-phase checkpoint write:      %8.1f MB/s  (%.0f %% of sequential)\n", best[0],
		       100 * best[0] / best_dd);
		printf("independent checkpoint write:    %8.1f MB/s  (%.0f %% of sequential)\n", best[1],
		       100 * best[1] / best_dd);
		printf("auto checkpoint write:           %8.1f MB/s  (%.0f %% of sequential; took %s)\n",
		       best[2], 100 * best[2] / best_dd, mname[auto_took == LOOM_CKPT_INDEPENDENT]);
		printf("async save: blocked %.4f s (memcpy of the largest share %.4f s, %.1fx; "
		       "%.1f %% of a blocking save's %.3f s)%s\n", best_blk, best_cpy,
		       best_blk / best_cpy, 100 * best_blk / best_sync, best_sync,
		       async_rc ? " FAILED" : "");
		printf("step time with a flush in the background %.4f s, without %.4f s\n", step_bg,
		       step_idle);
		printf("should_stop: %.1f us per call (%d calls)\n", 1e6 * ss, calls);
		if (cache)
			printf("node cache %s: save %.3f s (%.1f MB/s; the auto save to the shared "
			       "directory: %.3f s); flushed in the background: blocked %.3f s%s\n", cache,
			       best_cache, (double)total / best_cache / 1e6, best_sync, best_flush,
			       cache_rc ? " FAILED" : "");
		printf("signal to durable commit (%.1f MiB): %.3f s (agreement %.3f s)%s\n",
		       (double)total / 1048576, tcommit, tsig - t0, rc ? " FAILED" : "");
	}
	loom_ckpt_close(ck);
	for (int i = 0; i < nb; i++)
		free(bufs[i]);
	loom_finalize(w);
	return rc ? 1 : 0;
}
