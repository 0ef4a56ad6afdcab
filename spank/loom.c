/* spank/loom.c: SPANK entry points; dispatch to the per-context code. */
#include "config.h"

#include <slurm/spank.h>
#include <string.h>

#include "plugstack_config.h"

SPANK_PLUGIN(loom, 1);

#define LOOM_PREFIX "loom: "

static struct loom_config config;
static int user_env_mode = -1;   /* from --loom-env, -1 when not given */

static int opt_env_cb(int val, const char *optarg, int remote)
{
	int m = loom_env_mode_from_string(optarg ? optarg : "");
	if (m < 0) {
		slurm_error(LOOM_PREFIX "--loom-env='%s' is not one of torch, mpi, none",
			    optarg ? optarg : "");
		return -1;
	}
	user_env_mode = m;
	return 0;
}

static struct spank_option loom_options[] = {
	{ "loom-env", "torch|mpi|none",
	  "[loom] launch environment to write for each task (default: torch)",
	  1, 0, opt_env_cb },
	SPANK_OPTIONS_TABLE_END
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	char err[256];

	if (loom_config_parse(&config, ac, av, err, sizeof err) < 0) {
		slurm_error(LOOM_PREFIX "%s", err);
		return -1;
	}
	for (struct spank_option *o = loom_options; o->name; o++) {
		if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
			slurm_error(LOOM_PREFIX "cannot register option --%s", o->name);
			return -1;
		}
	}
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	enum loom_env_mode mode = user_env_mode >= 0 ? (enum loom_env_mode)user_env_mode
						     : config.env_mode;
	spank_setenv(sp, "LOOM_PLUGIN_VERSION", PACKAGE_VERSION, 1);
	spank_setenv(sp, "LOOM_ENV_MODE", loom_env_mode_name(mode), 1);
	return 0;
}
