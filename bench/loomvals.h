/* bench/loomvals.h: deterministic per-rank inputs and their expected
 * reductions, shared by loom-bench -c and the conformance suite
 * (t/conformance/). Uses only the public <loom.h>.
 *
 * lv_value(dtype, op, rank, i) is the i-th input element of a rank for a
 * reduction with op, already rounded to dtype and returned as a double
 * (exact for every dtype: int64 inputs stay below 2^53). Ranges:
 *   SUM, AVG  small integers (int8: -8..8 so that a sum of up to 15 ranks
 *             fits), int32/int64 with a per-rank high part that catches a
 *             32-bit truncation; floats m/64 with |m| <= 1000 (exact in
 *             fp16, rounded once to bf16's 8 significant bits).
 *   PROD      integers from {1, -1, 2} with 2 at most every third rank so
 *             that a product over 16 ranks fits int8; floats 1 + k/64,
 *             |k| <= 4.
 *   MIN, MAX  the dtype's whole range for integers, +-1000 for floats.
 * Store with lv_store(), read any element back with lv_load().
 */
#ifndef LOOM_BENCH_LOOMVALS_H
#define LOOM_BENCH_LOOMVALS_H

#include <loom.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float lv_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
	float f;
	if (exp == 0) {
		/* zero or subnormal: man * 2^-24 */
		f = (float)man * 0x1p-24f;
		return sign ? -f : f;
	}
	if (exp == 31)
		bits = sign | 0x7f800000u | (man << 13);
	else
		bits = sign | ((exp + 112) << 23) | (man << 13);
	memcpy(&f, &bits, sizeof f);
	return f;
}

/* round to nearest even */
static inline uint16_t lv_float_to_half(float f)
{
	uint32_t x, sign, man;
	int exp;
	memcpy(&x, &f, sizeof x);
	sign = (x >> 16) & 0x8000u;
	exp = (int)((x >> 23) & 0xff);
	man = x & 0x7fffffu;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
	exp -= 127 - 15;
	if (exp >= 31)
		return (uint16_t)(sign | 0x7c00u);
	if (exp <= 0) {
		/* subnormal half (or zero): shift the full significand */
		uint32_t m = man | 0x800000u, shift, r, half, rem;
		if (exp < -10)
			return (uint16_t)sign;
		shift = (uint32_t)(14 - exp);
		r = m >> shift;
		rem = m & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	}
	{
		uint32_t r = ((uint32_t)exp << 10) | (man >> 13), rem = man & 0x1fffu;
		if (rem > 0x1000u || (rem == 0x1000u && (r & 1)))
			r++; /* may carry into the exponent: still right (up to inf) */
		return (uint16_t)(sign | r);
	}
}

static inline float lv_bf16_to_float(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;
	memcpy(&f, &x, sizeof f);
	return f;
}

static inline uint16_t lv_float_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, sizeof x);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fffu + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

static inline int lv_is_float(loom_dtype_t t)
{
	return t == LOOM_FLOAT16 || t == LOOM_BFLOAT16 || t == LOOM_FLOAT32 || t == LOOM_FLOAT64;
}

static inline double lv_load(const void *buf, size_t i, loom_dtype_t t)
{
	switch (t) {
	case LOOM_INT8: return ((const int8_t *)buf)[i];
	case LOOM_INT32: return ((const int32_t *)buf)[i];
	case LOOM_INT64: return (double)((const int64_t *)buf)[i];
	case LOOM_FLOAT16: return lv_half_to_float(((const uint16_t *)buf)[i]);
	case LOOM_BFLOAT16: return lv_bf16_to_float(((const uint16_t *)buf)[i]);
	case LOOM_FLOAT32: return ((const float *)buf)[i];
	case LOOM_FLOAT64: return ((const double *)buf)[i];
	default: return 0;
	}
}

/* exact 64-bit integer read (int64 results may exceed 2^53) */
static inline int64_t lv_load_int(const void *buf, size_t i, loom_dtype_t t)
{
	switch (t) {
	case LOOM_INT8: return ((const int8_t *)buf)[i];
	case LOOM_INT32: return ((const int32_t *)buf)[i];
	case LOOM_INT64: return ((const int64_t *)buf)[i];
	default: return (int64_t)lv_load(buf, i, t);
	}
}

static inline void lv_store(void *buf, size_t i, loom_dtype_t t, double v)
{
	switch (t) {
	case LOOM_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
	case LOOM_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case LOOM_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
	case LOOM_FLOAT16: ((uint16_t *)buf)[i] = lv_float_to_half((float)v); break;
	case LOOM_BFLOAT16: ((uint16_t *)buf)[i] = lv_float_to_bf16((float)v); break;
	case LOOM_FLOAT32: ((float *)buf)[i] = (float)v; break;
	case LOOM_FLOAT64: ((double *)buf)[i] = v; break;
	default: break;
	}
}

static inline uint64_t lv_hash(uint64_t a, uint64_t b)
{
	uint64_t z = a * 0x9E3779B97F4A7C15ull + b * 0xD1B54A32D192ED03ull + 0x2545F4914F6CDD1Dull;
	z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 29)) * 0x94D049BB133111EBull;
	return z ^ (z >> 32);
}

