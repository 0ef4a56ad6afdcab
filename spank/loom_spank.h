/* spank/loom_spank.h: what the dispatch file (loom.c) calls in each
 * context, and the prefix of every line loom.so logs. */
#ifndef LOOM_SPANK_LOOM_SPANK_H
#define LOOM_SPANK_LOOM_SPANK_H

#include <slurm/spank.h>

#define LOOM_PREFIX "loom: "

/* srun / sbatch / salloc (ctx_local.c) */
int loom_local_post_opt(spank_t sp);

/* slurmstepd (ctx_remote.c) */
int loom_remote_post_opt(spank_t sp);
int loom_remote_user_init(spank_t sp);
int loom_remote_task_init(spank_t sp);
int loom_remote_task_post_fork(spank_t sp);
int loom_remote_task_exit(spank_t sp);
void loom_remote_exit(spank_t sp);

#endif
