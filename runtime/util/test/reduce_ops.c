/* unit test: reduction kernels for every dtype x op (integers wrap like
 * two's complement, AVG truncates), IEEE half and bfloat16 conversions
 * (round to nearest even, subnormals, overflow, NaN), and 16-bit
 * reductions computed in fp32 with one rounding. */
#include "config.h"
#include "util/util.h"
#include "../../../t/tap.h"

#include <math.h>
#include <stdint.h>

static float f_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static void ints(void)
{
	int8_t a8[4] = { 127, -128, 5, -3 }, b8[4] = { 1, -1, -7, -3 };
	int8_t s8[4], m8[4];
	int32_t a32[3] = { INT32_MAX, -5, 100000 }, b32[3] = { 1, 7, 100000 };
	int64_t a64[2] = { INT64_MAX, (int64_t)1 << 40 }, b64[2] = { 1, 3 };
	memcpy(s8, a8, 4);
	loom_reduce_local(s8, b8, 4, LOOM_INT8, LOOM_SUM);
	ok(s8[0] == -128 && s8[1] == 127 && s8[2] == -2 && s8[3] == -6, "int8 sum wraps");
	memcpy(s8, a8, 4);
	loom_reduce_local(s8, b8, 4, LOOM_INT8, LOOM_AVG);
	ok(s8[2] == -2, "int8 avg reduces as sum");
	loom_avg_finish(s8, 4, LOOM_INT8, 4);
	ok(s8[0] == -32 && s8[1] == 31 && s8[2] == 0 && s8[3] == -1, "int8 avg divides, truncating toward zero");
	memcpy(m8, a8, 4);
	loom_reduce_local(m8, b8, 4, LOOM_INT8, LOOM_PROD);
	ok(m8[0] == 127 && m8[1] == -128 && m8[2] == -35 && m8[3] == 9, "int8 prod (wraps: -128*-1)");
	memcpy(m8, a8, 4);
	loom_reduce_local(m8, b8, 4, LOOM_INT8, LOOM_MIN);
	ok(m8[0] == 1 && m8[1] == -128 && m8[2] == -7 && m8[3] == -3, "int8 min");
	memcpy(m8, a8, 4);
	loom_reduce_local(m8, b8, 4, LOOM_INT8, LOOM_MAX);
	ok(m8[0] == 127 && m8[1] == -1 && m8[2] == 5 && m8[3] == -3, "int8 max");
	{
		int32_t t[3];
		memcpy(t, a32, sizeof t);
		loom_reduce_local(t, b32, 3, LOOM_INT32, LOOM_SUM);
		ok(t[0] == INT32_MIN && t[1] == 2 && t[2] == 200000, "int32 sum (wraps at INT32_MAX)");
		memcpy(t, a32, sizeof t);
		loom_reduce_local(t, b32, 3, LOOM_INT32, LOOM_PROD);
		ok(t[1] == -35 && t[2] == (int32_t)(uint32_t)(100000ull * 100000ull), "int32 prod wraps");
		memcpy(t, a32, sizeof t);
		loom_reduce_local(t, b32, 3, LOOM_INT32, LOOM_MIN);
		ok(t[0] == 1 && t[1] == -5 && t[2] == 100000, "int32 min");
		memcpy(t, a32, sizeof t);
		loom_reduce_local(t, b32, 3, LOOM_INT32, LOOM_MAX);
		ok(t[0] == INT32_MAX && t[1] == 7, "int32 max");
		t[0] = -7; t[1] = 7; t[2] = -8;
		loom_avg_finish(t, 3, LOOM_INT32, 2);
		ok(t[0] == -3 && t[1] == 3 && t[2] == -4, "int32 avg truncates");
	}
	{
		int64_t t[2];
		memcpy(t, a64, sizeof t);
		loom_reduce_local(t, b64, 2, LOOM_INT64, LOOM_SUM);
		ok(t[0] == INT64_MIN && t[1] == ((int64_t)1 << 40) + 3, "int64 sum is 64-bit, wraps");
		memcpy(t, a64, sizeof t);
		loom_reduce_local(t, b64, 2, LOOM_INT64, LOOM_PROD);
		ok(t[1] == (int64_t)3 << 40, "int64 prod");
		memcpy(t, a64, sizeof t);
		loom_reduce_local(t, b64, 2, LOOM_INT64, LOOM_MIN);
		ok(t[0] == 1 && t[1] == 3, "int64 min");
		memcpy(t, a64, sizeof t);
		loom_reduce_local(t, b64, 2, LOOM_INT64, LOOM_MAX);
		ok(t[0] == INT64_MAX && t[1] == (int64_t)1 << 40, "int64 max");
	}
}

