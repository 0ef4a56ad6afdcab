/* spank/plugstack_config.h: the site admin's arguments from plugstack.conf */
#ifndef LOOM_SPANK_PLUGSTACK_CONFIG_H
#define LOOM_SPANK_PLUGSTACK_CONFIG_H

#include <stddef.h>

#include "options.h"

#define LOOM_NCCL_ENV_MAX 32
#define LOOM_ENV_NAME_MAX 64
#define LOOM_ENV_VALUE_MAX 256

struct loom_kv {
	char key[LOOM_ENV_NAME_MAX];
	char value[LOOM_ENV_VALUE_MAX];
};

struct loom_config {
	enum loom_env_mode env_mode;    /* default for --loom-env (= defaults.env) */
	struct loom_opts defaults;      /* defaults for every user option */
	unsigned locked;                /* bit (1u << enum loom_opt_id) */
	/* the value the site gave each user option, NULL when none: points
	 * into the argv parsed, for the help texts built while it lives */
	const char *site_value[LOOM_OPT_COUNT];
	int master_port_base;           /* MASTER_PORT in [base, base + range) */
	int master_port_range;
	int n_nccl_env;
	struct loom_kv nccl_env[LOOM_NCCL_ENV_MAX];
	char topology_root[1024];       /* "/", a directory (fake sysfs) or an .xml file */
	char topology_cache[1024];      /* node topology cache (topo_cache.h), "none": off */
	char nvml_library[1024];        /* dlopen()ed when present; "none" disables */
	/* LOOM_FLIGHT_DIR: flight_dir= a shared directory (%j: job id), kept;
	 * "none": not set; empty: node-local under flight_local_base, removed
	 * after a step whose tasks on the node all exited 0 */
	char flight_dir[1024];
	char flight_local_base[1024];   /* default /var/tmp */
	char munge_key[1024];           /* the job key's source (job_key.h), root only */
};

/* Fill cfg from the defaults in settings.c, then from plugstack
 * arguments (key=value; the keys are those of settings.c). On a bad argument returns
 * -1 and writes a one-line message naming it into err. */
int loom_config_parse(struct loom_config *cfg, int argc, char **argv,
		      char *err, size_t errlen);

static inline int loom_config_locked(const struct loom_config *cfg, enum loom_opt_id id)
{
	return (cfg->locked >> id) & 1u;
}

/* the value of a site nccl_env key, NULL when the site does not set it */
const char *loom_config_nccl(const struct loom_config *cfg, const char *key);

/* 1 when s is a valid environment variable name */
int loom_env_name_valid(const char *s, size_t len);

#endif
