/* spank/settings.h: the one table of loom's settings: every plugstack.conf
 * argument and every --loom-* option, with its syntax, default and a
 * one-line description. The parser (plugstack_config.c), the option
 * names (options.c) and the --loom-* help texts (user_options.c) read it;
 * contrib/plugstack.conf.sample, loom(8) and README.md must agree with it
 * (t/t0013-settings-agree.t compares them, spank/test/settings dumps it). */
#ifndef LOOM_SPANK_SETTINGS_H
#define LOOM_SPANK_SETTINGS_H

#include <stddef.h>

#include "options.h"

struct loom_setting {
	const char *key;        /* plugstack key: "env", "master_port_base" */
	/* the user option whose site default this key sets ("loom-env"), NULL
	 * for a site-only key; opt: its enum loom_opt_id, -1 when the key is
	 * no name lock= takes (nccl_env has an id but no option) */
	const char *option;
	int opt;
	const char *syntax;     /* of the value: "torch|mpi|none", "N", "DIR" */
	/* the default: a value, parsed as the site's before its arguments, or
	 * NULL when not set; dflt_doc: in words when no value says it */
	const char *dflt;
	const char *dflt_doc;
	const char *what;       /* one line, no period */
};

extern const struct loom_setting loom_settings[];
extern const size_t loom_n_settings;

/* the setting of plugstack key KEY (LEN characters), NULL when unknown */
const struct loom_setting *loom_setting_find(const char *key, size_t len);
/* the setting of user option ID (enum loom_opt_id), NULL when none */
const struct loom_setting *loom_setting_of_opt(int id);
/* the default as documented: dflt, else dflt_doc; NULL when none */
const char *loom_setting_default(const struct loom_setting *s);
/* "key1, key2, ..." into buf: every key (LOCKABLE 0), or the names
 * lock= takes (1: the settings with an enum loom_opt_id) */
void loom_setting_keys(int lockable, char *buf, size_t len);

/* the help text of the user option of setting S ("[loom] what (default:
 * ...)"), with the default in effect under the site's configuration CFG */
struct loom_config;
void loom_option_usage(const struct loom_setting *s, const struct loom_config *cfg,
		       char *buf, size_t len);

#endif
