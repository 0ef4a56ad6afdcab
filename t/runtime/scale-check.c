/* t/runtime/scale-check.c: what a world costs at scale, for t/t2005 and
 * docs/scale.md. Every rank times its loom_init, then:
 *   scale-check init          one allreduce, finalize
 *   scale-check fds [LIMIT]   the collectives whose peers are few (allreduce
 *                             small and large, broadcast, reduce, allgather,
 *                             reduce_scatter, barrier, and an allreduce on a
 *                             split communicator), then counts its open
 *                             descriptors (/proc/self/fd) and TCP sockets;
 *                             FAIL when descriptors exceed LIMIT
 *   scale-check all           every kind of operation, each result checked
 *                             exactly: the collectives above plus alltoall,
 *                             non-blocking allreduce, dup, a ring of
 *                             send/recv (inputs that stay exact at any
 *                             size, unlike the conformance suite's, whose
 *                             int8 and int32 sums overflow above 15 and
 *                             255 ranks)
 *   scale-check ops           the same without alltoall, the one operation
 *                             that connects every rank to every other
 * Rank 0 prints one line with the slowest rank's init time and the most
 * descriptors any rank holds (SCALE_CHECK_SHOW_FDS=1: and its own, each):
 *   scale: N ranks, init max S s, fds max F, sockets max K, nofile L,
 *   rss max R kB, shm mapped max M kB
 * (L: its soft RLIMIT_NOFILE; R: the largest VmRSS; M: the most address
 * space a rank maps from loom's shm segments) */
#include "loom.h"

#include <dirent.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* wall clock, comparable between the ranks of one host (and, as far as
 * NTP keeps them, of several) */
static double wall(void)
{
	return clock_s(CLOCK_REALTIME);
}

/* open descriptors, and how many of them are sockets; show: print each */
static void count_fds(int *fds, int *socks, int show)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], link[64];
	*fds = *socks = 0;
	if (!d)
		return;
	while ((e = readdir(d))) {
		ssize_t n;
		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		(*fds)++;
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof link - 1);
		if (n > 0 && (link[n] = 0, !strncmp(link, "socket:", 7)))
			(*socks)++;
		if (show && n > 0)
			printf("fd %s: %s\n", e->d_name, link);
	}
	closedir(d);
}

/* kB of this process: resident (VmRSS), and mapped from loom's shm segments */
static void memory_kb(int *rss, int *shm)
{
	char line[512];
	FILE *f = fopen("/proc/self/status", "r");
	*rss = *shm = 0;
	while (f && fgets(line, sizeof line, f))
		if (!strncmp(line, "VmRSS:", 6))
			*rss = atoi(line + 6);
	if (f)
		fclose(f);
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (strstr(line, "/dev/shm/loom-") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			*shm += (int)((hi - lo) >> 10);
	}
	if (f)
		fclose(f);
}

#define CHECK(call) do { int rc_ = (call); if (rc_) { \
	fprintf(stderr, "rank %d: FAIL %s: %s\n", r, #call, loom_strerror(rc_)); return 1; } } while (0)

static int collectives(loom_comm_t *w, int r, int n)
{
	size_t big = 1 << 18, i;
	double *a = malloc(big * sizeof *a), *b = malloc(big * sizeof *b);
	double *g = malloc((size_t)n * sizeof *g);
	float x = 1, y = 0;
	loom_comm_t *half = NULL;
	if (!a || !b || !g)
		return 1;
	for (i = 0; i < big; i++)
		a[i] = 1;
	CHECK(loom_allreduce(&x, &y, 1, LOOM_FLOAT32, LOOM_SUM, w));
	CHECK(loom_allreduce(a, b, big, LOOM_FLOAT64, LOOM_SUM, w));
	if (b[big - 1] != n) {
		fprintf(stderr, "rank %d: FAIL allreduce gave %g, not %d\n", r, b[big - 1], n);
		return 1;
	}
	CHECK(loom_broadcast(a, b, big, LOOM_FLOAT64, 0, w));
	CHECK(loom_reduce(a, b, big, LOOM_FLOAT64, LOOM_SUM, n - 1, w));
	CHECK(loom_allgather(&a[0], g, 1, LOOM_FLOAT64, w));
	CHECK(loom_reduce_scatter(a, b, big / (size_t)n, LOOM_FLOAT64, LOOM_SUM, w));
	CHECK(loom_barrier(w));
	CHECK(loom_comm_split(w, r % 2, r, &half));
	CHECK(loom_allreduce(&x, &y, 1, LOOM_FLOAT32, LOOM_SUM, half));
	CHECK(loom_comm_free(half));
	free(a);
	free(b);
	free(g);
	return 0;
}

#define EXPECT(cond, what) do { if (!(cond)) { \
	fprintf(stderr, "rank %d: FAIL %s\n", r, what); return 1; } } while (0)

