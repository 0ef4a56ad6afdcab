/* t/runtime/ft-check.c: surviving lost ranks, for t/t2010-runtime-shrink.t,
 * t/t2012-runtime-heartbeat.t and t/t2013-runtime-kill-paths.t.
 *
 *   ft-check kill VICTIMS ITER [LATE [LATE_SHRINK]]
 *       allreduces on the world; at iteration ITER the ranks of VICTIMS
 *       (comma separated world ranks) kill themselves with SIGKILL. Every
 *       survivor prints the status it saw, revokes the world, agrees,
 *       shrinks, and checks an allreduce and a split's allreduce on the
 *       new communicator. LATE (a world rank, or -): it kills itself as
 *       the others enter the agreement, a second failure; LATE_SHRINK: it
 *       kills itself after the agreement, as the others shrink.
 *   ft-check inside VICTIMS ITER BYTES
 *       the same with allreduces of BYTES (int64 elements, each checked);
 *       at ITER each victim starts a thread that kills the process 0 to
 *       3 ms after it entered the collective: the kill falls inside the
 *       path BYTES and the LOOM_* settings choose (docs/algorithms.md).
 *   ft-check stop VICTIMS ITER DIR
 *       the same, but the victims stop themselves (SIGSTOP) at ITER,
 *       their pids in DIR/pid.R: the survivors see them lost by the
 *       heartbeat (LOOM_HEARTBEAT), agree and shrink; rank 0 of the
 *       shrunk world then makes DIR/shrunk (the test sends SIGCONT), and
 *       every survivor waits for DIR/fenced.V of each victim before it
 *       checks the sums again ("after") and goes on. A victim that comes
 *       back prints what its operations return (they must fail) and makes
 *       DIR/fenced.R. A survivor whose agree fails makes DIR/gaveup.
 *   ft-check revoke WHO ITER
 *       rank WHO revokes the world at iteration ITER instead of joining
 *       its allreduce: the others see LOOM_ERR_REVOKED; then the same.
 *
 * Lines the test reads:
 *   rank R: iter I: status S        the failure a survivor saw
 *   rank R: agree: flag F failed A,B   (the same on every survivor)
 *   rank R: shrunk: rank r of n sum X want Y ok
 *   rank R: split: sum X want Y ok
 *   rank R: dup: ... ok, rank R: mesh-dp: ... ok   the same after their shrink
 *   rank R: fenced: OP status S      (stop: a victim after SIGCONT)
 *   rank R: done
 * Every survivor exits 0 only when each check passed; no finalize: the
 * world holds dead ranks. */
#include "loom.h"
#include "rank-list.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int R, N;
static const char *LATE_SHRINK;   /* kill mode: a rank that dies as the others shrink */
static const char *STOPDIR, *VICTIMS;   /* stop mode: the test's directory, who stops */
/* made before the failure: a dup of the world and the mesh's
 * data-parallel group (tp = 2: one member a node), shrunk after it */
static loom_comm_t *D;
static loom_mesh_t M;

static void die(void)
{
	printf("rank %d: dying\n", R);
	fflush(stdout);
	kill(getpid(), SIGKILL);
}

static int fail(const char *what, int rc)
{
	printf("rank %d: FAIL %s: status %d (%s)\n", R, what, rc, loom_strerror(rc));
	fflush(stdout);
	return 1;
}

/* sum of (world rank + 1) over the world ranks of members, from an
 * allgather of them on comm, and this member's check of the allreduce */
static int check_sum(loom_comm_t *comm, const char *what)
{
	int n = loom_comm_size(comm), i, rc;
	int64_t mine = R + 1, sum = -1, want = 0, *all = calloc((size_t)n, sizeof *all);
	if (!all)
		return 1;
	rc = loom_allgather(&mine, all, 1, LOOM_INT64, comm);
	if (rc)
		return fail(what, rc);
	for (i = 0; i < n; i++)
		want += all[i];
	free(all);
	rc = loom_allreduce(&mine, &sum, 1, LOOM_INT64, LOOM_SUM, comm);
	if (rc)
		return fail(what, rc);
	printf("rank %d: %s: rank %d of %d sum %lld want %lld %s\n", R, what, loom_comm_rank(comm), n,
	       (long long)sum, (long long)want, sum == want ? "ok" : "WRONG");
	return sum != want;
}

