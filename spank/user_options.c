/* spank/user_options.c: option state of the step and its two sources,
 * the --loom-* callbacks and SLURM_SPANK_LOOM_* (see user_options.h). */
#include "config.h"
#include "user_options.h"

#include <stdio.h>
#include <string.h>

#include "loom_spank.h"
#include "settings.h"
#include "strbuf.h"

struct loom_config loom_cfg;
struct loom_opts loom_eff;
unsigned loom_user_set;
int loom_active;

int loom_user_option_set(enum loom_opt_id id, const char *value, const char *var)
{
	char err[512], label[64];
	const char *name = loom_opt_user_name(id);

	if (!name)
		name = "?";
	if (var)
		snprintf(label, sizeof label, "%s", var);
	else
		snprintf(label, sizeof label, "--%s", name);
	if (loom_config_locked(&loom_cfg, id)) {
		if (var)
			slurm_error(LOOM_PREFIX "%s: --%s is locked by the site (plugstack.conf lock=%s): unset %s",
				    var, name, loom_opt_key(id), var);
		else
			slurm_error(LOOM_PREFIX "%s is locked by the site (plugstack.conf lock=%s): remove it",
				    label, loom_opt_key(id));
		return -1;
	}
	if (loom_opt_parse(id, value ? value : "", &loom_eff, label, err, sizeof err) < 0) {
		loom_log_clean(err);    /* it quotes what the user gave */
		slurm_error(LOOM_PREFIX "%s", err);
		return -1;
	}
	loom_user_set |= 1u << id;
	return 0;
}

/* (Slurm's own form of such variables,
 * SLURM_SPANK__SLURM_SPANK_OPTION_loom_loom_env, works too: Slurm turns it
 * into the option.) */
int loom_env_options(int (*get)(void *, const char *, char *, int), void *ctx)
{
	char var[64], val[LOOM_CKPT_PATH_MAX + 8];
	for (int id = 0; id < LOOM_OPT_NCCL_ENV; id++) {
		const char *name = loom_opt_user_name((enum loom_opt_id)id);
		size_t i;
		if (loom_user_set & (1u << id))
			continue;
		strcpy(var, "SLURM_SPANK_");
		for (i = 0; name[i] && 12 + i < sizeof var - 1; i++)
			var[12 + i] = name[i] == '-' ? '_' : (char)(name[i] - ('a' <= name[i] && name[i] <= 'z' ? 32 : 0));
		var[12 + i] = '\0';
		if (!get(ctx, var, val, (int)sizeof val))
			continue;
		if (loom_user_option_set((enum loom_opt_id)id, val, var) < 0)
			return -1;
	}
	return 0;
}

static int opt_cb(int id, const char *optarg, int remote)
{
	if (!loom_active)
		return 0;
	return loom_user_option_set((enum loom_opt_id)id, optarg, NULL);
}

/* The --loom-* options, built from the table of settings at load time:
 * the help that srun --help prints says the site's effective default.
 * Static: Slurm may keep pointers to them. */
static struct spank_option loom_options[LOOM_OPT_NCCL_ENV + 1];
static char loom_usage[LOOM_OPT_NCCL_ENV][512];

int loom_user_options_init(spank_t sp, int ac, char **av)
{
	char err[512];

	if (loom_config_parse(&loom_cfg, ac, av, err, sizeof err) < 0) {
		loom_log_clean(err);
		slurm_error(LOOM_PREFIX "%s", err);
		return -1;
	}
	loom_eff = loom_cfg.defaults;
	loom_user_set = 0;
	loom_active = 1;
	for (int id = 0; id < LOOM_OPT_NCCL_ENV; id++) {
		const struct loom_setting *s = loom_setting_of_opt(id);
		struct spank_option *o = &loom_options[id];
		loom_option_usage(s, &loom_cfg, loom_usage[id], sizeof loom_usage[id]);
		*o = (struct spank_option){ (char *)s->option, (char *)s->syntax, loom_usage[id],
					    id == LOOM_OPT_JOIN ? 2 : 1, id, opt_cb };
		if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
			slurm_error(LOOM_PREFIX "cannot register option --%s", o->name);
			return -1;
		}
	}
	return 0;
}
