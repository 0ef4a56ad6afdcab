/* examples/hello.c: loom's first run. Each rank reports what loom.so gave
 * it and how libloom formed the world (one line per rank, printed by rank
 * 0 in rank order), then an allreduce is checked against its expected
 * value and timed, and, when LOOM_CKPT_DIR is set, a checkpoint is saved
 * and restored. Ends with one PASS line (exit 0) or FAIL (exit 1).
 * Run: srun -N2 -n4 loom-hello   (or srun --mpi=pmix ...) */
#define _GNU_SOURCE
#include <loom.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LINE 256                 /* bytes of one rank's report line */
#define COUNT (1u << 20)         /* float32 elements of the checked allreduce */

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v && *v ? v : dflt;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* append to buf[len] what fmt says, truncating at the end of the buffer */
static void add(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;
	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
}

/* the CPUs this task may run on, as ranges: "0-3,8" */
static void cpu_list(char *buf, size_t len)
{
	cpu_set_t set;
	int c, start = -1;
	buf[0] = 0;
	if (sched_getaffinity(0, sizeof set, &set)) {
		snprintf(buf, len, "?");
		return;
	}
	for (c = 0; c <= CPU_SETSIZE; c++) {
		int in = c < CPU_SETSIZE && CPU_ISSET(c, &set);
		if (in && start < 0)
			start = c;
		if (!in && start >= 0) {
			add(buf, len, buf[0] ? ",%d" : "%d", start);
			if (c - 1 > start)
				add(buf, len, "-%d", c - 1);
			start = -1;
		}
	}
}

/* peers by transport: "shm:1 tcp:2" (self not counted) */
static void transports(loom_comm_t *w, char *buf, size_t len)
{
	static const char *names[] = { "shm", "tcp", "mpi", "nccl" };
	int counts[4] = { 0 }, p, i, other = 0;
	buf[0] = 0;
	for (p = 0; p < loom_comm_size(w); p++) {
		const char *t = loom_comm_peer_transport(w, p);
		if (!t || !strcmp(t, "self"))
			continue;
		for (i = 0; i < 4 && strcmp(t, names[i]); i++)
			;
		if (i < 4)
			counts[i]++;
		else
			other++;
	}
	for (i = 0; i < 4; i++)
		if (counts[i])
			add(buf, len, "%s%s:%d", buf[0] ? " " : "", names[i], counts[i]);
	if (other)
		add(buf, len, "%s?:%d", buf[0] ? " " : "", other);
	if (!buf[0])
		snprintf(buf, len, "none");
}

static int fail(loom_comm_t *w, const char *what, int rc)
{
	fprintf(stderr, "loom-hello: rank %d: %s: %s\n", w ? loom_comm_rank(w) : -1, what,
		loom_strerror(rc));
	return 1;
}

/* save this rank's block of a vector as step 1, scribble over it, restore
 * it; 0 when the restored step and data are right */
