/* t/runtime/grow-check.c: a world that shrinks and grows again, for
 * t/t2011-runtime-grow.t and t/t7006-join-impostor.t.
 *
 *   grow-check kill VICTIMS ITER NNEW
 *       allreduces on the world; at iteration ITER the ranks of VICTIMS
 *       (comma separated world ranks) kill themselves with SIGKILL; the
 *       survivors revoke, shrink, check a sum on the shrunk communicator,
 *       then grow it by NNEW newcomers and check sums on the grown one.
 *   grow-check grow NNEW
 *       the world grows by NNEW at once, nobody lost.
 *   grow-check join
 *       a newcomer (srun ... --loom-join): loom_init gives the grown
 *       communicator; it checks the same sums.
 *
 * Lines the test reads:
 *   rank R: shrunk: rank r of n sum X want Y ok
 *   rank R: grown: rank r of n sum X want Y ok     (R: "new" for a newcomer)
 *   rank R: grown-vec: ... ok, rank R: grown-split: ... ok
 *   rank R: grow: status S                          (when the grow failed)
 *   rank 0: master port P                           (where the newcomers come)
 *   rank R: done
 * Each process exits 0 only when every check passed. */
#include "loom.h"
#include "rank-list.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char who[32];

static int fail(const char *what, int rc)
{
	printf("%s: FAIL %s: status %d (%s)\n", who, what, rc, loom_strerror(rc));
	fflush(stdout);
	return 1;
}

/* every member gives its rank + 1: the sum is n (n + 1) / 2 */
static int check_sum(loom_comm_t *c, const char *what)
{
	int64_t n = loom_comm_size(c), mine = loom_comm_rank(c) + 1, sum = -1, want = n * (n + 1) / 2;
	int rc = loom_allreduce(&mine, &sum, 1, LOOM_INT64, LOOM_SUM, c);
	if (rc)
		return fail(what, rc);
	printf("%s: %s: rank %d of %d sum %lld want %lld %s\n", who, what, loom_comm_rank(c), (int)n,
	       (long long)sum, (long long)want, sum == want ? "ok" : "WRONG");
	return sum != want;
}

/* a vector large enough to leave the fast boxes */
static int check_vec(loom_comm_t *c)
{
	size_t k, n = 1 << 18, bad = 0;
	float *v = malloc(n * sizeof *v), want;
	int s = loom_comm_size(c), rc;
	if (!v)
		return 1;
	for (k = 0; k < n; k++)
		v[k] = (float)(loom_comm_rank(c) + 1) + (float)(k % 7);
	rc = loom_allreduce(v, v, n, LOOM_FLOAT32, LOOM_SUM, c);
	for (k = 0; rc == LOOM_SUCCESS && k < n; k++) {
		want = (float)(s * (s + 1) / 2) + (float)s * (float)(k % 7);
		bad += v[k] != want;
	}
	free(v);
	if (rc)
		return fail("grown-vec", rc);
	printf("%s: grown-vec: %zu floats, %zu wrong %s\n", who, n, bad, bad ? "WRONG" : "ok");
	return bad != 0;
}

/* the grown communicator: sums, a vector, a split; then a barrier so
 * nobody leaves while another still checks */
static int use_grown(loom_comm_t *g)
{
	loom_comm_t *half = NULL;
	int bad = check_sum(g, "grown") | check_vec(g), rc;
	rc = loom_comm_split(g, loom_comm_rank(g) % 2, 0, &half);
	if (rc)
		return fail("split", rc);
	bad |= check_sum(half, "grown-split");
	loom_comm_free(half);
	rc = loom_barrier(g);
	if (rc)
		return fail("the last barrier", rc);
	return bad;
}

static int survivor(loom_comm_t *w, const char *mode, const char *victims, int iter, int nnew)
{
	loom_comm_t *s = w, *g = NULL;
	int i, rc = LOOM_SUCCESS, bad = 0;
	for (i = 0; !strcmp(mode, "kill") && i < 100000 && rc == LOOM_SUCCESS; i++) {
		int64_t x = 1, y = 0;
		if (i == iter && in_list(victims, loom_comm_rank(w))) {
			printf("%s: dying\n", who);
			fflush(stdout);
			kill(getpid(), SIGKILL);
		}
		rc = loom_allreduce(&x, &y, 1, LOOM_INT64, LOOM_SUM, w);
	}
	if (!strcmp(mode, "kill")) {
		printf("%s: iter %d: status %d\n", who, i - 1, rc);
		loom_comm_revoke(w);
		if ((rc = loom_comm_shrink(w, &s)))
			return fail("shrink", rc);
		bad |= check_sum(s, "shrunk");
	}
	rc = loom_comm_grow(s, nnew, &g);
	if (rc) {
		printf("%s: grow: status %d\n", who, rc);
		return 1;
	}
	bad |= use_grown(g);
	loom_comm_free(g);
	if (s != w)
		loom_comm_free(s);
	return bad;
}

int main(int argc, char **argv)
{
	loom_comm_t *w;
	const char *mode = argc > 1 ? argv[1] : "";
	int bad;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "kill") && strcmp(mode, "grow") && strcmp(mode, "join")) {
		fprintf(stderr, "usage: grow-check kill VICTIMS ITER NNEW | grow NNEW | join\n");
		return 2;
	}
	if (loom_init(&w)) {
		printf("%s: init failed\n", !strcmp(mode, "join") ? "new" : "rank ?");
		return 2;
	}
	if (!strcmp(mode, "join"))
		snprintf(who, sizeof who, "new %d", loom_comm_rank(w));
	else
		snprintf(who, sizeof who, "rank %d", loom_comm_rank(w));
	if (strcmp(mode, "join") && loom_comm_rank(w) == 0)
		printf("%s: master port %s\n", who, getenv("MASTER_PORT") ? getenv("MASTER_PORT") : "unset");
	if (!strcmp(mode, "join"))
		bad = use_grown(w);
	else if (!strcmp(mode, "grow"))
		bad = survivor(w, mode, "", 0, argc > 2 ? atoi(argv[2]) : 1);
	else
		bad = survivor(w, mode, argc > 2 ? argv[2] : "", argc > 3 ? atoi(argv[3]) : 1,
			       argc > 4 ? atoi(argv[4]) : 1);
	printf("%s: %s\n", who, bad ? "FAILED" : "done");
	fflush(stdout);
	loom_finalize(w);
	return bad;
}