static void floats(void)
{
	float a[4] = { 1.5f, -2, 1e30f, 0.1f }, b[4] = { 2, 3, 1e30f, 0.2f }, t[4];
	double da[2] = { 1e300, 0.1 }, db[2] = { 1e300, 0.2 }, dt[2];
	int op;
	for (op = 0; op < LOOM_OP_COUNT; op++) {
		int i, good = 1;
		memcpy(t, a, sizeof t);
		loom_reduce_local(t, b, 4, LOOM_FLOAT32, op);
		for (i = 0; i < 4; i++) {
			float w = op == LOOM_PROD ? a[i] * b[i] : op == LOOM_MIN ? fminf(a[i], b[i]) :
				  op == LOOM_MAX ? fmaxf(a[i], b[i]) : a[i] + b[i];
			good &= t[i] == w || (isinf(t[i]) && isinf(w));
		}
		ok(good, "float32 %s", loom_op_name(op));
		memcpy(dt, da, sizeof dt);
		loom_reduce_local(dt, db, 2, LOOM_FLOAT64, op);
		good = 1;
		for (i = 0; i < 2; i++) {
			double w = op == LOOM_PROD ? da[i] * db[i] : op == LOOM_MIN ? fmin(da[i], db[i]) :
				   op == LOOM_MAX ? fmax(da[i], db[i]) : da[i] + db[i];
			good &= dt[i] == w || (isinf(dt[i]) && isinf(w));
		}
		ok(good, "float64 %s", loom_op_name(op));
	}
	t[0] = 3; t[1] = -1;
	loom_avg_finish(t, 2, LOOM_FLOAT32, 4);
	ok(t[0] == 0.75f && t[1] == -0.25f, "float32 avg divides by n");
	dt[0] = 1;
	loom_avg_finish(dt, 1, LOOM_FLOAT64, 3);
	ok(dt[0] == 1.0 / 3, "float64 avg divides by n");
}

static void half(void)
{
	unsigned h, bad = 0;
	is_int(loom_float_to_half(1.0f), 0x3c00, "half(1) = 0x3c00");
	is_int(loom_float_to_half(-2.0f), 0xc000, "half(-2) = 0xc000");
	is_int(loom_float_to_half(65504.0f), 0x7bff, "largest half");
	is_int(loom_float_to_half(65519.0f), 0x7bff, "65519 rounds down to 65504");
	is_int(loom_float_to_half(65520.0f), 0x7c00, "65520 rounds to infinity");
	is_int(loom_float_to_half(1e10f), 0x7c00, "overflow is infinity");
	is_int(loom_float_to_half(-1e10f), 0xfc00, "negative overflow is -infinity");
	is_int(loom_float_to_half(ldexpf(1, -24)), 0x0001, "smallest subnormal");
	is_int(loom_float_to_half(ldexpf(1, -25)), 0x0000, "half of it ties to even (zero)");
	is_int(loom_float_to_half(ldexpf(3, -26)), 0x0001, "three quarters of it rounds up");
	is_int(loom_float_to_half(ldexpf(3, -25)), 0x0002, "1.5 subnormal units tie to even (2)");
	is_int(loom_float_to_half(ldexpf(1023, -24) + ldexpf(1, -25)), 0x0400,
	       "largest subnormal + half unit rounds into the normals");
	is_int(loom_float_to_half(1.0f + ldexpf(1, -11)), 0x3c00, "1 + half ulp ties to even (down)");
	is_int(loom_float_to_half(1.0f + ldexpf(3, -11)), 0x3c02, "1 + 1.5 ulp ties to even (up)");
	is_int(loom_float_to_half(1.0f + ldexpf(1, -11) + ldexpf(1, -20)), 0x3c01, "above the tie rounds up");
	is_int(loom_float_to_half(ldexpf(1, -30)), 0, "underflow to zero");
	is_int(loom_float_to_half(-0.0f), 0x8000, "-0 keeps its sign");
	ok((loom_float_to_half(NAN) & 0x7c00) == 0x7c00 && (loom_float_to_half(NAN) & 0x3ff),
	   "NaN stays NaN");
	is_int(loom_float_to_half(INFINITY), 0x7c00, "infinity");
	ok(loom_half_to_float(0x0001) == ldexpf(1, -24), "subnormal decodes");
	ok(loom_half_to_float(0x7bff) == 65504.0f, "max decodes");
	ok(isinf(loom_half_to_float(0xfc00)) && loom_half_to_float(0xfc00) < 0, "-inf decodes");
	for (h = 0; h < 65536; h++) {
		float f = loom_half_to_float((uint16_t)h);
		if (isnan(f)) {
			if (!((loom_float_to_half(f) & 0x7c00) == 0x7c00 && (loom_float_to_half(f) & 0x3ff)))
				bad++;
		} else if (loom_float_to_half(f) != h) {
			bad++;
		}
	}
	is_int(bad, 0, "every half survives half -> float -> half");
}

