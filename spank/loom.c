/* spank/loom.c: SPANK entry points, only dispatching: the options to
 * user_options.c, then to the per-context code (ctx_local.c: srun,
 * sbatch, salloc; ctx_remote.c: slurmstepd). */
#include "config.h"

#include "loom_spank.h"
#include "user_options.h"

SPANK_PLUGIN(loom, 1);

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	/* slurmd, prolog/epilog: nothing to do, and never fail a node there */
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_REMOTE && ctx != S_CTX_ALLOCATOR)
		return 0;
	return loom_user_options_init(sp, ac, av);
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	if (!loom_active)
		return 0;
	if (spank_context() == S_CTX_LOCAL || spank_context() == S_CTX_ALLOCATOR)
		return loom_local_post_opt(sp);
	if (spank_remote(sp))
		return loom_remote_post_opt(sp);
	return 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	return loom_active && spank_remote(sp) ? loom_remote_user_init(sp) : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	return loom_active && spank_remote(sp) ? loom_remote_task_init(sp) : 0;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	return loom_active && spank_remote(sp) ? loom_remote_task_post_fork(sp) : 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	return loom_active && spank_remote(sp) ? loom_remote_task_exit(sp) : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	if (loom_active && spank_remote(sp))
		loom_remote_exit(sp);
	return 0;
}
