/* runtime/dp/test/dp_step.c: loom_dp steps in a world of size 1: the averaged
 * gradient of one rank is the gradient itself (exactly in fp32, rounded to
 * bfloat16 on the bf16 wire, within half a bf16 ulp, 2^-8 relative), ready/finish rules,
 * several steps, statistics, and the bf16 rounding itself. */
#include "config.h"
#include "loom.h"
#include "../../../t/tap.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define N1 1000
#define N2 37
#define N3 4096

static float a[N1], b[N2], c[N3];
static float a0[N1], b0[N2], c0[N3];

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s;
}

static void fill(uint32_t seed)
{
	for (int i = 0; i < N1; i++)
		a0[i] = a[i] = ((float)(lcg(&seed) >> 8) / 16777216.0f - 0.5f) * 8.0f;
	for (int i = 0; i < N2; i++)
		b0[i] = b[i] = ((float)(lcg(&seed) >> 8) / 16777216.0f) * 1e-3f;
	for (int i = 0; i < N3; i++)
		c0[i] = c[i] = ((float)(lcg(&seed) >> 8) / 16777216.0f - 0.5f) * 1e4f;
}

/* after finish: exact (fp32) or == bf16(in), so |out - in| <= 2^-8 |in| */
static int check(int bf16, double *worst)
{
	const float *in[] = { a0, b0, c0 }, *out[] = { a, b, c };
	const int n[] = { N1, N2, N3 };
	int good = 1;
	*worst = 0;
	for (int t = 0; t < 3; t++)
		for (int i = 0; i < n[t]; i++) {
			float want = bf16 ? loom_dp_bf16_round(in[t][i]) : in[t][i];
			double rel = in[t][i] ? fabs((double)out[t][i] - in[t][i]) / fabs(in[t][i]) : 0;
			if (rel > *worst)
				*worst = rel;
			if (memcmp(&want, &out[t][i], 4) != 0)
				good = 0;
		}
	return good;
}

static void one_mode(loom_comm_t *w, unsigned flags, const char *name)
{
	loom_dp_t *dp;
	int ia, ib, ic, bf16 = !!(flags & LOOM_DP_BF16_WIRE);
	double worst;
	loom_dp_stats_t st;

	is_int(loom_dp_create(w, 4096, flags, &dp), LOOM_SUCCESS, "%s: create", name);
	loom_dp_add(dp, a, N1, &ia);
	loom_dp_add(dp, b, N2, &ib);
	loom_dp_add(dp, c, N3, &ic);
	for (int step = 0; step < 3; step++) {
		int rc = 0;
		fill(42u + (uint32_t)step);
		rc |= loom_dp_ready(dp, ic);
		rc |= loom_dp_poll(dp);
		rc |= loom_dp_ready(dp, ib);
		rc |= loom_dp_ready(dp, ia);
		rc |= loom_dp_finish(dp);
		is_int(rc, LOOM_SUCCESS, "%s: step %d ready x3 + finish", name, step);
		ok(check(bf16, &worst), "%s: step %d: averaged gradient %s", name, step,
		   bf16 ? "is the gradient rounded to bf16" : "equals the gradient bit for bit");
		if (bf16)
			ok(worst <= 1.0 / 256, "%s: step %d: relative error %.3g <= 2^-8 (half a bf16 ulp)", name, step, worst);
	}
	/* finish alone: every tensor taken as ready */
	fill(7);
	is_int(loom_dp_finish(dp), LOOM_SUCCESS, "%s: finish with no ready calls", name);
	ok(check(bf16, &worst), "%s: ... still averages every tensor", name);
	/* a tensor marked twice in one step */
	fill(8);
	loom_dp_ready(dp, ia);
	is_int(loom_dp_ready(dp, ia), LOOM_ERR_INVALID, "%s: ready twice in a step is refused", name);
	is_int(loom_dp_ready(dp, 3), LOOM_ERR_INVALID, "%s: ready on an unknown index is refused", name);
	is_int(loom_dp_finish(dp), LOOM_SUCCESS, "%s: the step still finishes", name);

	is_int(loom_dp_stats(dp, &st), LOOM_SUCCESS, "%s: stats", name);
	is_int(st.steps, 5, "%s: stats count 5 steps", name);
	is_int(st.wire_bytes, (size_t)(N1 + N2 + N3) * (bf16 ? 2 : 4), "%s: wire bytes per step", name);
	ok(st.buckets >= 2, "%s: the 4 KiB cap gives several buckets (%d)", name, st.buckets);
	ok(st.overlap >= 0 && st.overlap <= 1 && st.wait_s >= 0 && st.comm_s >= st.wait_s,
	   "%s: 0 <= wait %.3g s <= comm %.3g s, overlap %.2f in [0,1]", name, st.wait_s,
	   st.comm_s, st.overlap);
	loom_dp_stats_reset(dp);
	loom_dp_stats(dp, &st);
	ok(st.steps == 0 && st.comm_s == 0, "%s: stats reset", name);
	is_int(loom_dp_free(dp), LOOM_SUCCESS, "%s: free", name);
}

int main(void)
{
	loom_comm_t *w = NULL;
	plan(NO_PLAN);
	if (loom_init(&w) != LOOM_SUCCESS)
		bail_out("loom_init failed (a world of one needs no cluster)");
	if (loom_comm_size(w) != 1)
		bail_out("expected a world of one, got %d ranks (run it without srun)", loom_comm_size(w));

	one_mode(w, 0, "fp32 allreduce");
	one_mode(w, LOOM_DP_ORDERED, "fp32 ordered");
	one_mode(w, LOOM_DP_BF16_WIRE, "bf16 allreduce");
	one_mode(w, LOOM_DP_BF16_WIRE | LOOM_DP_ORDERED, "bf16 ordered");

	/* the rounding itself: nearest, ties to even, specials kept */
	ok(loom_dp_bf16_round(1.0f) == 1.0f, "bf16(1) = 1");
	ok(loom_dp_bf16_round(1.0f + 0x1p-8f) == 1.0f, "bf16(1 + 2^-8): tie rounds to even (1)");
	ok(loom_dp_bf16_round(1.0f + 0x3p-8f) == 1.0f + 0x1p-6f,
	   "bf16(1 + 3*2^-8): tie rounds to even (1 + 2^-6)");
	ok(loom_dp_bf16_round(1.0f + 0x1.8p-8f) == 1.0f + 0x1p-7f, "bf16(1 + 1.5*2^-8) rounds up");
	ok(isnan(loom_dp_bf16_round(NAN)), "bf16(NaN) is NaN");
	ok(isinf(loom_dp_bf16_round(INFINITY)) && loom_dp_bf16_round(-INFINITY) < 0, "bf16(+-inf) kept");
	ok(loom_dp_bf16_round(-2.5f) == -2.5f, "bf16(-2.5) exact");

	{
		loom_dp_t *dp;
		float p[4] = { 1, 2, 3, 4 };
		loom_dp_create(w, 0, 0, &dp);
		is_int(loom_dp_broadcast_params(dp, p, 4), LOOM_SUCCESS, "broadcast_params in a world of 1");
		ok(p[0] == 1 && p[3] == 4, "... leaves rank 0's values");
		loom_dp_free(dp);
	}
	loom_finalize(w);
	done_testing();
	return exit_status();
}
