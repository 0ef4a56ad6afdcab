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
	is_int(loom_master_port(4242, 3, 29500, 1000), loom_master_port(4242, 3, 29500, 1000),
	       "deterministic: every node computes the same port");
	ok(loom_master_port(4242, 0, 29500, 1000) != loom_master_port(4242, 1, 29500, 1000),
	   "two steps of one job differ");
	is_int(loom_master_port(99, 0xfffffffbU, 40000, 1), 40000, "range 1: always the base");
	int p = loom_master_port(7, 0xfffffffcU, 60000, 5536);
	ok(p >= 60000 && p <= 65535, "special step ids stay in range (%d)", p);
	done_testing();
	return exit_status();
}
