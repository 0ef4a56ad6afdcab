/* unit test: what rank 0 and the node leaders take from the wire in the
 * env rendezvous (runtime/boot/rendezvous.c): ranks in range, none twice,
 * a group all or nothing and with its leader, counts bounded by what is
 * missing; and the node rendezvous' socket name. */
#include "config.h"
#include "boot/rendezvous.h"
#include "../../../t/tap.h"

static struct rv_ranked ranked(int rank)
{
	struct rv_ranked r;
	memset(&r, 0, sizeof r);
	r.rank = rank;
	r.e.pid = 1000 + rank;
	snprintf(r.e.node, sizeof r.e.node, "node%d", rank / 4);
	return r;
}

static void groups(void)
{
	struct rv_table t;
	struct rv_ranked g[4] = { ranked(4), ranked(5), ranked(6), ranked(7) };
	struct rv_ranked bad[2] = { ranked(1), ranked(1) };
	struct rv_entry e = ranked(2).e;
	char why[160], miss[64];
	ok(loom_rv_table_init(&t, 8) == 0, "a table of 8");
	ok(loom_rv_take(&t, 0, &e, why, sizeof why) == 0, "rank 0's entry");
	ok(loom_rv_take(&t, 0, &e, why, sizeof why) == -1 && strstr(why, "rank 0 given twice"),
	   "rank 0 twice: %s", why);
	ok(loom_rv_take(&t, 8, &e, why, sizeof why) == -1 && strstr(why, "not in 0..7"), "rank 8 of 8: %s", why);
	ok(loom_rv_take(&t, -1, &e, why, sizeof why) == -1, "rank -1");
	ok(loom_rv_take_group(&t, 5, g, 4, why, sizeof why) == 0 && t.filled == 5,
	   "a node's group of 4, led by rank 5");
	is_int(t.tab[6].pid, 1006, "its entries land by rank");
	ok(loom_rv_take_group(&t, 4, g, 1, why, sizeof why) == -1 && strstr(why, "rank 4 given twice") && t.filled == 5,
	   "a rank of that group again: refused (%s)", why);
	ok(loom_rv_take_group(&t, 1, bad, 2, why, sizeof why) == -1 && strstr(why, "twice in one group") &&
	   t.filled == 5,
	   "a rank twice within a group: refused, nothing taken (%s)", why);
	bad[1] = ranked(2);
	ok(loom_rv_take_group(&t, 3, bad, 2, why, sizeof why) == -1 && strstr(why, "leader, rank 3, is not among") &&
	   !t.have[1] && !t.have[2], "a group without its leader: refused, nothing taken (%s)", why);
	bad[1] = ranked(9);
	ok(loom_rv_take_group(&t, 1, bad, 2, why, sizeof why) == -1 && strstr(why, "rank 9 is not in") && !t.have[1],
	   "a rank out of range: refused, nothing taken (%s)", why);
	ok(loom_rv_take_group(&t, 1, bad, 4, why, sizeof why) == -1 &&
	   strstr(why, "a group of 4 ranks, and 3 are missing"),
	   "more ranks than are missing: refused before reading them (%s)", why);
	ok(loom_rv_take_group(&t, 1, bad, 0, why, sizeof why) == -1, "an empty group: refused");
	loom_rv_missing(&t, miss, sizeof miss);
	is_str(miss, "1,2,3", "the missing ranks, listed");
	bad[1] = ranked(2);
	ok(loom_rv_take_group(&t, 2, bad, 2, why, sizeof why) == 0 && loom_rv_take(&t, 3, &e, why, sizeof why) == 0 &&
	   t.filled == t.size, "the rest, one group and one flat hello: every rank in");
	loom_rv_table_free(&t);
	loom_rv_table_init(&t, 100);
	loom_rv_missing(&t, miss, 20);
	ok(strlen(miss) < 20 && strstr(miss, ",..."), "a long list is cut short: %s", miss);
	loom_rv_table_free(&t);
}

static void names(void)
{
	char a[RV_NODE_NAME_LEN], b[RV_NODE_NAME_LEN], c[RV_NODE_NAME_LEN], d[RV_NODE_NAME_LEN];
	loom_rv_node_socket_name("n1", 29500, "n1", a);
	loom_rv_node_socket_name("n1", 29500, "n2", b);
	loom_rv_node_socket_name("n1", 29501, "n1", c);
	loom_rv_node_socket_name("n1", 29500, "n1", d);
	ok(strcmp(a, b) != 0, "two nodes of one host: two names (%s, %s)", a, b);
	ok(strcmp(a, c) != 0, "another MASTER_PORT (another job): another name");
	is_str(a, d, "the same job and node: the same name on every rank");
	ok(strlen(a) == 42 && !strncmp(a, "loom-node-", 10), "loom-node- and 32 hex digits");
}

/* the table's fan-out over rank 0's n connections: every connection has
 * one parent before it (or rank 0), each parent's child count is the
 * number that name it, rank 0 serves at most RV_FANOUT, and the depth is
 * logarithmic */
static void fanout(void)
{
	static const int sizes[] = { 1, 3, 4, 5, 15, 63, 64, 4095 };
	unsigned s;
	for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		int n = sizes[s], i, parent, children, bad = 0, direct = 0, depth = 0;
		int *named = calloc((size_t)n, sizeof *named), *kids = calloc((size_t)n, sizeof *kids);
		int *level = calloc((size_t)n, sizeof *level);
		for (i = 0; i < n; i++) {
			loom_rv_tree_place(i, n, RV_FANOUT, &parent, &children);
			kids[i] = children;
			if (parent >= i || parent < -1)
				bad++;
			else if (parent < 0)
				direct++, level[i] = 1;
			else
				named[parent]++, level[i] = level[parent] + 1;
			if (level[i] > depth)
				depth = level[i];
		}
		for (i = 0; i < n; i++)
			bad += named[i] != kids[i];
		ok(bad == 0 && direct == (n < RV_FANOUT ? n : RV_FANOUT),
		   "%d connections: each has one earlier parent, children as named, rank 0 serves %d", n, direct);
		if (n == 63)
			is_int(depth, 3, "63 connections: three levels (4 + 16 + 43)");
		if (n == 4095)
			is_int(depth, 6, "4,095 connections: six levels");
		free(named);
		free(kids);
		free(level);
	}
}

int main(void)
{
	plan(NO_PLAN);
	groups();
	names();
	fanout();
	done_testing();
	return exit_status();
}
