/* t/security/victim.c: the job under attack in t/t7000 (and, run as
 * another user, the impostor).
 *
 *   victim --hold DIR   rank 0 writes DIR/rank0 ("pid PID port PORT") and
 *                       joins at once; every other rank waits for DIR/go
 *                       before loom_init, so the test can attack while the
 *                       world is still forming. Then one allreduce, checked.
 *   victim --linger DIR after the allreduce, every rank waits for DIR/end
 *                       before loom_finalize: what the test's attacker
 *                       sees closing is a refusal, never a rank gone.
 *   victim --impostor   loom_init is expected to fail: prints why, exits 3
 *                       if it failed (the defence held), 0 if it joined.
 */
#include <loom.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int env_rank(void)
{
	const char *v = getenv("RANK");
	if (!v)
		v = getenv("SLURM_PROCID");
	return v ? atoi(v) : 0;
}

static int wait_for(const char *path, double secs)
{
	double until = now() + secs;
	while (access(path, F_OK) != 0) {
		if (now() > until)
			return -1;
		usleep(20000);
	}
	return 0;
}

int main(int argc, char **argv)
{
	enum { N = 1024 };
	static float x[N], y[N];
	loom_comm_t *w = NULL;
	const char *dir = NULL, *linger = NULL;
	int impostor = 0, r = env_rank(), rc, me, n, i, bad = 0;
	double t0;
	char path[512];
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--hold") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--linger") && i + 1 < argc)
			linger = argv[++i];
		else if (!strcmp(argv[i], "--impostor"))
			impostor = 1;
	}
	if (dir && r == 0) {
		/* written whole, then renamed: the test never reads half a line */
		char tmp[512];
		FILE *f;
		snprintf(tmp, sizeof tmp, "%s/rank0.tmp", dir);
		snprintf(path, sizeof path, "%s/rank0", dir);
		f = fopen(tmp, "w");
		if (!f)
			return 2;
		fprintf(f, "pid %d port %s\n", (int)getpid(), getenv("MASTER_PORT") ? getenv("MASTER_PORT") : "-");
		if (fclose(f) || rename(tmp, path))
			return 2;
	} else if (dir) {
		snprintf(path, sizeof path, "%s/go", dir);
		if (wait_for(path, 120)) {
			fprintf(stderr, "victim: rank %d: no %s within 120 s\n", r, path);
			return 2;
		}
	}
	t0 = now();
	rc = loom_init(&w);
	if (impostor) {
		printf("impostor: loom_init: %s\n", rc ? loom_strerror(rc) : "joined the job");
		if (!rc)
			loom_finalize(w);
		return rc ? 3 : 0;
	}
	if (rc) {
		fprintf(stderr, "victim: rank %d: loom_init: %s\n", r, loom_strerror(rc));
		return 1;
	}
	printf("rank %d: loom_init took %.3f s\n", r, now() - t0);
	me = loom_comm_rank(w);
	n = loom_comm_size(w);
	for (i = 0; i < N; i++)
		x[i] = (float)((me + 1) * (i % 7));
	rc = loom_allreduce(x, y, N, LOOM_FLOAT32, LOOM_SUM, w);
	for (i = 0; i < N && !rc; i++)
		if (y[i] != (float)(n * (n + 1) / 2 * (i % 7)))
			bad++;
	if (!rc && !bad)
		printf("rank %d: allreduce right (%d ranks)\n", me, n);
	else
		printf("rank %d: allreduce WRONG: %s, %d wrong\n", me, loom_strerror(rc), bad);
	fflush(stdout);
	if (linger) {
		snprintf(path, sizeof path, "%s/end", linger);
		if (wait_for(path, 120))
			fprintf(stderr, "victim: rank %d: no %s within 120 s\n", r, path);
	}
	loom_finalize(w);
	return rc || bad;
}
