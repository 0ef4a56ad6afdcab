/* fuzz-style test: random and malformed input to the hostlist, option,
 * plugstack, GPU-grant and cpu-list parsers. Passing means no crash (and,
 * under valgrind / ASan via `make check-spank-asan`, no leak or overrun);
 * every accepted value is also checked to be sane. */
#include "config.h"
#include <stdlib.h>
#include "../affinity.h"
#include "../hostlist.h"
#include "../plugstack_config.h"
#include "../../t/tap.h"

static unsigned long long rs = 0x9e3779b97f4a7c15ULL;
static unsigned rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (unsigned)(rs >> 32);
}

static void gen(char *b, size_t n, const char *alphabet)
{
	size_t len = rnd() % (n - 1), al = strlen(alphabet);
	for (size_t i = 0; i < len; i++)
		b[i] = (rnd() % 16) ? alphabet[rnd() % al] : (char)(1 + rnd() % 255);
	b[len] = '\0';
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20000;
	char buf[200], h[64], err[1024];
	struct loom_opts o;
	struct loom_config cfg;
	struct loom_gpu_grant g;
	loom_cpuset_t cs;
	int sane = 1;

	if (getenv("LOOM_FUZZ_SEED"))
		rs = strtoull(getenv("LOOM_FUZZ_SEED"), NULL, 0);
	/* Slurm's parser logs each bad hostlist on stderr: not ours to show */
	if (!getenv("LOOM_FUZZ_VERBOSE") && !freopen("/dev/null", "w", stderr))
		return 1;
	plan(NO_PLAN);
	diag("seed 0x%llx, %d iterations", rs, iters);
	for (int i = 0; i < iters; i++) {
		gen(buf, sizeof buf, "n[]0123456789-,x ab");
		if (i % 4 == 0) {       /* hostlist: Slurm's parser, our wrapper */
			int rc = loom_hostlist_first(buf, h, sizeof h);
			if (rc == 0 && (!*h || strlen(h) >= sizeof h))
				sane = 0;
			if (strlen(buf) < 40 && !strstr(buf, "-"))
				loom_hostlist_count(buf);
		}
		loom_tasks_on_node(buf, rnd() % 8);
		gen(buf, sizeof buf, "closestnonverbosemap:0123456789+,");
		loom_opts_init(&o);
		if (loom_opt_parse(LOOM_OPT_AFFINITY, buf, &o, "--loom-affinity", err, sizeof err) == 0) {
			for (int e = 0; e < o.affinity.nmap; e++)
				if (o.affinity.map_ngpu[e] < 1 || o.affinity.map_ngpu[e] > LOOM_MAP_GPUS_MAX)
					sane = 0;
		} else if (strncmp(err, "--loom-affinity", 15) != 0) {
			sane = 0;
		}
		gen(buf, sizeof buf, "USRTEMINGsig0123456789@");
		if (loom_opt_parse(LOOM_OPT_CKPT_SIGNAL, buf, &o, "--loom-ckpt-signal", err, sizeof err) == 0 &&
		    (o.ckpt_signal < 1 || o.ckpt_signal > 64 || o.ckpt_signal == 9 ||
		     o.ckpt_signal_seconds < 0 || o.ckpt_signal_seconds > 65535))
			sane = 0;
		gen(buf, sizeof buf, "0123456789-");
		if (loom_opt_parse(LOOM_OPT_GPUS_PER_TASK, buf, &o, "--x", err, sizeof err) == 0 &&
		    (o.gpus_per_task < 1 || o.gpus_per_task > 64))
			sane = 0;
		gen(buf, sizeof buf, "envaffinitylockmaster_port_basenccl_env=NCCL_,0123456789");
		char *av[2] = { buf, "env=mpi" };
		if (loom_config_parse(&cfg, 1 + (int)(rnd() % 2), av, err, sizeof err) == 0 &&
		    (cfg.master_port_base < 1024 || cfg.master_port_base + cfg.master_port_range - 1 > 65535))
			sane = 0;
		gen(buf, sizeof buf, "0123456789,-GPU");
		if (loom_gpu_grant_parse(buf, (rnd() % 2) ? buf : NULL, 8, &g, err, sizeof err) == 0)
			for (int k = 0; k < g.n; k++)
				if (g.physical[k] < 0 || g.physical[k] >= 8)
					sane = 0;
		gen(buf, sizeof buf, "0123456789,-");
		loom_cpuset_parse(buf, &cs);
	}
	ok(1, "%d rounds of random input: no crash", iters);
	ok(sane, "every accepted value was within its documented range");
	done_testing();
	return exit_status();
}
