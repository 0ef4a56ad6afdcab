/* t/runtime/ft-check.c: surviving lost ranks, for t/t2010-runtime-shrink.t.
 *
 *   ft-check kill VICTIMS ITER [LATE]
 *       allreduces on the world; at iteration ITER the ranks of VICTIMS
 *       (comma separated world ranks) kill themselves with SIGKILL. Every
 *       survivor prints the status it saw, revokes the world, agrees,
 *       shrinks, and checks an allreduce and a split's allreduce on the
 *       new communicator. LATE (a world rank): it kills itself as the
 *       others enter the agreement, a second failure.
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
 *   rank R: done
 * Every survivor exits 0 only when each check passed; no finalize: the
 * world holds dead ranks. */
#include "loom.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int R, N;
/* made before the failure: a dup of the world and the mesh's
 * data-parallel group (tp = 2: one member a node), shrunk after it */
static loom_comm_t *D;
static loom_mesh_t M;

static int in_list(const char *list, int r)
{
	const char *p = list;
	while (p && *p) {
		if (atoi(p) == r)
			return 1;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return 0;
}

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
	if (rc)
		return fail("agree", rc);
	rc = loom_comm_failed(w, f, 64, &nf);
	if (rc)
		return fail("failed", rc);
	for (i = 0; i < nf && i < 64; i++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", f[i]);
	printf("rank %d: agree: flag %d failed %s\n", R, flag, nf ? list : "none");
	rc = loom_comm_shrink(w, &s);
	if (rc)
		return fail("shrink", rc);
	bad |= check_sum(s, "shrunk");
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

int main(int argc, char **argv)
{
	loom_comm_t *w;
	const char *mode = argc > 1 ? argv[1] : "";
	const char *who = argc > 2 ? argv[2] : "";
	int iter = argc > 3 ? atoi(argv[3]) : 0, i, rc = LOOM_SUCCESS, bad;
	if (loom_init(&w))
		return 2;
	R = loom_comm_rank(w);
	N = loom_comm_size(w);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (loom_comm_dup(w, &D) || N % 2 || loom_mesh(w, N / 2, 2, 1, &M))
		return 2;
	for (i = 0; i < 100000 && rc == LOOM_SUCCESS; i++) {
		int64_t x = 1, y = 0;
		if (i == iter && !strcmp(mode, "kill") && in_list(who, R))
			die();
		if (i == iter && !strcmp(mode, "revoke") && atoi(who) == R) {
			usleep(100000);   /* the others wait in their allreduce */
			rc = loom_comm_revoke(w);
			printf("rank %d: revoked: %d\n", R, rc);
			rc = LOOM_ERR_REVOKED;
			break;
		}
		rc = loom_allreduce(&x, &y, 1, LOOM_INT64, LOOM_SUM, w);
		if (rc == LOOM_SUCCESS && y != N) {
			printf("rank %d: iter %d: sum %lld want %d\n", R, i, (long long)y, N);
			return 1;
		}
	}
	printf("rank %d: iter %d: status %d\n", R, i - 1, rc);
	bad = recover(w, !strcmp(mode, "kill") && argc > 4 ? argv[4] : NULL);
	printf("rank %d: %s\n", R, bad ? "FAILED" : "done");
	fflush(stdout);
	/* an orderly leave: the engine says goodbye, so a peer still
	 * finishing the last barrier does not take this exit for a loss */
	loom_finalize(w);
	return bad;
}
