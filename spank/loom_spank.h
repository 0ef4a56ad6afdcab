/* spank/loom_spank.h: state shared by the dispatch file and the contexts. */
#ifndef LOOM_SPANK_LOOM_SPANK_H
#define LOOM_SPANK_LOOM_SPANK_H

#include <slurm/spank.h>

#include "plugstack_config.h"

#define LOOM_PREFIX "loom: "

extern struct loom_config loom_cfg;     /* plugstack.conf */
extern struct loom_opts loom_eff;       /* site defaults, then the user's options */
extern unsigned loom_user_set;          /* bit per option the user gave */

/* SLURM_SPANK_LOOM_* for the options not given (loom.c) */
int loom_env_options(int (*get)(void *, const char *, char *, int), void *ctx);

/* srun / sbatch / salloc (ctx_local.c) */
int loom_local_post_opt(spank_t sp);

/* slurmstepd (ctx_remote.c) */
int loom_remote_user_init(spank_t sp);
int loom_remote_task_init(spank_t sp);
int loom_remote_task_post_fork(spank_t sp);
int loom_remote_task_exit(spank_t sp);
void loom_remote_exit(spank_t sp);

#endif
