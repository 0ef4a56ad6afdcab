/* unit test: user option values and plugstack arguments; every bad value
 * gets a message naming the option, the value and what is allowed */
#include "config.h"
#include <signal.h>
#include "../plugstack_config.h"
#include "../../t/tap.h"

static char err[1024];
static struct loom_opts o;

static int P(enum loom_opt_id id, const char *v)
{
	err[0] = '\0';
	loom_opts_init(&o);
	return loom_opt_parse(id, v, &o, "--x", err, sizeof err);
}

static int C(struct loom_config *c, const char *a, const char *b)
{
	char *argv[2] = { (char *)a, (char *)b };
	err[0] = '\0';
	return loom_config_parse(c, b ? 2 : 1, argv, err, sizeof err);
}

int main(void)
{
	struct loom_config cfg;
	plan(NO_PLAN);

	/* --loom-affinity */
	is_int(P(LOOM_OPT_AFFINITY, "closest"), 0, "closest accepted");
	is_int(o.affinity.mode, LOOM_AFF_CLOSEST, "closest mode");
	is_int(o.affinity.verbose, 0, "not verbose");
	is_int(P(LOOM_OPT_AFFINITY, "verbose"), 0, "verbose alone accepted");
	ok(o.affinity.mode == LOOM_AFF_CLOSEST && o.affinity.verbose, "verbose alone means verbose,closest");
	is_int(P(LOOM_OPT_AFFINITY, "verbose,none"), 0, "verbose,none accepted");
	ok(o.affinity.mode == LOOM_AFF_NONE && o.affinity.verbose, "verbose,none");
	is_int(P(LOOM_OPT_AFFINITY, "verbose,map:0+1,3"), 0, "verbose,map with groups");
	ok(o.affinity.mode == LOOM_AFF_MAP && o.affinity.nmap == 2 && o.affinity.map_ngpu[0] == 2 &&
	   o.affinity.map_gpu[0][1] == 1 && o.affinity.map_gpu[1][0] == 3 && o.affinity.verbose,
	   "map:0+1,3 is two entries: {0,1} and {3}");
	const char *bad_aff[] = { "", "closer", "closest,none", "map:", "map:a", "map:0,", "map:0+0",
				  "map:1,,2", "verbose,verbose", "closest,", "map:99999", "map:0-3" };
	for (size_t i = 0; i < sizeof bad_aff / sizeof *bad_aff; i++) {
		is_int(P(LOOM_OPT_AFFINITY, bad_aff[i]), -1, "affinity '%s' rejected", bad_aff[i]);
		ok(strstr(err, "--x='") == err && strstr(err, bad_aff[i]), "message names the option and value: %s", err);
	}
	P(LOOM_OPT_AFFINITY, "closer");
	like(err, "closest, none, verbose", "message lists the allowed values");

	/* --loom-gpus-per-task */
	is_int(P(LOOM_OPT_GPUS_PER_TASK, "2"), 0, "gpus-per-task=2");
	is_int(o.gpus_per_task, 2, "value kept");
	const char *bad_gpt[] = { "0", "65", "-1", "1.5", "", "two", "2x" };
	for (size_t i = 0; i < sizeof bad_gpt / sizeof *bad_gpt; i++) {
		is_int(P(LOOM_OPT_GPUS_PER_TASK, bad_gpt[i]), -1, "gpus-per-task '%s' rejected", bad_gpt[i]);
		like(err, "is not a whole number from 1 to 64", "message says what is allowed");
	}

	/* --loom-ckpt */
	is_int(P(LOOM_OPT_CKPT, "/scratch/me/ckpt"), 0, "absolute ckpt dir accepted");
	is_str(o.ckpt_dir, "/scratch/me/ckpt", "ckpt dir kept");
	is_int(P(LOOM_OPT_CKPT, "ckpt"), -1, "relative ckpt dir rejected");
	like(err, "is not an absolute path", "message says absolute");
	is_int(P(LOOM_OPT_CKPT, ""), -1, "empty ckpt dir rejected");
	like(err, "is empty", "message says empty");
	is_int(P(LOOM_OPT_CKPT, "/a\nb"), -1, "newline in ckpt dir rejected");

	/* --loom-ckpt-cache: the same checks as --loom-ckpt; %n and %j are
	 * kept as given (expanded later: %j by the plugin, %n by libloom) */
	is_int(P(LOOM_OPT_CKPT_CACHE, "/tmp/x-%n-%j"), 0, "cache dir with %%n and %%j accepted");
	is_str(o.ckpt_cache, "/tmp/x-%n-%j", "cache dir kept as given");
	is_str(o.ckpt_dir, "", "and not taken for the checkpoint directory");
	is_int(P(LOOM_OPT_CKPT_CACHE, ""), -1, "empty cache dir rejected");
	is_str(err, "--x='' is empty: give an absolute directory, e.g. --x=/tmp/ckpt-%j",
	       "message says empty and gives an example");
	is_int(P(LOOM_OPT_CKPT_CACHE, "local/ck"), -1, "relative cache dir rejected");
	is_str(err, "--x='local/ck' is not an absolute path: give /path/to/dir (e.g. --x=/tmp/ckpt-%j)",
	       "message says absolute and gives an example");
	is_int(P(LOOM_OPT_CKPT_CACHE, "/a\tb"), -1, "control character in cache dir rejected");
	{
		char longdir[LOOM_CKPT_PATH_MAX + 1];
		memset(longdir, 'a', sizeof longdir - 1);
		longdir[0] = '/';
		longdir[sizeof longdir - 1] = '\0';
		is_int(P(LOOM_OPT_CKPT_CACHE, longdir), -1, "a cache dir of %d characters rejected",
		       LOOM_CKPT_PATH_MAX);
		like(err, "is longer than 1023 characters", "message gives the limit");
		longdir[LOOM_CKPT_PATH_MAX - 1] = '\0';
		is_int(P(LOOM_OPT_CKPT_CACHE, longdir), 0, "one of %d accepted", LOOM_CKPT_PATH_MAX - 1);
	}

	/* --loom-ckpt-signal */
	is_int(P(LOOM_OPT_CKPT_SIGNAL, "USR1@120"), 0, "USR1@120");
	ok(o.ckpt_signal == SIGUSR1 && o.ckpt_signal_seconds == 120, "signal and seconds");
	is_int(P(LOOM_OPT_CKPT_SIGNAL, "sigterm"), 0, "sigterm, any case, SIG prefix");
	ok(o.ckpt_signal == SIGTERM && o.ckpt_signal_seconds == LOOM_CKPT_SIGNAL_DEFAULT_SECONDS,
	   "default seconds");
	is_int(P(LOOM_OPT_CKPT_SIGNAL, "10@0"), 0, "a number");
	is_int(o.ckpt_signal, 10, "number kept");
	is_str(loom_signal_name(SIGUSR2), "USR2", "name of USR2");
	is_int(P(LOOM_OPT_CKPT_SIGNAL, "USR2@auto"), 0, "USR2@auto");
	ok(o.ckpt_signal == SIGUSR2 && o.ckpt_signal_seconds == LOOM_CKPT_SIGNAL_AUTO,
	   "@auto: the lead time from the save times");
	is_int(P(LOOM_OPT_CKPT_SIGNAL, "USR2@AUTO"), 0, "@AUTO, any case");
	const char *bad_sig[] = { "", "KILL", "9", "STOP", "19", "65", "FOO", "USR1@", "USR1@-1",
				  "USR1@70000", "@10", "USR1@1@2", "USR1@autox", "USR1@auto@1",
				  "@auto" };
	for (size_t i = 0; i < sizeof bad_sig / sizeof *bad_sig; i++) {
		is_int(P(LOOM_OPT_CKPT_SIGNAL, bad_sig[i]), -1, "ckpt-signal '%s' rejected", bad_sig[i]);
		like(err, "SIG[@SECONDS|@auto]", "message gives the syntax");
	}

	/* --loom-env */
	is_int(P(LOOM_OPT_ENV, "mpi"), 0, "env=mpi");
	is_int(P(LOOM_OPT_ENV, "MPI"), -1, "env=MPI rejected");
	like(err, "is not one of torch, mpi, none", "env message");

	/* option names for lock= */
	is_int(loom_opt_from_key("gpus-per-task", 13), LOOM_OPT_GPUS_PER_TASK, "dash form");
	is_int(loom_opt_from_key("loom-ckpt-signal", 16), LOOM_OPT_CKPT_SIGNAL, "loom- prefix");
	is_int(loom_opt_from_key("gpus", 4), -1, "unknown key");
	is_int(loom_opt_from_key("loom-ckpt-cache", 15), LOOM_OPT_CKPT_CACHE, "loom-ckpt-cache");
	is_int(loom_opt_from_key("ckpt_cache", 10), LOOM_OPT_CKPT_CACHE, "ckpt_cache");
	is_str(loom_opt_key(LOOM_OPT_CKPT_CACHE), "ckpt_cache", "its plugstack key");
	is_str(loom_opt_user_name(LOOM_OPT_CKPT_CACHE), "loom-ckpt-cache", "its option name");

	/* plugstack */
	is_int(C(&cfg, "affinity=verbose,closest", "gpus_per_task=2"), 0, "site defaults");
	ok(cfg.defaults.affinity.mode == LOOM_AFF_CLOSEST && cfg.defaults.affinity.verbose &&
	   cfg.defaults.gpus_per_task == 2, "defaults land in cfg.defaults");
	is_int(C(&cfg, "lock=env,gpus-per-task", NULL), 0, "lock list");
	ok(loom_config_locked(&cfg, LOOM_OPT_ENV) && loom_config_locked(&cfg, LOOM_OPT_GPUS_PER_TASK) &&
	   !loom_config_locked(&cfg, LOOM_OPT_AFFINITY), "locked exactly env and gpus_per_task");
	is_int(C(&cfg, "lock=env,colour", NULL), -1, "unknown lock name");
	like(err, "'colour' is not one of env, affinity", "names the bad lock entry");
	like(err, "ckpt_signal, ckpt_cache, join, nccl_env", "and lists ckpt_cache and join among the lockable");
	is_int(C(&cfg, "lock=", NULL), -1, "empty lock");
	like(err, "ckpt_signal, ckpt_cache, join, nccl_env", "the empty lock message lists ckpt_cache and join too");
	is_int(C(&cfg, "lock=ckpt_cache", NULL), 0, "lock=ckpt_cache");
	ok(loom_config_locked(&cfg, LOOM_OPT_CKPT_CACHE) && !loom_config_locked(&cfg, LOOM_OPT_CKPT),
	   "locks the cache and not the checkpoint directory");
	is_int(C(&cfg, "lock=ckpt", NULL), 0, "lock=ckpt");
	ok(!loom_config_locked(&cfg, LOOM_OPT_CKPT_CACHE), "does not lock the cache");
	is_int(C(&cfg, "ckpt_cache=/local/ck-%n/%j", "ckpt=/shared/ck/%j"), 0, "site ckpt_cache default");
	is_str(cfg.defaults.ckpt_cache, "/local/ck-%n/%j", "lands in cfg.defaults");
	is_str(cfg.defaults.ckpt_dir, "/shared/ck/%j", "beside the checkpoint directory");
	is_int(C(&cfg, "ckpt_cache=local", NULL), -1, "relative site ckpt_cache");
	like(err, "plugstack argument ckpt_cache='local' is not an absolute path", "names it");
	is_int(C(&cfg, "ckpt_cache=", NULL), -1, "empty site ckpt_cache");
	like(err, "plugstack argument ckpt_cache='' is empty", "names it");
	is_int(C(&cfg, "nccl_env=NCCL_IB_HCA==mlx5_0,NCCL_DEBUG=WARN", "nccl_env=NCCL_DEBUG=INFO"), 0, "nccl_env");
	is_int(cfg.n_nccl_env, 2, "two variables");
	is_str(loom_config_nccl(&cfg, "NCCL_IB_HCA"), "=mlx5_0", "value may contain =");
	is_str(loom_config_nccl(&cfg, "NCCL_DEBUG"), "INFO", "a later value wins");
	const char *bad_nccl[] = { "nccl_env=", "nccl_env=NCCL_X", "nccl_env=1X=2", "nccl_env=A=1,",
				   "nccl_env=A B=1", "nccl_env==1" };
	for (size_t i = 0; i < sizeof bad_nccl / sizeof *bad_nccl; i++) {
		is_int(C(&cfg, bad_nccl[i], NULL), -1, "%s rejected", bad_nccl[i]);
		like(err, "is not KEY=VALUE", "nccl_env message");
	}
	is_int(C(&cfg, "master_port_base=40000", "master_port_range=100"), 0, "port range");
	ok(cfg.master_port_base == 40000 && cfg.master_port_range == 100, "port range kept");
	is_int(C(&cfg, NULL ? NULL : "master_port_base=80", NULL), -1, "port below 1024");
	like(err, "master_port_base='80' is not a port number from 1024 to 65535", "port message");
	is_int(C(&cfg, "master_port_base=65000", "master_port_range=1000"), -1, "range past 65535");
	like(err, "reach past port 65535", "range message");
	is_int(C(&cfg, "master_port_range=0", NULL), -1, "range 0");
	is_int(C(&cfg, "topology_root=/tmp/x.xml", "nvml_library=none"), 0, "paths");
	is_str(cfg.topology_root, "/tmp/x.xml", "topology_root kept");
	is_int(C(&cfg, "topology_root=", NULL), -1, "empty topology_root");
	ok(!strcmp(cfg.topology_cache, "/var/lib/loom/topology.xml"), "topology_cache default");
	is_int(C(&cfg, "topology_cache=none", NULL), 0, "topology_cache=none");
	is_str(cfg.topology_cache, "none", "topology_cache none kept");
	is_int(C(&cfg, "topology_cache=cache.xml", NULL), -1, "relative topology_cache");
	like(err, "topology_cache='cache.xml' must be an absolute path or none", "topology_cache message");
	is_int(C(&cfg, "topology_root=/x", NULL), 0, "flight defaults");
	ok(!cfg.flight_dir[0] && !strcmp(cfg.flight_local_base, "/var/tmp"),
	   "no flight_dir, flight_local_base /var/tmp");
	is_int(C(&cfg, "flight_dir=/shared/fl/%j", "flight_local_base=/scratch"), 0, "flight paths");
	ok(!strcmp(cfg.flight_dir, "/shared/fl/%j") && !strcmp(cfg.flight_local_base, "/scratch"),
	   "flight paths kept");
	is_int(C(&cfg, "flight_dir=none", NULL), 0, "flight_dir=none");
	is_int(C(&cfg, "flight_dir=fl/%j", NULL), -1, "relative flight_dir");
	like(err, "flight_dir='fl/%j' must be an absolute path or none", "names it");
	is_int(C(&cfg, "flight_local_base=none", NULL), -1, "flight_local_base is a path");
	is_int(C(&cfg, "flight_local_base=tmp", NULL), -1, "relative flight_local_base");
	like(err, "flight_local_base='tmp' must be an absolute path", "names it");
	is_int(C(&cfg, "affinity=nearest", NULL), -1, "bad site affinity");
	like(err, "plugstack argument affinity='nearest'", "site message names the argument");
	is_int(C(&cfg, "ckpt_signal=USR1@auto", NULL), 0, "site ckpt_signal=USR1@auto");
	is_int(C(&cfg, "ckpt_signal=KILL", NULL), -1, "bad site ckpt_signal");
	like(err, "plugstack argument ckpt_signal='KILL'", "names it");
	is_int(C(&cfg, "gpus=2", NULL), -1, "unknown argument");
	like(err, "unknown plugstack argument 'gpus'", "names it");
	like(err, "ckpt_signal, ckpt_cache, join, master_port_base", "the known list has ckpt_cache and join");
	{
		struct loom_opts o;
		loom_opts_init(&o);
		ok(!o.join, "no join by default");
		is_int(loom_opt_parse(LOOM_OPT_JOIN, "", &o, "--loom-join", err, sizeof err), 0, "--loom-join alone");
		ok(o.join && o.join_step == 0, "joins step 0");
		is_int(loom_opt_parse(LOOM_OPT_JOIN, "3", &o, "--loom-join", err, sizeof err), 0, "--loom-join=3");
		ok(o.join && o.join_step == 3, "joins step 3");
		is_int(loom_opt_parse(LOOM_OPT_JOIN, "batch", &o, "--loom-join", err, sizeof err), -1,
		       "--loom-join=batch refused");
		like(err, "--loom-join='batch' is not a step id", "names it");
	}
	done_testing();
	return exit_status();
}
