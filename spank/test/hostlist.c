/* unit test: MASTER_ADDR comes from Slurm's hostlist parser through
 * loom_hostlist_first(); tasks per node from SLURM_STEP_TASKS_PER_NODE */
#include "config.h"
#include "../hostlist.h"
#include "../../t/tap.h"

int main(void)
{
	char h[64];
	plan(NO_PLAN);
	struct { const char *list, *first; int count; } c[] = {
		{ "n1", "n1", 1 },
		{ "n[1-3,7],gpu-[01-04]", "n1", 8 },
		{ "gpu-[01-04],n[1-3]", "gpu-01", 7 },
		{ "node[007-010]", "node007", 4 },
		{ "a,b,c", "a", 3 },
		{ "rack1-n[3-4]", "rack1-n3", 2 },
	};
	for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
		is_int(loom_hostlist_first(c[i].list, h, sizeof h), 0, "'%s' parses", c[i].list);
		is_str(h, c[i].first, "first host of '%s'", c[i].list);
		is_int(loom_hostlist_count(c[i].list), c[i].count, "'%s' has %d hosts", c[i].list, c[i].count);
	}
	is_int(loom_hostlist_first("", h, sizeof h), -1, "empty list");
	is_int(loom_hostlist_first(NULL, h, sizeof h), -1, "NULL list");
	is_int(loom_hostlist_first("averyveryverylonghostname", h, 8), -1, "name longer than the buffer");

	is_int(loom_tasks_on_node("2,1", 0), 2, "-N2 -n3: node 0 has 2");
	is_int(loom_tasks_on_node("2,1", 1), 1, "-N2 -n3: node 1 has 1");
	is_int(loom_tasks_on_node("2,1", 2), -1, "no node 2");
	is_int(loom_tasks_on_node("4(x3),2", 2), 4, "4(x3): node 2 has 4");
	is_int(loom_tasks_on_node("4(x3),2", 3), 2, "node 3 has 2");
	const char *bad[] = { "", "x", "2(x)", "2(3)", "2(x0)", "2,", "2(x2", "2)" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		is_int(loom_tasks_on_node(bad[i], 0), -1, "'%s' is malformed", bad[i]);
	done_testing();
	return exit_status();
}
