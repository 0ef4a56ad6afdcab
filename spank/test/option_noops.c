/* unit test: options that would silently do nothing are named */
#include "config.h"
#include "../options.h"
#include "../../t/tap.h"

#define BIT(id) (1u << (id))

int main(void)
{
	struct loom_opts o;
	char w[LOOM_NOOP_MAX][256], err[512];
	plan(NO_PLAN);

	loom_opts_init(&o);
	is_int(loom_opts_noops(&o, 0, w, LOOM_NOOP_MAX), 0, "defaults, nothing given: no warning");

	o.gpus_per_task = 2;
	is_int(loom_opts_noops(&o, BIT(LOOM_OPT_GPUS_PER_TASK), w, LOOM_NOOP_MAX), 1,
	       "--loom-gpus-per-task with affinity none (the default): one warning");
	is_str(w[0], "--loom-gpus-per-task=2 does nothing with --loom-affinity=none: GPUs are given "
	       "to tasks only when loom binds them (add --loom-affinity=closest)", "it says why and what to add");
	is_int(loom_opts_noops(&o, 0, w, LOOM_NOOP_MAX), 0,
	       "the same value from the site's defaults (not given by the user): no warning");
	ok(loom_parse_affinity("closest", &o.affinity, "--loom-affinity", err, sizeof err) == 0, "closest");
	is_int(loom_opts_noops(&o, BIT(LOOM_OPT_GPUS_PER_TASK) | BIT(LOOM_OPT_AFFINITY), w, LOOM_NOOP_MAX),
	       0, "--loom-gpus-per-task with --loom-affinity=closest: no warning");

	loom_opts_init(&o);
	ok(loom_parse_ckpt_signal("USR1@90", &o.ckpt_signal, &o.ckpt_signal_seconds, "x", err,
				  sizeof err) == 0, "USR1@90");
	is_int(loom_opts_noops(&o, BIT(LOOM_OPT_CKPT_SIGNAL), w, LOOM_NOOP_MAX), 1,
	       "--loom-ckpt-signal without --loom-ckpt: one warning");
	ok(strstr(w[0], "--loom-ckpt-signal does nothing without --loom-ckpt=DIR") != NULL, "%s", w[0]);
	strcpy(o.ckpt_dir, "/scratch/ck");
	is_int(loom_opts_noops(&o, BIT(LOOM_OPT_CKPT_SIGNAL) | BIT(LOOM_OPT_CKPT), w, LOOM_NOOP_MAX), 0,
	       "with --loom-ckpt: no warning");
	is_int(loom_opts_noops(&o, BIT(LOOM_OPT_CKPT_SIGNAL), w, LOOM_NOOP_MAX), 0,
	       "with the directory from the site's default: no warning");

	/* the cache is a tier in front of the checkpoint directory */
	loom_opts_init(&o);
	strcpy(o.ckpt_cache, "/tmp/x-%n-%j");
	is_int(loom_opts_noops(&o, BIT(LOOM_OPT_CKPT_CACHE), w, LOOM_NOOP_MAX), 1,
	       "--loom-ckpt-cache without --loom-ckpt: one warning");
	is_str(w[0], "--loom-ckpt-cache does nothing without --loom-ckpt=DIR: the cache sits in front "
	       "of the shared checkpoint directory, so LOOM_CKPT_CACHE is not set (add --loom-ckpt=DIR)",
	       "it says why and what to add");
	is_int(loom_opts_noops(&o, 0, w, LOOM_NOOP_MAX), 0,
	       "the cache from the site's defaults (not given by the user): no warning");
	strcpy(o.ckpt_dir, "/scratch/ck");
	is_int(loom_opts_noops(&o, BIT(LOOM_OPT_CKPT_CACHE) | BIT(LOOM_OPT_CKPT), w, LOOM_NOOP_MAX), 0,
	       "with --loom-ckpt: no warning");
	is_int(loom_opts_noops(&o, BIT(LOOM_OPT_CKPT_CACHE), w, LOOM_NOOP_MAX), 0,
	       "with the directory from the site's default: no warning");

	loom_opts_init(&o);
	ok(loom_parse_affinity("verbose,none", &o.affinity, "--loom-affinity", err, sizeof err) == 0,
	   "verbose,none parses");
	is_int(loom_opts_noops(&o, BIT(LOOM_OPT_AFFINITY), w, LOOM_NOOP_MAX), 1, "verbose,none: warned");
	ok(strstr(w[0], "prints nothing") != NULL, "%s", w[0]);

	/* all at once, and a cap on how many are written */
	o.gpus_per_task = 1;
	o.ckpt_signal = 10;
	strcpy(o.ckpt_cache, "/tmp/c");
	unsigned all = BIT(LOOM_OPT_GPUS_PER_TASK) | BIT(LOOM_OPT_CKPT_SIGNAL) | BIT(LOOM_OPT_AFFINITY) |
		       BIT(LOOM_OPT_CKPT_CACHE);
	is_int(loom_opts_noops(&o, all, w, LOOM_NOOP_MAX), 4, "four no-ops: four lines");
	is_int(loom_opts_noops(&o, all, w, 1), 1, "at most max lines");
	done_testing();
	return exit_status();
}
