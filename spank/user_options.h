/* spank/user_options.h: the options of this job step: the site's
 * plugstack.conf arguments, then the user's --loom-* options and, for
 * those not given, SLURM_SPANK_LOOM_* from the environment. */
#ifndef LOOM_SPANK_USER_OPTIONS_H
#define LOOM_SPANK_USER_OPTIONS_H

#include <slurm/spank.h>

#include "plugstack_config.h"

extern struct loom_config loom_cfg;     /* plugstack.conf */
extern struct loom_opts loom_eff;       /* site defaults, then the user's options */
extern unsigned loom_user_set;          /* bit (1u << enum loom_opt_id) per option the user gave */
extern int loom_active;                 /* loom_user_options_init succeeded in this context */

/* Parse the plugstack arguments, start from the site's defaults with no
 * user option set, and register the --loom-* options with Slurm. 0, or
 * -1 after logging the reason. */
int loom_user_options_init(spank_t sp, int ac, char **av);

/* The user sets option ID to VALUE, on the command line (VAR NULL) or
 * through the environment variable VAR: refused when the site locks the
 * option or VALUE is bad, else parsed into loom_eff and marked in
 * loom_user_set. 0, or -1 after logging the reason. */
int loom_user_option_set(enum loom_opt_id id, const char *value, const char *var);

/* SLURM_SPANK_LOOM_ENV, SLURM_SPANK_LOOM_AFFINITY, ...: each option the
 * user did not give is set from its variable when GET (reading the
 * caller's environment: 1 and the value in buf, or 0 when unset) finds
 * it. 0, or -1 after logging the reason. */
int loom_env_options(int (*get)(void *ctx, const char *name, char *buf, int len), void *ctx);

#endif
