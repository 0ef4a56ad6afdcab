/* unit test: MASTER_PORT derivation */
#include "config.h"
#include "../port.h"
#include "../../t/tap.h"

int main(void)
{
	plan(NO_PLAN);
	int inrange = 1, distinct = 1, spread = 0, first = loom_master_port(1, 0, 29500, 1000);
	for (uint32_t job = 1; job < 200; job++) {
		static unsigned char seen[1000];
		memset(seen, 0, sizeof seen);
		for (uint32_t step = 0; step < 1000; step++) {
			int p = loom_master_port(job, step, 29500, 1000);
			if (p < 29500 || p >= 30500)
				inrange = 0;
			else if (seen[p - 29500]++)
				distinct = 0;
		}
		if (loom_master_port(job, 0, 29500, 1000) != first)
			spread = 1;
	}
	ok(inrange, "every port lies in [base, base + range)");
	ok(distinct, "1000 steps of one job get 1000 different ports");
	ok(spread, "different jobs start at different ports");
	/* Literal ports, worked out by hand from the formula in port.c:
	 * port = base + (mix32(job) % range + step % range) % range, where
	 * mix32 is x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15;
	 * x *= 0x846ca68b; x ^= x >> 16 (32-bit). mix32(4242) = 3772222267,
	 * mix32(77) = 170770769, mix32(7) = 2492178918, mix32(0) = 0. The
	 * same numbers on every node, every build, every host byte order:
	 * the ranks of a step meet on them. */
	is_int(loom_master_port(4242, 0, 29500, 1000), 29767, "job 4242 step 0: 29500 + 267");
	is_int(loom_master_port(4242, 3, 29500, 1000), 29770, "job 4242 step 3: the step id is added");
	is_int(loom_master_port(4242, 999, 29500, 1000), 29766, "job 4242 step 999: wraps inside the range");
	is_int(loom_master_port(4242, 1000, 29500, 1000), 29767, "step 1000 is step 0 again (range 1000)");
	is_int(loom_master_port(77, 2, 29500, 1000), 30271, "job 77 step 2");
	is_int(loom_master_port(0, 0, 29500, 1000), 29500, "job 0 step 0: the base");
	is_int(loom_master_port(99, 0xfffffffbU, 40000, 1), 40000, "range 1: always the base");
	is_int(loom_master_port(7, 0xfffffffcU, 60000, 5536), 64674,
	       "special step id 0xfffffffc: 60000 + (4582 + 92) %% 5536");
	done_testing();
	return exit_status();
}
