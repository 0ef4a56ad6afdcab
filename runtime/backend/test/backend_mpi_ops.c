/* unit test: the MPI backend's user-defined reductions for float16 and
 * bfloat16 compute in fp32 and round once per combining step, for every
 * op, against the same arithmetic done here on loom's own conversions. */
#include "config.h"
#include "backend/backend.h"
#include "../../../t/tap.h"

#include <math.h>
#include <stdint.h>

static float to_f(loom_dtype_t dt, uint16_t h)
{
	return dt == LOOM_FLOAT16 ? loom_half_to_float(h) : loom_bf16_to_float(h);
}
static uint16_t from_f(loom_dtype_t dt, float f)
{
	return dt == LOOM_FLOAT16 ? loom_float_to_half(f) : loom_float_to_bf16(f);
}

static float ref(loom_op_t op, float in, float io)
{
	switch (op) {
	case LOOM_SUM: case LOOM_AVG: return in + io;
	case LOOM_PROD: return in * io;
	case LOOM_MIN: return in < io ? in : io;
	default: return in > io ? in : io;
	}
}

int main(void)
{
	static const loom_dtype_t dts[] = { LOOM_FLOAT16, LOOM_BFLOAT16 };
	enum { N = 1000 };
	uint16_t in[N], io[N], want[N];
	MPI_Datatype t = MPI_UINT16_T;
	int di, op, len = N, i;

	plan(NO_PLAN);
	for (di = 0; di < 2; di++) {
		loom_dtype_t dt = dts[di];
		for (op = 0; op < LOOM_OP_COUNT; op++) {
			MPI_User_function *fn = loom_mpi_user_fn(dt, (loom_op_t)op);
			int bad = 0;
			ok(fn != NULL, "%s %s has a user function", loom_dtype_name(dt),
			   loom_op_name((loom_op_t)op));
			if (!fn)
				continue;
			for (i = 0; i < N; i++) {
				/* values across the range, signs mixed, some ties */
				float a = (float)((i * 37) % 200 - 100) / 8.0f;
				float b = (float)((i * 53) % 190 - 95) / 3.0f;
				in[i] = from_f(dt, a);
				io[i] = from_f(dt, b);
				want[i] = from_f(dt, ref((loom_op_t)op, to_f(dt, in[i]), to_f(dt, io[i])));
			}
			fn(in, io, &len, &t);
			for (i = 0; i < N; i++)
				bad += io[i] != want[i];
			is_int(bad, 0, "%s %s: inout = in op inout in fp32, rounded once",
			       loom_dtype_name(dt), loom_op_name((loom_op_t)op));
		}
	}
	{
		/* fp32 accumulation inside one step: 2048 + 1 + 1 in fp16 would
		 * lose both ones when added one at a time in fp16; here each step
		 * is one fp32 add and one rounding, so 2048 + 1 rounds to even
		 * (2048) but 2048 + 3 gives 2052 (the nearest fp16) */
		MPI_User_function *fn = loom_mpi_user_fn(LOOM_FLOAT16, LOOM_SUM);
		uint16_t a = loom_float_to_half(3.0f), b = loom_float_to_half(2048.0f);
		int one = 1;
		fn(&a, &b, &one, &t);
		ok(loom_half_to_float(b) == 2052.0f, "fp16 2048 + 3 = 2052 (one rounding)");
		a = loom_float_to_bf16(1e-3f);
		b = loom_float_to_bf16(1.0f);
		fn = loom_mpi_user_fn(LOOM_BFLOAT16, LOOM_SUM);
		fn(&a, &b, &one, &t);
		ok(loom_bf16_to_float(b) == 1.0f, "bf16 1 + 0.001 = 1 (below half an ulp)");
	}
	ok(loom_mpi_user_fn(LOOM_FLOAT32, LOOM_SUM) == NULL, "fp32 uses MPI's own ops");
	ok(loom_mpi_user_fn(LOOM_INT8, LOOM_MAX) == NULL, "int8 uses MPI's own ops");
	done_testing();
	return exit_status();
}
