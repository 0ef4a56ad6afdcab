/* unit test: the table of settings (spank/settings.c) is whole: one
 * setting per user option, names that follow from the keys, defaults the
 * parser takes, a parser for every site key, help texts that say the
 * site's default. Also the table's printer for t/t0013-settings-agree.t:
 *   settings --dump             key TAB option TAB syntax TAB default TAB what
 *   settings --usage [ARG...]   option TAB syntax TAB help under plugstack ARGs
 * ("-" for a missing field). */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "../settings.h"
#include "../plugstack_config.h"
#include "../../t/tap.h"

static const char *or_dash(const char *s)
{
	return s ? s : "-";
}

static int dump(void)
{
	for (size_t i = 0; i < loom_n_settings; i++) {
		const struct loom_setting *s = &loom_settings[i];
		printf("%s\t%s\t%s\t%s\t%s\n", s->key, or_dash(s->option), s->syntax,
		       or_dash(loom_setting_default(s)), s->what);
	}
	return 0;
}

static int usage(int argc, char **argv)
{
	static struct loom_config cfg;
	char err[512], help[512];
	if (loom_config_parse(&cfg, argc, argv, err, sizeof err) < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	for (size_t i = 0; i < loom_n_settings; i++) {
		const struct loom_setting *s = &loom_settings[i];
		if (!s->option)
			continue;
		loom_option_usage(s, &cfg, help, sizeof help);
		printf("%s\t%s\t%s\n", s->option, s->syntax, help);
	}
	return 0;
}

static int has(const char *s, const char *part)
{
	return strstr(s, part) != NULL;
}

static void usage_under(const char *arg, enum loom_opt_id id, char *help, size_t len)
{
	static struct loom_config cfg;
	char err[256];
	char *argv[1] = { (char *)arg };
	if (loom_config_parse(&cfg, arg ? 1 : 0, argv, err, sizeof err) < 0) {
		snprintf(help, len, "parse: %s", err);
		return;
	}
	loom_option_usage(loom_setting_of_opt(id), &cfg, help, len);
}

int main(int argc, char **argv)
{
	static struct loom_config cfg;
	char err[512], buf[512];

	if (argc > 1 && strcmp(argv[1], "--dump") == 0)
		return dump();
	if (argc > 1 && strcmp(argv[1], "--usage") == 0)
		return usage(argc - 2, argv + 2);
	plan(NO_PLAN);

	ok(loom_n_settings >= 15, "the table has every setting");
	for (size_t i = 0; i < loom_n_settings; i++) {
		const struct loom_setting *s = &loom_settings[i];
		int dup = 0;
		for (size_t j = 0; j < i; j++)
			dup |= strcmp(loom_settings[j].key, s->key) == 0;
		ok(!dup, "%s: one entry", s->key);
		ok(s->syntax && s->what && !strchr(s->what, '\t') && !strchr(s->what, '\n') &&
		   s->what[strlen(s->what) - 1] != '.', "%s: syntax and a one-line description", s->key);
		ok(!(s->dflt && s->dflt_doc), "%s: a default value or words, not both", s->key);
		if (s->option) {
			char name[64];
			snprintf(name, sizeof name, "loom-%s", s->key);
			for (char *p = name; *p; p++)
				if (*p == '_')
					*p = '-';
			is_str(s->option, name, "%s: the option is --loom- and the key with dashes", s->key);
			ok(s->opt >= 0 && s->opt < LOOM_OPT_NCCL_ENV, "%s: a user option's id", s->key);
		} else {
			/* a key with a parser does not say "not handled" even for a bad value */
			snprintf(buf, sizeof buf, "%s=", s->key);
			char *av[1] = { buf };
			loom_config_parse(&cfg, 1, av, err, sizeof err);
			ok(!has(err, "not handled") && !has(err, "unknown"), "%s: the parser knows it (%s)",
			   s->key, err);
		}
	}
	for (int id = 0; id < LOOM_OPT_COUNT; id++) {
		const struct loom_setting *s = loom_setting_of_opt(id);
		ok(s && (s->option != NULL) == (id < LOOM_OPT_NCCL_ENV), "option id %d has its setting", id);
	}

	is_int(loom_config_parse(&cfg, 0, NULL, err, sizeof err), 0, "the table's defaults parse");
	is_int(cfg.master_port_base, 29500, "master_port_base from the table");
	is_int(cfg.master_port_range, 1000, "master_port_range from the table");
	is_str(cfg.topology_cache, "/var/lib/loom/topology.xml", "topology_cache from the table");
	is_str(cfg.flight_local_base, "/var/tmp", "flight_local_base from the table");
	is_int(cfg.env_mode, LOOM_ENV_TORCH, "env from the table");

	loom_setting_keys(1, buf, sizeof buf);
	is_str(buf, "env, affinity, gpus_per_task, ckpt, ckpt_signal, ckpt_cache, join, nccl_env",
	       "the names lock= takes");
	ok(has(loom_setting_find("lock", 4)->what, buf), "lock='s description lists them");

	usage_under(NULL, LOOM_OPT_ENV, buf, sizeof buf);
	is_str(buf, "[loom] launch environment to write for each task (default: torch)",
	       "help: the built-in default");
	usage_under("env=mpi", LOOM_OPT_ENV, buf, sizeof buf);
	ok(has(buf, "(default: mpi, set by the site)"), "help: the site's default (%s)", buf);
	usage_under("lock=env", LOOM_OPT_ENV, buf, sizeof buf);
	ok(has(buf, "(default: torch, locked by the site)"), "help: a locked built-in default (%s)", buf);
	usage_under("ckpt=/shared/ck", LOOM_OPT_CKPT, buf, sizeof buf);
	ok(has(buf, "(default: /shared/ck, set by the site)"), "help: a site default where none is built in");
	usage_under(NULL, LOOM_OPT_CKPT, buf, sizeof buf);
	ok(!has(buf, "(default:"), "help: no default where none is (%s)", buf);
	usage_under(NULL, LOOM_OPT_AFFINITY, buf, sizeof buf);
	ok(has(buf, "(default: none)"), "help: affinity none");
	done_testing();
	return exit_status();
}
