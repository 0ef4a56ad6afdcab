/* unit test: the variables of each mode, and the keep/lock policy */
#include "config.h"
#include "../launch_env.h"
#include "../../t/tap.h"

static struct loom_envlist task_env;    /* what the task has */
static int warnings;
static char last_warning[512];

static int get(void *c, const char *n, char *b, size_t l)
{
	const char *v = loom_envlist_get(&task_env, n);
	if (!v)
		return 0;
	snprintf(b, l, "%s", v);
	return 1;
}
static int set(void *c, const char *n, const char *v) { return loom_envlist_add(&task_env, n, v, 0); }
static void warn(void *c, const char *m) { warnings++; snprintf(last_warning, sizeof last_warning, "%s", m); }

int main(void)
{
	struct loom_config cfg;
	char *args[] = { "nccl_env=NCCL_DEBUG=WARN,NCCL_SOCKET_IFNAME=ib0" };
	struct loom_task_info ti = { .job_id = 77, .step_id = 2, .rank = 2, .world_size = 3,
				     .local_rank = 0, .local_world_size = 1, .node_rank = 1, .nnodes = 2 };
	struct loom_envlist l;
	struct loom_env_ops ops = { NULL, get, set, warn };
	char err[256];

	plan(NO_PLAN);
	strcpy(ti.master_addr, "n1");
	loom_config_parse(&cfg, 1, args, err, sizeof err);
	memset(&l, 0, sizeof l);
	loom_launch_env(&cfg, LOOM_ENV_TORCH, &ti, 0, &l);
	is_str(loom_envlist_get(&l, "RANK"), "2", "RANK");
	is_str(loom_envlist_get(&l, "LOCAL_RANK"), "0", "LOCAL_RANK");
	is_str(loom_envlist_get(&l, "WORLD_SIZE"), "3", "WORLD_SIZE");
	is_str(loom_envlist_get(&l, "LOCAL_WORLD_SIZE"), "1", "LOCAL_WORLD_SIZE");
	is_str(loom_envlist_get(&l, "NODE_RANK"), "1", "NODE_RANK");
	is_str(loom_envlist_get(&l, "GROUP_RANK"), "1", "GROUP_RANK");
	is_str(loom_envlist_get(&l, "MASTER_ADDR"), "n1", "MASTER_ADDR");
	/* default master_port_base 29500, range 1000; job 77, step 2:
	 * 29500 + (mix32(77) % 1000 + 2) % 1000 = 29500 + (769 + 2), worked
	 * out by hand from the formula in port.c (see spank/test/port.c) */
	is_str(loom_envlist_get(&l, "MASTER_PORT"), "30271", "MASTER_PORT from job and step");
	is_str(loom_envlist_get(&l, "NCCL_DEBUG"), "WARN", "site nccl_env");
	is_str(loom_envlist_get(&l, "NCCL_SOCKET_IFNAME"), "ib0", "site nccl_env 2");

	memset(&l, 0, sizeof l);
	loom_launch_env(&cfg, LOOM_ENV_MPI, &ti, 1, &l);
	ok(!loom_envlist_get(&l, "RANK") && !loom_envlist_get(&l, "MASTER_ADDR"), "mpi: no torch variables");
	is_str(loom_envlist_get(&l, "OMPI_MCA_hwloc_base_binding_policy"), "none", "mpi: do not rebind a bound task");
	is_str(loom_envlist_get(&l, "NCCL_DEBUG"), "WARN", "mpi: site nccl_env too");
	memset(&l, 0, sizeof l);
	loom_launch_env(&cfg, LOOM_ENV_NONE, &ti, 0, &l);
	is_int(l.n, 0, "none: nothing");

	/* the user's own RANK is kept, with a warning; the rest is written */
	memset(&l, 0, sizeof l);
	loom_launch_env(&cfg, LOOM_ENV_TORCH, &ti, 0, &l);
	memset(&task_env, 0, sizeof task_env);
	loom_envlist_add(&task_env, "RANK", "5", 0);
	loom_envlist_add(&task_env, "WORLD_SIZE", "3", 0);       /* same value: silent */
	warnings = 0;
	is_int(loom_env_apply(&cfg, &l, &ops), 0, "applied");
	is_str(loom_envlist_get(&task_env, "RANK"), "5", "user RANK kept");
	is_int(warnings, 1, "one warning");
	like(last_warning, "keeping RANK=5", "warning names the variable");
	is_str(loom_envlist_get(&task_env, "MASTER_ADDR"), "n1", "others written");

	/* locked: the site's value wins */
	char *args2[] = { "lock=env" };
	struct loom_config locked;
	loom_config_parse(&locked, 1, args2, err, sizeof err);
	memset(&task_env, 0, sizeof task_env);
	loom_envlist_add(&task_env, "RANK", "5", 0);
	warnings = 0;
	loom_env_apply(&locked, &l, &ops);
	is_str(loom_envlist_get(&task_env, "RANK"), "2", "lock=env: RANK enforced");
	is_int(warnings, 0, "no warning when enforced");
	done_testing();
	return exit_status();
}