static void bf16(void)
{
	unsigned h, bad = 0;
	is_int(loom_float_to_bf16(1.0f), 0x3f80, "bf16(1) = 0x3f80");
	is_int(loom_float_to_bf16(1.0f + ldexpf(1, -8)), 0x3f80, "tie to even (down)");
	is_int(loom_float_to_bf16(1.0f + ldexpf(3, -8)), 0x3f82, "tie to even (up)");
	is_int(loom_float_to_bf16(1.0f + ldexpf(1, -8) + ldexpf(1, -20)), 0x3f81, "above the tie rounds up");
	is_int(loom_float_to_bf16(f_of(0x7f7fffff)), 0x7f80, "largest float rounds to infinity");
	ok((loom_float_to_bf16(NAN) & 0x7f80) == 0x7f80 && (loom_float_to_bf16(NAN) & 0x7f), "NaN stays NaN");
	ok((loom_float_to_bf16(f_of(0x7f800001)) & 0x7f), "a NaN with a low payload stays NaN");
	for (h = 0; h < 65536; h++) {
		float f = loom_bf16_to_float((uint16_t)h);
		if (!isnan(f) && loom_float_to_bf16(f) != h)
			bad++;
	}
	is_int(bad, 0, "every bf16 survives bf16 -> float -> bf16");
}

static void sixteen(void)
{
	uint16_t a[3], b[3];
	int op;
	/* 2048 + 1 is not a half: rounds to even (2048); 0.1 + 0.2 once rounded */
	a[0] = loom_float_to_half(2048); b[0] = loom_float_to_half(1);
	a[1] = loom_float_to_half(2048); b[1] = loom_float_to_half(3);
	a[2] = loom_float_to_half(0.1f); b[2] = loom_float_to_half(0.2f);
	loom_reduce_local(a, b, 3, LOOM_FLOAT16, LOOM_SUM);
	is_int(a[0], loom_float_to_half(2048), "fp16 2048+1 rounds to even");
	is_int(a[1], loom_float_to_half(2052), "fp16 2048+3 rounds to even (2052)");
	is_int(a[2], loom_float_to_half(loom_half_to_float(loom_float_to_half(0.1f)) +
					 loom_half_to_float(loom_float_to_half(0.2f))),
	       "fp16 sum: fp32 sum of the inputs, rounded once");
	for (op = 0; op < LOOM_OP_COUNT; op++) {
		uint16_t x[2] = { loom_float_to_bf16(3), loom_float_to_bf16(-0.5f) };
		uint16_t y[2] = { loom_float_to_bf16(-2), loom_float_to_bf16(0.25f) };
		float w0 = op == LOOM_PROD ? -6 : op == LOOM_MIN ? -2 : op == LOOM_MAX ? 3 : 1;
		float w1 = op == LOOM_PROD ? -0.125f : op == LOOM_MIN ? -0.5f : op == LOOM_MAX ? 0.25f : -0.25f;
		loom_reduce_local(x, y, 2, LOOM_BFLOAT16, op);
		ok(loom_bf16_to_float(x[0]) == w0 && loom_bf16_to_float(x[1]) == w1, "bf16 %s", loom_op_name(op));
		x[0] = loom_float_to_half(3); x[1] = loom_float_to_half(-0.5f);
		y[0] = loom_float_to_half(-2); y[1] = loom_float_to_half(0.25f);
		loom_reduce_local(x, y, 2, LOOM_FLOAT16, op);
		ok(loom_half_to_float(x[0]) == w0 && loom_half_to_float(x[1]) == w1, "fp16 %s", loom_op_name(op));
	}
	{
		float f[3] = { 1, 2, 3 }, g[3];
		uint16_t h[3];
		loom_from_f32(h, f, 3, LOOM_FLOAT16);
		loom_to_f32(g, h, 3, LOOM_FLOAT16);
		ok(!memcmp(f, g, sizeof f), "fp16 buffer conversion round-trips");
		loom_from_f32(h, f, 3, LOOM_BFLOAT16);
		loom_to_f32(g, h, 3, LOOM_BFLOAT16);
		ok(!memcmp(f, g, sizeof f), "bf16 buffer conversion round-trips");
		h[0] = loom_float_to_half(3);
		loom_avg_finish(h, 1, LOOM_FLOAT16, 4);
		ok(loom_half_to_float(h[0]) == 0.75f, "fp16 avg");
		h[0] = loom_float_to_bf16(1);
		loom_avg_finish(h, 1, LOOM_BFLOAT16, 3);
		is_int(h[0], loom_float_to_bf16(1.0f / 3), "bf16 avg rounds once");
	}
}

