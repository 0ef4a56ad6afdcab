/* t/runtime/flight-slow.c: a job with a straggler, for loom-doctor --slow
 * (t/t2103-flight-slow.t).
 *   flight-slow ITERS WHO MS FIRST DIR
 * ITERS allreduces on the world (and no other collective: allreduce #k is
 * iteration k); before each every rank sleeps 2 ms (its "work"), rank WHO
 * MS ms more in iterations 1..FIRST (WHO -1: nobody). DIR (every rank
 * sees it) gets pid.RANK (the rank's pid, for a test that stops it) after
 * loom_init and done.RANK after the last allreduce; with
 * FLIGHT_SLOW_HOLD=1 each rank then waits for DIR/go before it finalizes,
 * so the job is still running when the test looks at it. */
#include <loom.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void nap(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts))
		;
}

static void marker(const char *dir, const char *tag, int rank, long val)
{
	char p[1024];
	FILE *f;
	snprintf(p, sizeof p, "%s/%s.%d", dir, tag, rank);
	if ((f = fopen(p, "w"))) {
		fprintf(f, "%ld\n", val);
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	loom_comm_t *w;
	const char *dir, *hold = getenv("FLIGHT_SLOW_HOLD");
	char go[1024];
	int32_t x = 1, y;
	int iters, who, first, r, i, rc;
	double ms;
	if (argc != 6) {
		fprintf(stderr, "usage: flight-slow ITERS WHO MS FIRST DIR\n");
		return 2;
	}
	iters = atoi(argv[1]);
	who = atoi(argv[2]);
	ms = atof(argv[3]);
	first = atoi(argv[4]);
	dir = argv[5];
	if ((rc = loom_init(&w))) {
		printf("FAIL loom_init: %s\n", loom_strerror(rc));
		return 1;
	}
	r = loom_comm_rank(w);
	marker(dir, "pid", r, (long)getpid());
	for (i = 1; i <= iters; i++) {
		nap(0.002 + (r == who && i <= first ? ms * 1e-3 : 0));
		if ((rc = loom_allreduce(&x, &y, 1, LOOM_INT32, LOOM_SUM, w))) {
			printf("FAIL allreduce %d: %s\n", i, loom_strerror(rc));
			return 1;
		}
	}
	marker(dir, "done", r, 1);
	snprintf(go, sizeof go, "%s/go", dir);
	while (hold && *hold == '1' && access(go, F_OK))
		nap(0.05);
	printf("rank %d: %d allreduces done\n", r, iters);
	loom_finalize(w);
	return 0;
}
