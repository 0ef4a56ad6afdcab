/* spank/launch_env.h: the variables loom writes into each task, and the
 * policy for variables the user already set. */
#ifndef LOOM_SPANK_LAUNCH_ENV_H
#define LOOM_SPANK_LAUNCH_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "plugstack_config.h"

struct loom_task_info {
	uint32_t job_id, step_id;
	uint32_t rank, world_size;              /* global */
	uint32_t local_rank, local_world_size;  /* on this node */
	uint32_t node_rank, nnodes;
	char master_addr[256];
};

#define LOOM_OWNER_FORCE (-1)   /* always written, whatever the task had */
#define LOOM_ENVLIST_MAX 96

struct loom_envvar {
	char name[LOOM_ENV_NAME_MAX];
	char value[LOOM_ENV_VALUE_MAX];
	int owner;      /* enum loom_opt_id whose lock enforces it, or LOOM_OWNER_FORCE */
};

struct loom_envlist {
	int n;
	struct loom_envvar v[LOOM_ENVLIST_MAX];
};

/* Append (or replace) NAME=VALUE. 0, or -1 when full or too long. */
int loom_envlist_add(struct loom_envlist *l, const char *name, const char *value, int owner);
const char *loom_envlist_get(const struct loom_envlist *l, const char *name);

/* The launch environment of MODE for task TI: torch variables or the MPI
 * hints, plus the site's nccl_env (not in mode none). BOUND: loom binds
 * the task's CPUs (then MPI is told not to rebind). */
void loom_launch_env(const struct loom_config *cfg, enum loom_env_mode mode,
		     const struct loom_task_info *ti, int bound, struct loom_envlist *out);

struct loom_env_ops {
	void *ctx;
	/* 1 and the value in buf when NAME is set in the task's environment */
	int (*get)(void *ctx, const char *name, char *buf, size_t len);
	int (*set)(void *ctx, const char *name, const char *value);     /* 0 when done */
	void (*warn)(void *ctx, const char *msg);
};

/* Write every variable of L. A variable the task already has with another
 * value is kept, with a warning naming it, unless its owner option is
 * locked by the site (or it is LOOM_OWNER_FORCE). Returns the number of
 * variables that could not be set. */
int loom_env_apply(const struct loom_config *cfg, const struct loom_envlist *l,
		   const struct loom_env_ops *ops);

#endif
