/* spank/launch_env.c: build and write the launch environment. */
#include "config.h"
#include "launch_env.h"

#include <stdio.h>
#include <string.h>

#include "port.h"

int loom_envlist_add(struct loom_envlist *l, const char *name, const char *value, int owner)
{
	struct loom_envvar *v = NULL;
	if (strlen(name) >= LOOM_ENV_NAME_MAX || strlen(value) >= LOOM_ENV_VALUE_MAX)
		return -1;
	for (int i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			v = &l->v[i];
	if (!v) {
		if (l->n >= LOOM_ENVLIST_MAX)
			return -1;
		v = &l->v[l->n++];
	}
	strcpy(v->name, name);
	strcpy(v->value, value);
	v->owner = owner;
	return 0;
}

const char *loom_envlist_get(const struct loom_envlist *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return l->v[i].value;
	return NULL;
}

static void add_u(struct loom_envlist *l, const char *name, unsigned long v, int owner)
{
	char buf[24];
	snprintf(buf, sizeof buf, "%lu", v);
	loom_envlist_add(l, name, buf, owner);
}

void loom_launch_env(const struct loom_config *cfg, enum loom_env_mode mode,
		     const struct loom_task_info *ti, int bound, struct loom_envlist *out)
{
	if (mode == LOOM_ENV_TORCH) {
		add_u(out, "RANK", ti->rank, LOOM_OPT_ENV);
		add_u(out, "LOCAL_RANK", ti->local_rank, LOOM_OPT_ENV);
		add_u(out, "WORLD_SIZE", ti->world_size, LOOM_OPT_ENV);
		add_u(out, "LOCAL_WORLD_SIZE", ti->local_world_size, LOOM_OPT_ENV);
		add_u(out, "NODE_RANK", ti->node_rank, LOOM_OPT_ENV);
		add_u(out, "GROUP_RANK", ti->node_rank, LOOM_OPT_ENV);
		if (ti->master_addr[0])
			loom_envlist_add(out, "MASTER_ADDR", ti->master_addr, LOOM_OPT_ENV);
		add_u(out, "MASTER_PORT",
		      (unsigned long)loom_master_port(ti->job_id, ti->step_id,
						      cfg->master_port_base, cfg->master_port_range),
		      LOOM_OPT_ENV);
	} else if (mode == LOOM_ENV_MPI) {
		/* Slurm's pmix plugin serves the job data; the shared-memory gds
		 * component of newer PMIx clients does not work with it */
		loom_envlist_add(out, "PMIX_MCA_gds", "hash", LOOM_OPT_ENV);
		if (bound)      /* loom placed the task: Open MPI must not rebind */
			loom_envlist_add(out, "OMPI_MCA_hwloc_base_binding_policy", "none",
					 LOOM_OPT_ENV);
	}
	if (mode != LOOM_ENV_NONE)
		for (int i = 0; i < cfg->n_nccl_env; i++)
			loom_envlist_add(out, cfg->nccl_env[i].key, cfg->nccl_env[i].value,
					 LOOM_OPT_NCCL_ENV);
}

int loom_env_apply(const struct loom_config *cfg, const struct loom_envlist *l,
		   const struct loom_env_ops *ops)
{
	int failed = 0;
	char cur[LOOM_ENV_VALUE_MAX + 1];
	char msg[512];

	for (int i = 0; i < l->n; i++) {
		const struct loom_envvar *v = &l->v[i];
		int enforce = v->owner == LOOM_OWNER_FORCE ||
			      loom_config_locked(cfg, (enum loom_opt_id)v->owner);
		if (!enforce && ops->get(ops->ctx, v->name, cur, sizeof cur)) {
			if (strcmp(cur, v->value) != 0) {
				snprintf(msg, sizeof msg,
					 "keeping %s=%.100s from the environment (loom would set %.100s)",
					 v->name, cur, v->value);
				ops->warn(ops->ctx, msg);
			}
			continue;
		}
		if (ops->set(ops->ctx, v->name, v->value) != 0)
			failed++;
	}
	return failed;
}
