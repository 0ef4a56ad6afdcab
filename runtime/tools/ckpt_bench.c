/* loom-ckpt-bench: checkpoint write throughput, two-phase vs independent
 * writes of a block-cyclic matrix, next to dd-style sequential write
 * bandwidth (with fsync) measured in the same run; the cost of
 * loom_ckpt_should_stop; time from a stop signal to a durable commit.
 *
 *   srun --mpi=pmix -N2 -n4 loom-ckpt-bench --dir DIR [--size 1G]
 *        [--block-rows 16] [--cols 1024] [--reps 3]
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

static void usage(void)
{
	fprintf(stderr, "usage: loom-ckpt-bench [--dir DIR] [--size BYTES[KMG]] [--block-rows N] "
			"[--cols N] [--reps N]\n"
			"  DIR defaults to $LOOM_CKPT_DIR; size default 64M (state size in total)\n");
}

int main(int argc, char **argv)
{
	const char *dir = getenv("LOOM_CKPT_DIR");
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
	double best[2] = { 0, 0 };
	long long step = 0;
	for (int mode = 0; mode < 2; mode++) {
		loom_ckpt_set_mode(ck, mode ? LOOM_CKPT_INDEPENDENT : LOOM_CKPT_TWO_PHASE);
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
			if (rank == 0 && r == 0)
				printf("  %-11s save: %.3f s (data %.3f, commit %.3f), %d aggregators, %d rounds\n",
				       mode ? "independent" : "two-phase", t, st.data_s, st.commit_s,
				       st.aggregators, st.rounds);
		}
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
	if (rank == 0) {
		printf("dd-style sequential write + fsync (%d writer%s): %8.1f MB/s\n", nodes,
		       nodes > 1 ? "s" : "", best_dd);
		printf("two-phase checkpoint write:      %8.1f MB/s  (%.0f %% of sequential)\n", best[0],
		       100 * best[0] / best_dd);
		printf("independent checkpoint write:    %8.1f MB/s  (%.0f %% of sequential)\n", best[1],
		       100 * best[1] / best_dd);
		printf("should_stop: %.1f us per call (%d calls)\n", 1e6 * ss, calls);
		printf("signal to durable commit (%.1f MiB): %.3f s (agreement %.3f s)%s\n",
		       (double)total / 1048576, tcommit, tsig - t0, rc ? " FAILED" : "");
	}
	(void)mine;
	loom_ckpt_close(ck);
	for (int i = 0; i < nb; i++)
		free(bufs[i]);
	loom_finalize(w);
	return rc ? 1 : 0;
}
