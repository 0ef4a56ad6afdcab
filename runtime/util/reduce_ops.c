/* runtime/util/reduce_ops.c: element types, reduction kernels (dtype x op), and
 * IEEE half / bfloat16 conversions with round-to-nearest-even. Integer SUM
 * and PROD wrap around (two's complement), as unsigned arithmetic does. */
/* The element-wise kernels are the inner loop of every large reduction;
 * -O2 leaves them scalar (GCC 12's cheapest vector cost model will not
 * check at run time whether out and a overlap). Each lane does the same
 * IEEE operation as the scalar loop: the same bits. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic")
#endif
#include "util/util.h"

#include <string.h>

size_t loom_dtype_size(loom_dtype_t dtype)
{
	switch (dtype) {
	case LOOM_INT8: return 1;
	case LOOM_INT32: return 4;
	case LOOM_INT64: return 8;
	case LOOM_FLOAT16: return 2;
	case LOOM_BFLOAT16: return 2;
	case LOOM_FLOAT32: return 4;
	case LOOM_FLOAT64: return 8;
	default: return 0;
	}
}

const char *loom_dtype_name(loom_dtype_t dtype)
{
	static const char *n[] = { "int8", "int32", "int64", "float16", "bfloat16", "float32",
				   "float64" };
	return (unsigned)dtype < LOOM_DTYPE_COUNT ? n[dtype] : "unknown";
}

const char *loom_op_name(loom_op_t op)
{
	static const char *n[] = { "sum", "prod", "min", "max", "avg" };
	return (unsigned)op < LOOM_OP_COUNT ? n[op] : "unknown";
}

int loom_dtype_ok(int dtype) { return dtype >= 0 && dtype < LOOM_DTYPE_COUNT; }
int loom_op_ok(int op) { return op >= 0 && op < LOOM_OP_COUNT; }

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float loom_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
	if (exp == 0) {
		float v = (float)mant * (1.0f / 16777216.0f); /* mant * 2^-24, exact */
		return sign ? -v : v;
	}
	if (exp == 31)
		return u2f(sign | 0x7f800000u | (mant << 13));
	return u2f(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t loom_float_to_half(float f)
{
	uint32_t b = f2u(f), sign = (b >> 16) & 0x8000, exp = (b >> 23) & 0xff,
		 mant = b & 0x7fffff;
	int e;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
	e = (int)exp - 112;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (e <= 0) {
		uint32_t m = mant | 0x800000, r, rem, half;
		int shift = 14 - e;
		if (exp == 0 || shift > 24)
			return (uint16_t)sign;
		r = m >> shift;
		rem = m & ((1u << shift) - 1);
		half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1)))
			r++;
		return (uint16_t)(sign | r);
	} else {
		uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fff;
		if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
			h++;   /* a carry moves into the exponent, up to infinity */
		return (uint16_t)(sign | h);
	}
}

