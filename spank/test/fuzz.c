/* fuzz-style test: random and malformed input to the hostlist, option,
 * plugstack, GPU-grant and cpu-list parsers. Every single result is
 * checked against the parser's contract (its header): an accepted value
 * lies within its documented range (and, where a small reference parser
 * here can tell, is the right value), a rejection carries a non-empty
 * message (one line unless the bad value held a newline: the messages
 * quote it) that starts with the option's label. Each parser must
 * also both accept and reject some inputs, so that the run exercised both
 * paths. Under valgrind (t1005, `make check-spank-valgrind`) or ASan: no
 * leak or overrun either. */
#include "config.h"
#include <stdlib.h>
#include <signal.h>
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

/* half of the strings short (0-11 characters: these are the ones that
 * can be valid), the others up to n - 2; one character in 16 any byte */
static void gen(char *b, size_t n, const char *alphabet)
{
	size_t len = (rnd() % 2) ? rnd() % 12 : rnd() % (n - 1), al = strlen(alphabet);
	for (size_t i = 0; i < len; i++)
		b[i] = (rnd() % 16) ? alphabet[rnd() % al] : (char)(1 + rnd() % 255);
	b[len] = '\0';
}

/* 0-5 tokens, so that whole keys and values occur */
static void gen_tok(char *b, size_t n, const char *const *tok, size_t ntok)
{
	size_t len = 0, k = rnd() % 6;
	b[0] = '\0';
	for (size_t i = 0; i < k; i++) {
		const char *t = tok[rnd() % ntok];
		if (len + strlen(t) + 1 >= n)
			break;
		strcpy(b + len, t);
		len += strlen(t);
	}
	if (len && rnd() % 8 == 0)      /* now and then one byte changed */
		b[rnd() % len] = (char)(1 + rnd() % 255);
}

enum { P_HOSTLIST, P_TASKS, P_AFFINITY, P_SIGNAL, P_GPT, P_CONFIG, P_GRANT, P_CPUSET, NP };
static const char *pname[NP] = { "hostlist", "tasks per node", "--loom-affinity",
				 "--loom-ckpt-signal", "--loom-gpus-per-task", "plugstack arguments",
				 "GPU grant", "cpu list" };
static int nacc[NP], nrej[NP], nbad[NP], nref[NP];   /* nref: against a reference */

/* one result: COND is the contract; the first violation per parser is shown */
static void check(int p, int accepted, int cond, const char *in, const char *what)
{
	if (accepted)
		nacc[p]++;
	else
		nrej[p]++;
	if (!cond && nbad[p]++ == 0)
		diag("%s: '%s' (%s): %s", pname[p], in, accepted ? "accepted" : "rejected", what);
}

/* a rejection's message: non-empty, one line (unless it quotes a value
 * that holds a newline), starting with LABEL when there is one */
static int good_msg(const char *err, const char *label, const char *in)
{
	size_t l = strlen(label);
	return strlen(err) > l && strncmp(err, label, l) == 0 && (strchr(in, '\n') || !strchr(err, '\n'));
}

/* reference for SLURM_TASKS_PER_NODE ("2(x3),1"): the count of node ID,
 * -1 when the whole string is not such a list or ID is past its end.
 * Counts and repeats are 0..1000000 (repeat 1..). */
static long ref_num(const char **p)
{
	long v = 0;
	const char *q = *p;
	if (*q < '0' || *q > '9')
		return -1;
	while (*q >= '0' && *q <= '9') {
		v = v * 10 + (*q++ - '0');
		if (v > 1000000)
			return -1;
	}
	*p = q;
	return v;
}
static long ref_tasks(const char *s, unsigned id)
{
	long node = 0, want = -1;
	const char *p = s;
	if (!*p)
		return -1;
	for (;;) {
		long c = ref_num(&p), r = 1;
		if (c < 0)
			return -1;
		if (p[0] == '(' && p[1] == 'x') {
			p += 2;
			r = ref_num(&p);
			if (r < 1 || *p++ != ')')
				return -1;
		}
		if (want < 0 && id < node + r)
			want = c;
		node += r;
		if (!*p)
			return want;
		if (*p++ != ',')
			return -1;
	}
}