/* out = a op b into a third buffer: the same bytes as the in-place
 * reduction (direct reads use it for a rank's first peer: no copy of its
 * own part first), a left as it was, for every dtype and op; 37 elements:
 * a vector loop and its tail */
static void into(void)
{
	enum { N = 37 };
	static const loom_op_t ops[] = { LOOM_SUM, LOOM_PROD, LOOM_MIN, LOOM_MAX };
	int d, k, bad = 0, moved = 0;
	for (d = 0; d < LOOM_DTYPE_COUNT; d++) {
		size_t es = loom_dtype_size(d);
		for (k = 0; k < 4; k++) {
			unsigned char a[N * 8], b[N * 8], a0[N * 8], inplace[N * 8], out[N * 8];
			size_t i;
			for (i = 0; i < N * es; i++) {
				a[i] = (unsigned char)(i * 37 + d * 11 + 3);
				b[i] = (unsigned char)(i * 91 + k * 7 + 1);
			}
			if (d == LOOM_FLOAT16 || d == LOOM_BFLOAT16 || d == LOOM_FLOAT32 ||
			    d == LOOM_FLOAT64) {
				/* finite values: a NaN's payload is not the point here */
				for (i = 0; i < N; i++) {
					double x = (double)i * 0.75 - 9, y = (double)(i % 5) + 0.5;
					if (d == LOOM_FLOAT16) {
						((uint16_t *)a)[i] = loom_float_to_half((float)x);
						((uint16_t *)b)[i] = loom_float_to_half((float)y);
					} else if (d == LOOM_BFLOAT16) {
						((uint16_t *)a)[i] = loom_float_to_bf16((float)x);
						((uint16_t *)b)[i] = loom_float_to_bf16((float)y);
					} else if (d == LOOM_FLOAT32) {
						((float *)a)[i] = (float)x;
						((float *)b)[i] = (float)y;
					} else {
						((double *)a)[i] = x;
						((double *)b)[i] = y;
					}
				}
			}
			memcpy(a0, a, sizeof a);
			memcpy(inplace, a, sizeof a);
			loom_reduce_local(inplace, b, N, d, ops[k]);
			memset(out, 0xa5, sizeof out);
			loom_reduce_into(out, a, b, N, d, ops[k]);
			bad += memcmp(out, inplace, N * es) != 0 || memcmp(a, a0, sizeof a) != 0;
			moved += memcmp(inplace, a0, N * es) != 0;
		}
	}
	is_int(bad, 0, "reduce_into(out, a, b) = the in-place a op= b, a untouched, every dtype x op");
	ok(moved >= 4 * LOOM_DTYPE_COUNT - 2, "and the reductions compared change their input (%d of %d)",
	   moved, 4 * LOOM_DTYPE_COUNT);
}

int main(void)
{
	plan(NO_PLAN);
	is_int(loom_dtype_size(LOOM_INT8), 1, "int8 size");
	is_int(loom_dtype_size(LOOM_FLOAT16), 2, "float16 size");
	is_int(loom_dtype_size(LOOM_BFLOAT16), 2, "bfloat16 size");
	is_int(loom_dtype_size(LOOM_INT64), 8, "int64 size");
	is_int(loom_dtype_size(LOOM_DTYPE_COUNT), 0, "unknown dtype size 0");
	is_str(loom_dtype_name(LOOM_BFLOAT16), "bfloat16", "dtype name");
	is_str(loom_op_name(LOOM_AVG), "avg", "op name");
	is_str(loom_op_name(99), "unknown", "unknown op name");
	ints();
	floats();
	half();
	bf16();
	sixteen();
	into();
	done_testing();
	return exit_status();
}