static int ckpt_round_trip(loom_comm_t *w, double *secs)
{
	int rank = loom_comm_rank(w), size = loom_comm_size(w), rc, bad = 0;
	size_t n = 4096, gshape = n * (size_t)size, off = n * (size_t)rank, i;
	long long step = -1;
	float *v = malloc(n * sizeof *v);
	loom_ckpt_t *ck = NULL;
	double t0 = now_s();
	if (!v)
		return fail(w, "checkpoint buffer", LOOM_ERR_NOMEM);
	for (i = 0; i < n; i++)
		v[i] = (float)(off + i);
	if ((rc = loom_ckpt_open(w, NULL, &ck)) ||
	    (rc = loom_ckpt_tensor(ck, "hello", LOOM_FLOAT32, 1, &gshape, &off, &n, v)) ||
	    (rc = loom_ckpt_save(ck, 1))) {
		free(v);
		if (ck)
			loom_ckpt_close(ck);
		return fail(w, "checkpoint save", rc);
	}
	memset(v, 0xff, n * sizeof *v);
	rc = loom_ckpt_restore(ck, &step);
	for (i = 0; !rc && i < n; i++)
		bad += v[i] != (float)(off + i);
	*secs = now_s() - t0;
	loom_ckpt_close(ck);
	free(v);
	if (rc)
		return fail(w, "checkpoint restore", rc);
	if (step != 1 || bad) {
		fprintf(stderr, "loom-hello: rank %d: restored step %lld (expected 1), %d wrong values\n",
			rank, step, bad);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	loom_comm_t *w;
	char line[LINE], cpus[96], tr[64], *all = NULL;
	float *x;
	int rc, rank, size, wrong = 0, ok, ckpt = getenv("LOOM_CKPT_DIR") != NULL;
	int verdict[2] = { 0, 0 };      /* wrong elements, checkpoint failed */
	double t0, t_ar, t_ck = 0;
	size_t i;

	if (argc > 1) {
		printf("Usage: loom-hello\nReport what loom.so gave each task and how libloom formed\n"
		       "the world, check an allreduce, and (with LOOM_CKPT_DIR) a checkpoint\n"
		       "round trip. Prints PASS and exits 0, or FAIL and exits 1.\n"
		       "Example: srun -N2 -n4 loom-hello\n");
		return strcmp(argv[1], "--help") ? 2 : 0;
	}
	if ((rc = loom_init(&w)))
		return fail(NULL, "loom_init", rc);
	rank = loom_comm_rank(w);
	size = loom_comm_size(w);

	cpu_list(cpus, sizeof cpus);
	transports(w, tr, sizeof tr);
	snprintf(line, sizeof line,
		 "rank %d/%d local %d/%d node %s cpus %s gpus %s nic %s master %s:%s | world %s via %s, peers %s",
		 rank, size, loom_comm_local_rank(w), loom_comm_local_size(w),
		 env_or("SLURMD_NODENAME", "?"), cpus, env_or("CUDA_VISIBLE_DEVICES", "-"),
		 env_or("NCCL_IB_HCA", "-"), env_or("MASTER_ADDR", "-"), env_or("MASTER_PORT", "-"),
		 loom_comm_backend(w), loom_comm_bootstrap(w), tr);
	if (rank == 0 && !(all = malloc((size_t)size * LINE)))
		return fail(w, "report buffer", LOOM_ERR_NOMEM);
	/* every rank's line to rank 0 (an allgather would send them everywhere) */
	if (rank == 0) {
		memcpy(all, line, LINE);
		for (int p = 1; p < size; p++)
			if ((rc = loom_recv(all + (size_t)p * LINE, LINE, LOOM_INT8, p, w)))
				return fail(w, "gather reports", rc);
		printf("loom %s (plugin %s, env %s): %d ranks\n", loom_version(),
		       env_or("LOOM_PLUGIN_VERSION", "not loaded"), env_or("LOOM_ENV_MODE", "-"), size);
		for (int p = 0; p < size; p++)
			printf("  %.*s\n", LINE, all + (size_t)p * LINE);
		free(all);
	} else if ((rc = loom_send(line, LINE, LOOM_INT8, 0, w))) {
		return fail(w, "send report", rc);
	}

	/* x[i] = rank + 1 + i % 7: the sum is size*(size+1)/2 + size*(i % 7),
	 * exact in float32 for any world below 2^11 ranks */
	if (!(x = malloc(COUNT * sizeof *x)))
		return fail(w, "allreduce buffer", LOOM_ERR_NOMEM);
	for (i = 0; i < COUNT; i++)
		x[i] = (float)(rank + 1 + (int)(i % 7));
	loom_barrier(w);
	t0 = now_s();
	rc = loom_allreduce(x, x, COUNT, LOOM_FLOAT32, LOOM_SUM, w);
	t_ar = now_s() - t0;
	if (rc)
		return fail(w, "allreduce", rc);
	for (i = 0; i < COUNT; i++)
		wrong += x[i] != (float)(size * (size + 1) / 2 + size * (int)(i % 7));
	free(x);

	verdict[0] = wrong;
	verdict[1] = ckpt && ckpt_round_trip(w, &t_ck);
	/* the verdict is the same on every rank: the worst of any, each part
	 * said for what it is (a failed checkpoint is not a wrong allreduce) */
	if ((rc = loom_allreduce(verdict, verdict, 2, LOOM_INT32, LOOM_MAX, w)))
		return fail(w, "verdict", rc);
	ok = verdict[0] == 0 && verdict[1] == 0;
	if (rank == 0) {
		printf("allreduce: %u float32 over %d ranks in %.3f ms: %s\n", COUNT, size,
		       t_ar * 1e3, verdict[0] ? "WRONG" : "every element as expected");
		if (ckpt && verdict[1])
			printf("checkpoint: FAILED in %s (the ranks' errors above say why)\n",
			       getenv("LOOM_CKPT_DIR"));
		else if (ckpt)
			printf("checkpoint: saved and restored step 1 in %s in %.3f s\n",
			       getenv("LOOM_CKPT_DIR"), t_ck);
		else
			printf("checkpoint: skipped (LOOM_CKPT_DIR unset; srun --loom-ckpt=DIR sets it)\n");
		printf("%s: loom-hello, %d ranks\n", ok ? "PASS" : "FAIL", size);
	}
	if ((rc = loom_finalize(w)))
		return fail(NULL, "loom_finalize", rc);
	return ok ? 0 : 1;
}