/* the value before rounding to the dtype */
static inline double lv_raw(loom_dtype_t t, loom_op_t op, int rank, size_t i)
{
	uint64_t h = lv_hash((uint64_t)rank + 1, (uint64_t)i + 7u * (uint64_t)op);
	switch (op) {
	case LOOM_PROD:
		if (lv_is_float(t))
			return 1.0 + (double)((int)(h % 9) - 4) / 64.0;
		if ((i + (size_t)rank) % 3 == 0 && (h & 1))
			return 2;
		return (h >> 8) % 4 == 0 ? -1 : 1;
	case LOOM_MIN:
	case LOOM_MAX:
		switch (t) {
		case LOOM_INT8: return (double)(int8_t)(h & 0xff);
		case LOOM_INT32: return (double)(int32_t)(uint32_t)h;
		/* int64: below 2^53 in magnitude so that a double holds it */
		case LOOM_INT64: return (double)((int64_t)(h >> 11) - ((int64_t)1 << 52));
		default: return (double)((int)(h % 2001) - 1000);
		}
	case LOOM_SUM:
	case LOOM_AVG:
	default: {
		int s = (int)(h % 17) - 8;
		switch (t) {
		case LOOM_INT8: return s;
		case LOOM_INT32: return s + (double)(rank + 1) * 65536.0;
		case LOOM_INT64: return s + (double)(rank + 1) * 68719476736.0; /* 2^36 */
		default: return (double)((int)(h % 2001) - 1000) / 64.0;
		}
	}
	}
}

/* rank's i-th input, exactly as it is stored in a dtype buffer */
static inline double lv_value(loom_dtype_t t, loom_op_t op, int rank, size_t i)
{
	double v = lv_raw(t, op, rank, i);
	switch (t) {
	case LOOM_FLOAT16: return lv_half_to_float(lv_float_to_half((float)v));
	case LOOM_BFLOAT16: return lv_bf16_to_float(lv_float_to_bf16((float)v));
	case LOOM_FLOAT32: return (float)v;
	default: return v;
	}
}

static inline void lv_fill(void *buf, size_t count, loom_dtype_t t, loom_op_t op, int rank,
			   size_t first)
{
	for (size_t i = 0; i < count; i++)
		lv_store(buf, i, t, lv_raw(t, op, rank, first + i));
}

/* Unit roundoff of a float dtype (0 for integers). */
static inline double lv_unit_roundoff(loom_dtype_t t)
{
	switch (t) {
	case LOOM_FLOAT16: return 0x1p-11;
	case LOOM_BFLOAT16: return 0x1p-8;
	case LOOM_FLOAT32: return 0x1p-24;
	case LOOM_FLOAT64: return 0x1p-53;
	default: return 0;
	}
}

/* The expected reduction over ranks 0..n-1 of element i (element i of the
 * per-rank inputs lv_value(., ., r, i)), and the tolerance allowed for it.
 *
 * Tolerance, floats: any summation order with each partial result rounded
 * to the dtype (a ring that moves 16-bit partials on the wire rounds once
 * per hop even when it accumulates in fp32) is within (n-1) * u * sum|x_r|
 * of the exact sum, u the unit roundoff; the final rounding adds u*|sum|.
 * We allow 2 * (n + 1) * u * sum|x_r| (PROD: the same with |prod| in place
 * of sum|x|, since each rounding is relative to the running product; AVG:
 * the SUM bound divided by n, plus one rounding of the quotient). MIN/MAX
 * and all integer results must be exact. Integer AVG is the C truncating
 * division of the exact sum by n. */
static inline double lv_expect(loom_dtype_t t, loom_op_t op, int n, size_t i, double *tol)
{
	double acc = 0, mag = 0, u = lv_unit_roundoff(t);
	int r;
	int64_t iacc = 0;
	*tol = 0;
	switch (op) {
	case LOOM_PROD:
		acc = 1;
		for (r = 0; r < n; r++)
			acc *= lv_value(t, op, r, i);
		*tol = 2.0 * (n + 1) * u * fabs(acc);
		return acc;
	case LOOM_MIN:
	case LOOM_MAX:
		acc = lv_value(t, op, 0, i);
		for (r = 1; r < n; r++) {
			double v = lv_value(t, op, r, i);
			if (op == LOOM_MIN ? v < acc : v > acc)
				acc = v;
		}
		return acc;
	case LOOM_SUM:
	case LOOM_AVG:
	default:
		if (!lv_is_float(t)) {
			for (r = 0; r < n; r++)
				iacc += (int64_t)lv_value(t, op, r, i);
			if (op == LOOM_AVG)
				iacc /= n;
			return (double)iacc;
		}
		for (r = 0; r < n; r++) {
			double v = lv_value(t, op, r, i);
			acc += v;
			mag += fabs(v);
		}
		*tol = 2.0 * (n + 1) * u * mag;
		if (op == LOOM_AVG) {
			acc /= n;
			*tol = *tol / n + u * fabs(acc);
		}
		return acc;
	}
}

/* Does got (element i of a dtype buffer) match the expected reduction? */
static inline int lv_reduced_ok(const void *buf, size_t j, loom_dtype_t t, loom_op_t op, int n,
				size_t i)
{
	double tol, want = lv_expect(t, op, n, i, &tol);
	if (!lv_is_float(t))
		return lv_load_int(buf, j, t) == (int64_t)want;
	{
		double got = lv_load(buf, j, t);
		return fabs(got - want) <= tol && got == got;
	}
}

/* Non-reduction collectives: element i of rank r's buffer. */
static inline int lv_copy_ok(const void *buf, size_t j, loom_dtype_t t, int rank, size_t i)
{
	if (!lv_is_float(t))
		return lv_load_int(buf, j, t) == (int64_t)lv_value(t, LOOM_SUM, rank, i);
	return lv_load(buf, j, t) == lv_value(t, LOOM_SUM, rank, i);
}

#endif
