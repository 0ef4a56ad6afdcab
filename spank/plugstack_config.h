/* spank/plugstack_config.h: the site admin's arguments from plugstack.conf */
#ifndef LOOM_SPANK_PLUGSTACK_CONFIG_H
#define LOOM_SPANK_PLUGSTACK_CONFIG_H

#include <stddef.h>

enum loom_env_mode { LOOM_ENV_TORCH, LOOM_ENV_MPI, LOOM_ENV_NONE };

struct loom_config {
	enum loom_env_mode env_mode;   /* default for --loom-env */
};

/* Fill cfg from plugstack arguments (key=value). On a bad argument returns
 * -1 and writes a one-line message naming it into err. */
int loom_config_parse(struct loom_config *cfg, int argc, char **argv,
		      char *err, size_t errlen);

/* "torch" -> LOOM_ENV_TORCH, ...; -1 when unknown */
int loom_env_mode_from_string(const char *s);
const char *loom_env_mode_name(enum loom_env_mode m);

#endif
