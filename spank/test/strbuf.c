/* unit test: the string builder and the log cleaner of spank/strbuf.c,
 * and the parser quirks they came with (a list valid only up to the node
 * asked for, a cpuset "-0") */
#include "config.h"
#include <string.h>
#include "../hostlist.h"
#include "../strbuf.h"
#include "../topology.h"
#include "../../t/tap.h"

int main(void)
{
	char b[8], guard[4] = "zzz", out[64];
	struct loom_sb sb;
	loom_cpuset_t cs;

	plan(NO_PLAN);
	loom_sb_init(&sb, b, sizeof b);
	is_int(loom_sb_add(&sb, "%s", "abc"), 0, "an append that fits: 0");
	is_int(loom_sb_add(&sb, ",%d", 12), 0, "a second one: 0");
	is_str(b, "abc,12", "the text is both");
	is_int(loom_sb_add(&sb, ",%d", 345), -1, "one that does not fit: -1");
	is_str(b, "abc,12", "the buffer keeps what it had: no cut value");
	is_str(guard, "zzz", "nothing written past the buffer");
	is_int(loom_sb_add(&sb, "x"), -1, "after a refusal every later append is refused (no holes)");
	is_str(b, "abc,12", "still the same");
	loom_sb_init(&sb, b, sizeof b);
	is_int(loom_sb_add(&sb, "1234567"), 0, "exactly cap-1 characters fit");
	is_int(loom_sb_add(&sb, "8"), -1, "one more does not");

	loom_str_clean(out, sizeof out, "job=\033[31mred\a\n", 40);
	is_str(out, "job=?[31mred??", "control characters become ?");
	loom_str_clean(out, sizeof out, "0123456789012345678901234567890123456789012345", 40);
	is_str(out, "0123456789012345678901234567890123456789...", "cut at 40 characters, marked ...");
	loom_str_clean(out, 8, "0123456789", 40);
	is_str(out, "0123...", "and never beyond the destination");
	loom_str_clean(out, sizeof out, "caf\xc3\xa9", 40);
	is_str(out, "caf??", "file content: non-ASCII bytes shown as ?");
	{
		char s[] = "--loom-ckpt='/x\033]0;t\a\xc3\xa9'";
		loom_log_clean(s);
		is_str(s, "--loom-ckpt='/x?]0;t?\xc3\xa9'", "a message in place: controls as ?, UTF-8 kept");
	}

	/* SLURM_TASKS_PER_NODE-style lists are checked whole */
	is_int(loom_tasks_on_node("2,abc", 0), -1, "'2,abc' is refused, also for node 0");
	is_int(loom_tasks_on_node("2(x2),1", 0), 2, "'2(x2),1' node 0: 2");
	is_int(loom_tasks_on_node("2(x2),1", 2), 1, "'2(x2),1' node 2: 1");
	is_int(loom_tasks_on_node("2(x2),1,", 0), -1, "a trailing comma is refused");
	is_int(loom_tasks_on_node("2(x2),1(x", 0), -1, "a broken tail is refused for node 0 too");
	is_int(loom_tasks_on_node("1", 3), -1, "a node past the list: -1");

	/* cpu lists: a number first, no sign, no space */
	is_int(loom_cpuset_parse("-0", &cs), -1, "cpuset '-0' refused");
	is_int(loom_cpuset_parse("0,-1", &cs), -1, "cpuset '0,-1' refused");
	is_int(loom_cpuset_parse("1- 3", &cs), -1, "cpuset '1- 3' refused");
	is_int(loom_cpuset_parse("0-2,5", &cs), 0, "cpuset '0-2,5' parses");
	is_int(loom_cpuset_count(&cs), 4, "4 CPUs");
	done_testing();
	return exit_status();
}