/* reference for the cpu list "0-3,8,10-11" on strings of digits, ',' and
 * '-' only: items N or N-M (N <= M < LOOM_MAX_CPUS), ',' between items,
 * one trailing ',' allowed. 0 with the set in s, or -1. */
static int ref_cpus(const char *list, loom_cpuset_t *s)
{
	const char *p = list;
	loom_cpuset_zero(s);
	while (*p) {
		long a, b;
		a = ref_num(&p);
		if (a < 0 || a >= LOOM_MAX_CPUS)
			return -1;
		b = a;
		if (*p == '-') {
			p++;
			b = ref_num(&p);
			if (b < a || b >= LOOM_MAX_CPUS)
				return -1;
		}
		for (long c = a; c <= b; c++)
			loom_cpuset_set(s, (int)c);
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return 0;
}

static int only(const char *s, const char *set)
{
	return strspn(s, set) == strlen(s);
}

static const char *const tasks_tok[] = { "0", "1", "2", "16", "1000000", "1000001", "(x", "(x3)",
					  "(x0)", ")", ",", "x" };
static const char *const aff_tok[] = { "closest", "none", "verbose", "map:", "0", "7", "+", ",",
				       "1023", "1024", "15+", "x" };
static const char *const sig_tok[] = { "USR1", "usr2", "SIG", "TERM", "KILL", "9", "19", "10",
				       "64", "65", "@", "0", "65535", "65536", "x" };
static const char *const cfg_tok[] = { "env=", "mpi", "torch", "master_port_base=",
				       "master_port_range=", "lock=", "affinity", "nccl_env=",
				       "NCCL_DEBUG=WARN", "1024", "29500", "65535", "64512", "1000", ",",
				       "=", "0", "ckpt_cache", "/t/%n-%j" };
static const char *const grant_tok[] = { "0", "1", "3", "7", "8", "12", ",", "-", "GPU-", "NoDevFiles" };
static const char *const cpus_tok[] = { "0", "1", "3", "63", "64", "4095", "4096", "-", "," };

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20000;
	char buf[200], buf2[200], h[64], err[1024], fmt[8192];
	struct loom_opts o;
	struct loom_config cfg;
	struct loom_gpu_grant g;
	loom_cpuset_t cs, ref, back;

	if (getenv("LOOM_FUZZ_SEED"))
		rs = strtoull(getenv("LOOM_FUZZ_SEED"), NULL, 0);
	/* Slurm's parser logs each bad hostlist on stderr: not ours to show */
	if (!getenv("LOOM_FUZZ_VERBOSE") && !freopen("/dev/null", "w", stderr))
		return 1;
	plan(NO_PLAN);
	diag("seed 0x%llx, %d iterations", rs, iters);
	for (int i = 0; i < iters; i++) {
		int tok = i % 2;        /* every other round: whole tokens */

		/* hostlist: Slurm's parser, our wrapper. A first host is a
		 * non-empty name that fits (on a malformed list Slurm may
		 * return anything, even a name with a comma: SLURM_*NODELIST
		 * comes from Slurm, well formed). The reference: a list of plain
		 * names (letters and digits) with single commas between them
		 * has its first name first, and as many hosts as names. */
		gen(buf, sizeof buf, "n[]0123456789-,x ab");
		if (i % 4 == 0) {
			int plain = *buf && only(buf, "nxab0123456789,") && buf[0] != ',' &&
				    buf[strlen(buf) - 1] != ',' && !strstr(buf, ",,");
			size_t first_len = strcspn(buf, ",");
			int names = 1;
			for (const char *c = buf; *c; c++)
				names += *c == ',';
			nref[P_HOSTLIST] += plain;
			memset(h, 0, sizeof h);
			int rc = loom_hostlist_first(buf, h, sizeof h);
			check(P_HOSTLIST, rc == 0,
			      (rc == 0 || rc == -1) && (rc != 0 || (*h && strlen(h) < sizeof h)) &&
			      (*buf || rc == -1) &&
			      (!plain || first_len >= sizeof h ||
			       (rc == 0 && strlen(h) == first_len && !strncmp(h, buf, first_len))),
			      buf, rc == 0 ? h : "no first host");
			if (strlen(buf) < 40 && !strstr(buf, "-")) {
				int n = loom_hostlist_count(buf);
				check(P_HOSTLIST, n > 0, n >= -1 && (rc != 0 || n >= 1) && (!plain || n == names),
				      buf, "host count");
			}
		}
		{
			unsigned id = rnd() % 8;
			int n = loom_tasks_on_node(buf, id);
			check(P_TASKS, n >= 0, n >= -1 && n <= 1000000, buf, "tasks on a node");
			if (tok)
				gen_tok(buf2, sizeof buf2, tasks_tok, sizeof tasks_tok / sizeof *tasks_tok);
			else
				gen(buf2, sizeof buf2, "0123456789(x),");
			n = loom_tasks_on_node(buf2, id);
			long want = ref_tasks(buf2, id);
			nref[P_TASKS] += want >= 0;
			check(P_TASKS, n >= 0, n >= -1 && n <= 1000000 && (want < 0 || n == want), buf2,
			      "tasks on a node (against the reference)");
		}

		/* --loom-affinity */
		if (tok)
			gen_tok(buf, sizeof buf, aff_tok, sizeof aff_tok / sizeof *aff_tok);
		else
			gen(buf, sizeof buf, "closestnonverbosemap:0123456789+,");
		loom_opts_init(&o);
		err[0] = '\0';
		if (loom_opt_parse(LOOM_OPT_AFFINITY, buf, &o, "--loom-affinity", err, sizeof err) == 0) {
			const struct loom_affinity_spec *a = &o.affinity;
			int good = a->mode == LOOM_AFF_NONE || a->mode == LOOM_AFF_CLOSEST || a->mode == LOOM_AFF_MAP;
			good = good && (a->mode == LOOM_AFF_MAP ? a->nmap >= 1 && a->nmap <= LOOM_MAP_MAX : a->nmap == 0);
			for (int e = 0; good && e < a->nmap; e++) {
				good = a->map_ngpu[e] >= 1 && a->map_ngpu[e] <= LOOM_MAP_GPUS_MAX;
				for (int k = 0; good && k < a->map_ngpu[e]; k++) {
					good = a->map_gpu[e][k] >= 0 && a->map_gpu[e][k] <= 1023;
					for (int j = 0; good && j < k; j++)
						good = a->map_gpu[e][j] != a->map_gpu[e][k];
				}
			}
			check(P_AFFINITY, 1, good, buf, "mode, map entries of 1-16 distinct GPUs 0-1023");
		} else {
			check(P_AFFINITY, 0, good_msg(err, "--loom-affinity", buf), buf, "message");
		}

		/* --loom-ckpt-signal: 1-64 but KILL and STOP; @0-65535, default 60 s */
		if (tok)
			gen_tok(buf, sizeof buf, sig_tok, sizeof sig_tok / sizeof *sig_tok);
		else
			gen(buf, sizeof buf, "USRTEMINGsig0123456789@");
		err[0] = '\0';
		if (loom_opt_parse(LOOM_OPT_CKPT_SIGNAL, buf, &o, "--loom-ckpt-signal", err, sizeof err) == 0)
			check(P_SIGNAL, 1, o.ckpt_signal >= 1 && o.ckpt_signal <= 64 && o.ckpt_signal != SIGKILL &&
			      o.ckpt_signal != SIGSTOP && o.ckpt_signal_seconds >= 0 &&
			      o.ckpt_signal_seconds <= 65535 && (strchr(buf, '@') || o.ckpt_signal_seconds == 60),
			      buf, "signal and seconds");
		else
			check(P_SIGNAL, 0, good_msg(err, "--loom-ckpt-signal", buf), buf, "message");

		/* --loom-gpus-per-task: a whole number 1-64 */
		gen(buf, sizeof buf, "0123456789-");
		if (tok)
			snprintf(buf, sizeof buf, "%d", (int)(rnd() % 70) - 2);
		err[0] = '\0';
		{
			long want = -1;
			if (*buf && only(buf, "0123456789") && strlen(buf) < 6)
				want = atol(buf);
			if (want < 1 || want > 64)
				want = -1;
			nref[P_GPT]++;
			if (loom_opt_parse(LOOM_OPT_GPUS_PER_TASK, buf, &o, "--loom-gpus-per-task", err, sizeof err) == 0)
				check(P_GPT, 1, o.gpus_per_task == want, buf, "the number written");
			else
				check(P_GPT, 0, want == -1 && good_msg(err, "--loom-gpus-per-task", buf), buf, "message");
		}

		/* plugstack arguments: ports within 1024-65535; else one line */
		if (tok)
			gen_tok(buf, sizeof buf, cfg_tok, sizeof cfg_tok / sizeof *cfg_tok);
		else
			gen(buf, sizeof buf, "envaffinitylockmaster_port_basenccl_env=NCCL_,0123456789");
		char *av[2] = { buf, "env=mpi" };
		err[0] = '\0';
		if (loom_config_parse(&cfg, 1 + (int)(rnd() % 2), av, err, sizeof err) == 0)
			check(P_CONFIG, 1, cfg.master_port_base >= 1024 && cfg.master_port_range >= 1 &&
			      cfg.master_port_base + cfg.master_port_range - 1 <= 65535, buf, "port range");
		else
			check(P_CONFIG, 0, good_msg(err, "", buf), buf, "message");

		/* GPU grant on an 8-GPU node: numbers 0-7, each with a name */
		if (tok)
			gen_tok(buf, sizeof buf, grant_tok, sizeof grant_tok / sizeof *grant_tok);
		else
			gen(buf, sizeof buf, "0123456789,-GPU");
		err[0] = '\0';
		{
			const char *vis = (rnd() % 2) ? buf : NULL;
			if (loom_gpu_grant_parse(buf, vis, 8, &g, err, sizeof err) == 0) {
				int good = g.n >= 0 && g.n <= LOOM_GRANT_MAX;
				for (int k = 0; good && k < g.n; k++)
					good = g.physical[k] >= 0 && g.physical[k] < 8 && g.visible[k][0];
				if (!*buf && !vis)      /* nothing granted explicitly: all 8 */
					for (int k = 0; good && k < 8; k++)
						good = g.n == 8 && g.physical[k] == k;
				check(P_GRANT, 1, good, buf, "GPUs 0-7");
			} else {
				check(P_GRANT, 0, good_msg(err, "", buf), buf, "message");
			}
		}

		/* cpu list: the reference's set when it is a plain list; any
		 * accepted list formats back to a list that parses to the same set */
		if (tok)
			gen_tok(buf, sizeof buf, cpus_tok, sizeof cpus_tok / sizeof *cpus_tok);
		else
			gen(buf, sizeof buf, "0123456789,-");
		{
			int rc = loom_cpuset_parse(buf, &cs);
			int good = rc == 0 || rc == -1;
			if (only(buf, "0123456789,-") && ref_cpus(buf, &ref) == 0) {
				nref[P_CPUSET]++;
				good = good && rc == 0 && loom_cpuset_equal(&cs, &ref);
			}
			if (rc == 0)
				good = good && loom_cpuset_format(&cs, fmt, sizeof fmt) >= 0 &&
				       only(fmt, "0123456789,-") && loom_cpuset_parse(fmt, &back) == 0 &&
				       loom_cpuset_equal(&cs, &back);
			check(P_CPUSET, rc == 0, good, buf, "the set of the list");
		}
	}
	/* the parsers with a reference must have met it */
	static const int has_ref[NP] = { [P_HOSTLIST] = 1, [P_TASKS] = 1, [P_GPT] = 1, [P_CPUSET] = 1 };
	for (int p = 0; p < NP; p++)
		ok(nbad[p] == 0 && nacc[p] > 0 && nrej[p] > 0 && (!has_ref[p] || nref[p] > 0),
		   "%s: %d accepted, %d rejected (%d against the reference), %d outside the contract",
		   pname[p], nacc[p], nrej[p], nref[p], nbad[p]);
	done_testing();
	return exit_status();
}