/* stop mode: DIR/NAME made (empty) */
static void mark(const char *name)
{
	char p[4096];
	int fd;
	snprintf(p, sizeof p, "%s/%s", STOPDIR, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		close(fd);
}

/* stop mode: wait (at most 300 s) until DIR/fenced.V exists for every
 * victim V; 1 if one never came */
static int wait_fenced(const char *victims)
{
	char p[4096];
	int v;
	for (v = 0; v < N; v++) {
		int k;
		if (!in_list(victims, v))
			continue;
		snprintf(p, sizeof p, "%s/fenced.%d", STOPDIR, v);
		for (k = 0; k < 3000 && access(p, F_OK); k++)
			usleep(100000);
		if (access(p, F_OK)) {
			printf("rank %d: FAIL rank %d never said it was fenced\n", R, v);
			return 1;
		}
	}
	return 0;
}

/* stop mode, a victim that came back: everything it tries must fail */
static int fenced(loom_comm_t *w)
{
	int flag = 1, rc, bad = 0;
	int64_t x = 1, y = 0;
	loom_comm_t *s = NULL;
	rc = loom_comm_agree(w, &flag);
	printf("rank %d: fenced: agree status %d\n", R, rc);
	bad |= rc == LOOM_SUCCESS;
	rc = loom_comm_shrink(w, &s);
	printf("rank %d: fenced: shrink status %d\n", R, rc);
	bad |= rc == LOOM_SUCCESS;
	rc = loom_allreduce(&x, &y, 1, LOOM_INT64, LOOM_SUM, w);
	printf("rank %d: fenced: allreduce status %d\n", R, rc);
	bad |= rc == LOOM_SUCCESS;
	rc = loom_allreduce(&x, &y, 1, LOOM_INT64, LOOM_SUM, D);
	printf("rank %d: fenced: dup allreduce status %d\n", R, rc);
	bad |= rc == LOOM_SUCCESS;
	fflush(stdout);
	{
		char name[32];
		snprintf(name, sizeof name, "fenced.%d", R);
		mark(name);
	}
	return bad;
}

/* after the failure: revoke, agree, shrink, and use the new communicator */
static int recover(loom_comm_t *w, const char *late)
{
	int flag = 1, rc, f[64], nf, i, bad = 0;
	loom_comm_t *s = NULL, *half = NULL, *sw;
	char list[512] = "";
	rc = loom_comm_revoke(w);
	if (rc)
		return fail("revoke", rc);
	if (late && atoi(late) == R) {
		usleep(50000);   /* the others are in the agreement by now */
		die();
	}
	rc = loom_comm_agree(w, &flag);
	if (rc && STOPDIR)
		mark("gaveup");   /* stop mode without the heartbeat: the test sends SIGCONT */
	if (rc)
		return fail("agree", rc);
	rc = loom_comm_failed(w, f, 64, &nf);
	if (rc)
		return fail("failed", rc);
	for (i = 0; i < nf && i < 64; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", f[i]);
	printf("rank %d: agree: flag %d failed %s\n", R, flag, nf ? list : "none");
	if (LATE_SHRINK && atoi(LATE_SHRINK) == R) {
		usleep(50000);   /* the others are in the shrink's agreement by now */
		die();
	}
	rc = loom_comm_shrink(w, &s);
	if (rc)
		return fail("shrink", rc);
	bad |= check_sum(s, "shrunk");
	if (STOPDIR) {   /* the stopped ranks come back; the sums stay right */
		if (loom_comm_rank(s) == 0)
			mark("shrunk");
		bad |= wait_fenced(VICTIMS);
		bad |= check_sum(s, "after");
	}
	rc = loom_comm_split(s, loom_comm_rank(s) % 2, 0, &half);
	if (rc)
		return fail("split", rc);
	bad |= check_sum(half, "split");
	loom_comm_free(half);
	sw = s;
	rc = loom_comm_shrink(D, &s);
	if (rc)
		return fail("shrink dup", rc);
	bad |= check_sum(s, "dup");
	loom_comm_free(s);
	rc = loom_comm_shrink(M.dp, &s);
	if (rc)
		return fail("shrink mesh dp", rc);
	bad |= check_sum(s, "mesh-dp");
	loom_comm_free(s);
	/* nobody leaves while a survivor is still in one of the checks
	 * above: a rank's exit closes its connections, which its peers
	 * would see as a lost rank */
	rc = loom_barrier(sw);
	if (rc)
		return fail("the last barrier", rc);
	loom_comm_free(sw);
	return bad;
}

/* stop mode: a victim writes its pid and stops itself */
static void stop_self(void)
{
	char name[4096];
	FILE *f;
	snprintf(name, sizeof name, "%s/pid.%d", STOPDIR, R);
	if ((f = fopen(name, "w"))) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	printf("rank %d: stopping\n", R);
	fflush(stdout);
	kill(getpid(), SIGSTOP);
}

/* inside mode: a victim dies 0 to 3 ms after it entered the collective */
static void *killer(void *arg)
{
	(void)arg;
	usleep((useconds_t)(rand() % 3000));
	kill(getpid(), SIGKILL);
	return NULL;
}

/* the allreduces of the loop, COUNT elements each, until one fails; a
 * victim does what its mode says at ITER. Returns the failure's status
 * (printed), *stopped set for a victim of stop mode that came back */
static int loop(loom_comm_t *w, const char *mode, const char *who, int iter, size_t count,
		int *stopped)
{
	int64_t *x = malloc(count * sizeof *x), *y = malloc(count * sizeof *y);
	int i, rc = LOOM_SUCCESS;
	size_t k;
	pthread_t t;
	if (!x || !y)
		return LOOM_ERR_NOMEM;
	for (k = 0; k < count; k++)
		x[k] = 1;
	for (i = 0; i < 100000 && rc == LOOM_SUCCESS; i++) {
		int me = in_list(who, R);
		if (i == iter && me && !strcmp(mode, "kill"))
			die();
		if (i == iter && me && !strcmp(mode, "inside")) {
			printf("rank %d: dying inside iteration %d\n", R, i);
			fflush(stdout);
			srand((unsigned)getpid());
			pthread_create(&t, NULL, killer, NULL);
		}
		if (i == iter && me && !strcmp(mode, "stop")) {
			stop_self();
			*stopped = 1;
		}
		if (i == iter && !strcmp(mode, "revoke") && atoi(who) == R) {
			usleep(100000);   /* the others wait in their allreduce */
			rc = loom_comm_revoke(w);
			printf("rank %d: revoked: %d\n", R, rc);
			rc = LOOM_ERR_REVOKED;
			break;
		}
		rc = loom_allreduce(x, y, count, LOOM_INT64, LOOM_SUM, w);
		if (i == iter && me && !strcmp(mode, "inside"))
			for (;;)
				pause();   /* its killer comes: a victim takes no part in what follows */
		for (k = 0; rc == LOOM_SUCCESS && k < count; k++)
			if (y[k] != N) {
				printf("rank %d: iter %d: WRONG sum %lld want %d at %zu\n", R, i,
				       (long long)y[k], N, k);
				exit(1);
			}
	}
	if (!strcmp(mode, "inside") && in_list(who, R)) {
		/* a node-mate's kill failed an earlier iteration here (the
		 * ranks are not in step): this one dies with its node now */
		printf("rank %d: dying inside iteration %d\n", R, i - 1);
		die();
	}
	printf("rank %d: iter %d: status %d\n", R, i - 1, rc);
	free(x);
	free(y);
	return rc;
}

int main(int argc, char **argv)
{
	loom_comm_t *w;
	const char *mode = argc > 1 ? argv[1] : "";
	const char *who = argc > 2 ? argv[2] : "";
	const char *late = NULL;
	int iter = argc > 3 ? atoi(argv[3]) : 0, bad, stopped = 0;
	size_t count = 1;
	if (loom_init(&w))
		return 2;
	R = loom_comm_rank(w);
	N = loom_comm_size(w);
	if (!strcmp(mode, "stop"))
		STOPDIR = argc > 4 ? argv[4] : ".", VICTIMS = who;
	if (!strcmp(mode, "inside"))
		count = argc > 4 ? (size_t)atol(argv[4]) / sizeof(int64_t) : 1;
	if (!strcmp(mode, "kill") && argc > 4 && strcmp(argv[4], "-"))
		late = argv[4];
	if (!strcmp(mode, "kill") && argc > 5)
		LATE_SHRINK = argv[5];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (loom_comm_dup(w, &D) || N % 2 || loom_mesh(w, N / 2, 2, 1, &M))
		return 2;
	loop(w, mode, who, iter, count ? count : 1, &stopped);
	if (stopped) {
		bad = fenced(w);
		printf("rank %d: %s\n", R, bad ? "FAILED" : "fenced done");
		fflush(stdout);
		loom_finalize(w);
		return bad;
	}
	bad = recover(w, late);
	printf("rank %d: %s\n", R, bad ? "FAILED" : "done");
	fflush(stdout);
	/* an orderly leave: the engine says goodbye, so a peer still
	 * finishing the last barrier does not take this exit for a loss */
	loom_finalize(w);
	return bad;
}
