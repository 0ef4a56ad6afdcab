/* spank/ctx_local.c: srun, sbatch, salloc. Options were parsed by their
 * callbacks; here the checks that need them all, before anything runs. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_dir.h"
#include "job_secret.h"
#include "loom_spank.h"
#include "strbuf.h"
#include "user_options.h"

static int get_local(void *ctx, const char *name, char *buf, int len)
{
	const char *v = getenv(name);
	if (!v)
		return 0;
	snprintf(buf, (size_t)len, "%s", v);
	return 1;
}

int loom_local_post_opt(spank_t sp)
{
	char err[1200];

	if (loom_env_options(get_local, NULL) < 0)
		return -1;

	/* srun: the step's ranks authenticate each other with it */
	if (spank_context() == S_CTX_LOCAL && loom_job_secret_export(err, sizeof err) < 0) {
		slurm_error(LOOM_PREFIX "%s", err);
		return -1;
	}

	if ((loom_user_set & (1u << LOOM_OPT_GPUS_PER_TASK)) && (loom_user_set & (1u << LOOM_OPT_AFFINITY)) &&
	    loom_eff.affinity.mode == LOOM_AFF_MAP) {
		slurm_error(LOOM_PREFIX "--loom-gpus-per-task and --loom-affinity=map:... both say which GPUs a task gets: give one");
		return -1;
	}
	/* options that would silently do nothing: say so, on the user's terminal */
	char warn[LOOM_NOOP_MAX][256];
	int nw = loom_opts_noops(&loom_eff, loom_user_set, warn, LOOM_NOOP_MAX);
	for (int i = 0; i < nw; i++)
		fprintf(stderr, LOOM_PREFIX "warning: %s\n", warn[i]);
	/* %j: known here only for a step inside an existing job */
	const char *jid = getenv("SLURM_JOB_ID");
	unsigned long job = jid ? strtoul(jid, NULL, 10) : 0;
	/* an existing checkpoint directory the user cannot write fails here,
	 * before the job queues; a missing one is created on the nodes */
	if (loom_eff.ckpt_dir[0]) {
		char dir[LOOM_CKPT_PATH_MAX];
		int need_job = strstr(loom_eff.ckpt_dir, "%j") != NULL;
		if (loom_ckpt_expand(loom_eff.ckpt_dir, job, 0, "--loom-ckpt", dir, sizeof dir,
				     err, sizeof err) < 0 ||
		    ((!need_job || jid) && loom_ckpt_prepare(dir, 0, err, sizeof err) < 0)) {
			loom_log_clean(err);
			slurm_error(LOOM_PREFIX "%s", err);
			return -1;
		}
	}
	/* the cache is node-local (libloom makes it, %n differs per node):
	 * only its form is checked here */
	if (loom_eff.ckpt_cache[0]) {
		char cache[LOOM_CKPT_PATH_MAX];
		if (loom_ckpt_expand(loom_eff.ckpt_cache, job, LOOM_EXPAND_KEEP_NODE, "--loom-ckpt-cache",
				     cache, sizeof cache, err, sizeof err) < 0) {
			loom_log_clean(err);
			slurm_error(LOOM_PREFIX "%s", err);
			return -1;
		}
	}
	return 0;
}
