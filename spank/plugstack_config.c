/* spank/plugstack_config.c: parse the plugin's arguments in plugstack.conf */
#include "plugstack_config.h"

#include <stdio.h>
#include <string.h>

static const char *const env_mode_names[] = {
	[LOOM_ENV_TORCH] = "torch",
	[LOOM_ENV_MPI] = "mpi",
	[LOOM_ENV_NONE] = "none",
};

int loom_env_mode_from_string(const char *s)
{
	for (size_t i = 0; i < sizeof env_mode_names / sizeof env_mode_names[0]; i++)
		if (strcmp(s, env_mode_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *loom_env_mode_name(enum loom_env_mode m)
{
	return env_mode_names[m];
}

int loom_config_parse(struct loom_config *cfg, int argc, char **argv,
		      char *err, size_t errlen)
{
	cfg->env_mode = LOOM_ENV_TORCH;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		if (!eq) {
			snprintf(err, errlen, "plugstack argument '%s' is not key=value", arg);
			return -1;
		}
		size_t klen = (size_t)(eq - arg);
		const char *val = eq + 1;
		if (klen == 3 && strncmp(arg, "env", 3) == 0) {
			int m = loom_env_mode_from_string(val);
			if (m < 0) {
				snprintf(err, errlen,
					 "plugstack argument env='%s' is not one of torch, mpi, none", val);
				return -1;
			}
			cfg->env_mode = (enum loom_env_mode)m;
		} else {
			snprintf(err, errlen,
				 "unknown plugstack argument '%.*s' (known: env)", (int)klen, arg);
			return -1;
		}
	}
	return 0;
}