float loom_bf16_to_float(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t loom_float_to_bf16(float f)
{
	uint32_t b = f2u(f);
	if ((b & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((b >> 16) | 0x40);   /* NaN stays (quiet) NaN */
	b += 0x7fff + ((b >> 16) & 1);
	return (uint16_t)(b >> 16);
}

void loom_to_f32(float *dst, const void *src, size_t count, loom_dtype_t dtype)
{
	const uint16_t *s = src;
	size_t i;
	if (dtype == LOOM_FLOAT16)
		for (i = 0; i < count; i++) dst[i] = loom_half_to_float(s[i]);
	else
		for (i = 0; i < count; i++) dst[i] = loom_bf16_to_float(s[i]);
}

void loom_from_f32(void *dst, const float *src, size_t count, loom_dtype_t dtype)
{
	uint16_t *d = dst;
	size_t i;
	if (dtype == LOOM_FLOAT16)
		for (i = 0; i < count; i++) d[i] = loom_float_to_half(src[i]);
	else
		for (i = 0; i < count; i++) d[i] = loom_float_to_bf16(src[i]);
}

/* out[i] = a[i] op b[i]; out may be a (in place) */
#define KERNELS(NAME, T, UT) \
static void NAME(T *out, const T *a, const T *restrict b, size_t n, loom_op_t op) \
{ \
	size_t i; \
	switch (op) { \
	case LOOM_SUM: case LOOM_AVG: \
		for (i = 0; i < n; i++) \
			out[i] = (T)((UT)a[i] + (UT)b[i]); \
		break; \
	case LOOM_PROD: \
		for (i = 0; i < n; i++) \
			out[i] = (T)((UT)a[i] * (UT)b[i]); \
		break; \
	case LOOM_MIN: \
		for (i = 0; i < n; i++) \
			out[i] = b[i] < a[i] ? b[i] : a[i]; \
		break; \
	case LOOM_MAX: \
		for (i = 0; i < n; i++) \
			out[i] = b[i] > a[i] ? b[i] : a[i]; \
		break; \
	default: \
		break; \
	} \
}
KERNELS(red_i8, int8_t, uint8_t)
KERNELS(red_i32, int32_t, uint32_t)
KERNELS(red_i64, int64_t, uint64_t)
KERNELS(red_f32, float, float)
KERNELS(red_f64, double, double)

static float op_f(float a, float b, loom_op_t op)
{
	switch (op) {
	case LOOM_PROD: return a * b;
	case LOOM_MIN: return b < a ? b : a;
	case LOOM_MAX: return b > a ? b : a;
	default: return a + b;
	}
}

void loom_reduce_into(void *out, const void *a, const void *b, size_t count, loom_dtype_t dtype,
		      loom_op_t op)
{
	size_t i;
	switch (dtype) {
	case LOOM_INT8: red_i8(out, a, b, count, op); break;
	case LOOM_INT32: red_i32(out, a, b, count, op); break;
	case LOOM_INT64: red_i64(out, a, b, count, op); break;
	case LOOM_FLOAT32: red_f32(out, a, b, count, op); break;
	case LOOM_FLOAT64: red_f64(out, a, b, count, op); break;
	case LOOM_FLOAT16: {
		uint16_t *o = out;
		const uint16_t *x = a, *y = b;
		for (i = 0; i < count; i++)
			o[i] = loom_float_to_half(op_f(loom_half_to_float(x[i]),
						       loom_half_to_float(y[i]), op));
		break;
	}
	case LOOM_BFLOAT16: {
		uint16_t *o = out;
		const uint16_t *x = a, *y = b;
		for (i = 0; i < count; i++)
			o[i] = loom_float_to_bf16(op_f(loom_bf16_to_float(x[i]),
						       loom_bf16_to_float(y[i]), op));
		break;
	}
	default: break;
	}
}

void loom_reduce_local(void *inout, const void *in, size_t count, loom_dtype_t dtype, loom_op_t op)
{
	loom_reduce_into(inout, inout, in, count, dtype, op);
}

void loom_avg_finish(void *buf, size_t count, loom_dtype_t dtype, int n)
{
	size_t i;
	if (n <= 1)
		return;
	switch (dtype) {
	case LOOM_INT8: { int8_t *p = buf; for (i = 0; i < count; i++) p[i] = (int8_t)(p[i] / n); break; }
	case LOOM_INT32: { int32_t *p = buf; for (i = 0; i < count; i++) p[i] /= n; break; }
	case LOOM_INT64: { int64_t *p = buf; for (i = 0; i < count; i++) p[i] /= n; break; }
	case LOOM_FLOAT32: { float *p = buf; for (i = 0; i < count; i++) p[i] /= (float)n; break; }
	case LOOM_FLOAT64: { double *p = buf; for (i = 0; i < count; i++) p[i] /= (double)n; break; }
	case LOOM_FLOAT16: {
		uint16_t *p = buf;
		for (i = 0; i < count; i++)
			p[i] = loom_float_to_half(loom_half_to_float(p[i]) / (float)n);
		break;
	}
	case LOOM_BFLOAT16: {
		uint16_t *p = buf;
		for (i = 0; i < count; i++)
			p[i] = loom_float_to_bf16(loom_bf16_to_float(p[i]) / (float)n);
		break;
	}
	default: break;
	}
}