/* every kind of operation, checked exactly (small integers in float64) */
static int everything(loom_comm_t *w, int r, int n, int alltoall)
{
	size_t big = 1 << 16, i;
	double *a = malloc(big * sizeof *a), *b = malloc(big * sizeof *b);
	double *ta = malloc((size_t)n * 4 * sizeof *ta), *tb = malloc((size_t)n * 4 * sizeof *tb);
	double one = r + 1, sum = 0, tok = 0;
	int32_t mx = r, got = -1;
	loom_comm_t *half = NULL, *dup = NULL;
	loom_request_t *req = NULL;
	if (!a || !b || !ta || !tb)
		return 1;
	CHECK(loom_allreduce(&one, &sum, 1, LOOM_FLOAT64, LOOM_SUM, w));
	EXPECT(sum == (double)n * (n + 1) / 2, "allreduce small");
	for (i = 0; i < big; i++)
		a[i] = (double)(r + (int)(i % 7));
	CHECK(loom_allreduce(a, b, big, LOOM_FLOAT64, LOOM_SUM, w));
	for (i = 0; i < big; i++)
		EXPECT(b[i] == (double)n * (n - 1) / 2 + (double)n * (double)(i % 7), "allreduce large");
	CHECK(loom_allreduce(&mx, &got, 1, LOOM_INT32, LOOM_MAX, w));
	EXPECT(got == n - 1, "allreduce int32 max");
	for (i = 0; i < big; i++)
		a[i] = r == n - 1 ? (double)i : -1;
	CHECK(loom_broadcast(a, b, big, LOOM_FLOAT64, n - 1, w));
	for (i = 0; i < big; i++)
		EXPECT(b[i] == (double)i, "broadcast");
	for (i = 0; i < big; i++)
		a[i] = 1;
	CHECK(loom_reduce(a, b, big, LOOM_FLOAT64, LOOM_SUM, n / 2, w));
	for (i = 0; r == n / 2 && i < big; i++)
		EXPECT(b[i] == n, "reduce");
	one = r;
	CHECK(loom_allgather(&one, ta, 1, LOOM_FLOAT64, w));
	for (i = 0; i < (size_t)n; i++)
		EXPECT(ta[i] == (double)i, "allgather");
	for (i = 0; i < (size_t)n * 4; i++)
		ta[i] = 1;
	CHECK(loom_reduce_scatter(ta, tb, 4, LOOM_FLOAT64, LOOM_SUM, w));
	for (i = 0; i < 4; i++)
		EXPECT(tb[i] == n, "reduce_scatter");
	for (i = 0; i < (size_t)n; i++)
		ta[i] = (double)r * n + (double)i;
	if (alltoall) {
		CHECK(loom_alltoall(ta, tb, 1, LOOM_FLOAT64, w));
		for (i = 0; i < (size_t)n; i++)
			EXPECT(tb[i] == (double)i * n + r, "alltoall");
	}
	CHECK(loom_barrier(w));
	one = 1;
	CHECK(loom_iallreduce(&one, &sum, 1, LOOM_FLOAT64, LOOM_SUM, w, &req));
	CHECK(loom_wait(req));
	EXPECT(sum == n, "iallreduce");
	CHECK(loom_comm_split(w, r % 2, r, &half));
	CHECK(loom_allreduce(&one, &sum, 1, LOOM_FLOAT64, LOOM_SUM, half));
	EXPECT(sum == n / 2 + (r % 2 == 0 ? n % 2 : 0), "allreduce on a split communicator");
	CHECK(loom_comm_dup(w, &dup));
	CHECK(loom_barrier(dup));
	/* a token around the ring: rank 0 starts it, each adds its rank */
	if (n > 1) {
		if (r == 0) {
			CHECK(loom_send(&tok, 1, LOOM_FLOAT64, 1, w));
			CHECK(loom_recv(&tok, 1, LOOM_FLOAT64, n - 1, w));
			EXPECT(tok == (double)n * (n - 1) / 2, "send/recv ring");
		} else {
			CHECK(loom_recv(&tok, 1, LOOM_FLOAT64, r - 1, w));
			tok += r;
			CHECK(loom_send(&tok, 1, LOOM_FLOAT64, (r + 1) % n, w));
		}
	}
	CHECK(loom_comm_free(dup));
	CHECK(loom_comm_free(half));
	free(a);
	free(b);
	free(ta);
	free(tb);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "init";
	int limit = argc > 2 ? atoi(argv[2]) : 0, r, n, code = 0, rc;
	double t0 = now(), t, tmax = 0, w0 = wall(), span[2], last[2] = { 0, 0 };
	int mine[4] = { 0, 0, 0, 0 }, most[4] = { 0, 0, 0, 0 };
	float x = 1, y = 0;
	loom_comm_t *w;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((rc = loom_init(&w))) {
		fprintf(stderr, "loom_init: %s\n", loom_strerror(rc));
		return 2;
	}
	t = now() - t0;
	span[0] = w0;
	span[1] = wall();
	r = loom_comm_rank(w);
	n = loom_comm_size(w);
	if (!strcmp(mode, "fds"))
		code = collectives(w, r, n);
	else if (!strcmp(mode, "all") || !strcmp(mode, "ops"))
		code = everything(w, r, n, !strcmp(mode, "all"));
	else if (loom_allreduce(&x, &y, 1, LOOM_FLOAT32, LOOM_SUM, w) || y != n) {
		fprintf(stderr, "rank %d: FAIL allreduce\n", r);
		code = 1;
	}
	count_fds(&mine[0], &mine[1], r == 0 && getenv("SCALE_CHECK_SHOW_FDS"));
	memory_kb(&mine[2], &mine[3]);
	/* "init max" counts a rank's wait for the others to be started (128
	 * processes on 2 cores are started over a second); the time from the
	 * last rank's loom_init call to the last rank's return is loom's own */
	if (!code && (loom_allreduce(&t, &tmax, 1, LOOM_FLOAT64, LOOM_MAX, w) ||
		      loom_allreduce(span, last, 2, LOOM_FLOAT64, LOOM_MAX, w) ||
		      loom_allreduce(mine, most, 4, LOOM_INT32, LOOM_MAX, w)))
		code = 1;
	if (!code && limit > 0 && mine[0] > limit) {
		printf("rank %d: FAIL %d descriptors open, over the limit of %d (%d sockets)\n", r,
		       mine[0], limit, mine[1]);
		code = 1;
	}
	if (!code && r == 0) {
		struct rlimit rl;
		getrlimit(RLIMIT_NOFILE, &rl);
		printf("scale: %d ranks, init max %.3f s, init after the last call %.3f s, fds max %d, "
		       "sockets max %d, nofile %llu, rss max %d kB, shm mapped max %d kB\n", n, tmax,
		       last[1] - last[0], most[0], most[1], (unsigned long long)rl.rlim_cur, most[2],
		       most[3]);
	}
	if ((rc = loom_finalize(w))) {
		fprintf(stderr, "rank %d: loom_finalize: %s\n", r, loom_strerror(rc));
		code = 1;
	}
	if (!code)
		printf("rank %d: scale-check %s passed\n", r, mode);
	return code;
}
