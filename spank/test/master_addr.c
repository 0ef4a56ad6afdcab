/* unit test: MASTER_ADDR falls back to the NodeAddr when the node name
 * does not resolve (resolver and slurmctld replaced by tables) */
#include "config.h"
#include "../master_addr.h"
#include "../../t/tap.h"

/* names that "resolve" on the fake host */
static const char *known[] = { "n1", "10.1.0.7", "localhost", NULL };
static int rpc_calls;

static int fake_resolves(const char *host)
{
	for (int i = 0; known[i]; i++)
		if (!strcmp(known[i], host))
			return 1;
	return 0;
}

/* slurmctld's NodeAddr table */
static int fake_node_addr(const char *node, char *buf, size_t len)
{
	static const char *tab[][2] = {
		{ "n1", "n1" }, { "gpu-a01", "10.1.0.7" }, { "gpu-a02", "10.9.9.9" }, { "n2", "n2" },
	};
	rpc_calls++;
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (!strcmp(tab[i][0], node)) {
			snprintf(buf, len, "%s", tab[i][1]);
			return 0;
		}
	return -1;
}

static const struct loom_addr_ops ops = { fake_resolves, fake_node_addr };

int main(void)
{
	char out[256], note[512], small[4];
	int warn;
	plan(NO_PLAN);

	is_int(loom_master_addr("n1", &ops, out, sizeof out, note, sizeof note, &warn), 0, "n1: ok");
	is_str(out, "n1", "a name that resolves is kept");
	is_str(note, "", "no note when the name is used");
	is_int(warn, 0, "no warning");
	is_int(rpc_calls, 0, "no slurmctld query when the name resolves");

	is_int(loom_master_addr("gpu-a01", &ops, out, sizeof out, note, sizeof note, &warn), 0,
	       "gpu-a01: ok");
	is_str(out, "10.1.0.7", "a name that does not resolve: its NodeAddr");
	is_str(note, "node name gpu-a01 does not resolve here: MASTER_ADDR is its NodeAddr 10.1.0.7",
	       "the log line says why");
	is_int(warn, 0, "a NodeAddr that resolves is no warning");

	is_int(loom_master_addr("gpu-a02", &ops, out, sizeof out, note, sizeof note, &warn), 0,
	       "gpu-a02: ok");
	is_str(out, "gpu-a02", "NodeAddr that does not resolve either: the name stays");
	is_int(warn, 1, "and the user is warned");
	ok(strstr(note, "MASTER_ADDR=gpu-a02") && strstr(note, "NodeAddr in slurm.conf"),
	   "the warning names the node and what to do: %s", note);

	is_int(loom_master_addr("n2", &ops, out, sizeof out, note, sizeof note, &warn), 0, "n2: ok");
	is_str(out, "n2", "NodeAddr equal to the unresolvable name: the name");
	is_int(warn, 1, "warned");

	is_int(loom_master_addr("nowhere", &ops, out, sizeof out, note, sizeof note, &warn), 0,
	       "a node slurmctld does not know: ok");
	is_int(warn, 1, "warned");

	is_int(loom_master_addr("gpu-a01", &ops, small, sizeof small, note, sizeof note, &warn), -1,
	       "an output buffer too small is an error, not a truncated address");

	/* the real resolver: localhost resolves everywhere */
	is_int(loom_master_addr("localhost", NULL, out, sizeof out, note, sizeof note, &warn), 0,
	       "default ops: localhost");
	is_str(out, "localhost", "localhost resolves through getaddrinfo");
	done_testing();
	return exit_status();
}
