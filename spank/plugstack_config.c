/* spank/plugstack_config.c: parse the plugin's arguments in plugstack.conf */
#include "plugstack_config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "settings.h"

/* A site key's parser (the key itself is in settings.c), and for a path key the char array in struct
 * loom_config that its value goes into and what it may hold. */
enum path_rule { ANY_PATH, ABSOLUTE, ABSOLUTE_OR_NONE };
struct site_key {
	const char *key;
	int (*parse)(struct loom_config *cfg, const struct site_key *k, const char *val,
		     const char *label, char *err, size_t errlen);
	size_t off, size;
	enum path_rule rule;
};

int loom_env_name_valid(const char *s, size_t len)
{
	if (len == 0 || len >= LOOM_ENV_NAME_MAX)
		return 0;
	if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < len; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

const char *loom_config_nccl(const struct loom_config *cfg, const char *key)
{
	for (int i = 0; i < cfg->n_nccl_env; i++)
		if (strcmp(cfg->nccl_env[i].key, key) == 0)
			return cfg->nccl_env[i].value;
	return NULL;
}

static int parse_nccl_env(struct loom_config *cfg, const struct site_key *k, const char *val,
			  const char *label, char *err, size_t errlen)
{
	const char *p = val;
	if (!*p)
		goto bad;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		size_t klen, vlen;
		if (!eq)
			goto bad;
		klen = (size_t)(eq - p);
		vlen = len - klen - 1;
		if (!loom_env_name_valid(p, klen) || vlen >= LOOM_ENV_VALUE_MAX)
			goto bad;
		struct loom_kv *kv = NULL;
		for (int i = 0; i < cfg->n_nccl_env; i++)
			if (strlen(cfg->nccl_env[i].key) == klen &&
			    strncmp(cfg->nccl_env[i].key, p, klen) == 0)
				kv = &cfg->nccl_env[i];       /* a later value wins */
		if (!kv) {
			if (cfg->n_nccl_env >= LOOM_NCCL_ENV_MAX) {
				snprintf(err, errlen, "plugstack argument nccl_env: more than %d variables",
					 LOOM_NCCL_ENV_MAX);
				return -1;
			}
			kv = &cfg->nccl_env[cfg->n_nccl_env++];
		}
		memcpy(kv->key, p, klen);
		kv->key[klen] = '\0';
		memcpy(kv->value, eq + 1, vlen);
		kv->value[vlen] = '\0';
		if (!end)
			break;
		p = end + 1;
		if (!*p)
			goto bad;
	}
	return 0;
bad:
	snprintf(err, errlen,
		 "plugstack argument nccl_env='%s' is not KEY=VALUE[,KEY=VALUE...] (KEY a variable name, VALUE without commas, under %d characters)",
		 val, LOOM_ENV_VALUE_MAX);
	return -1;
}

static int parse_lock(struct loom_config *cfg, const struct site_key *k, const char *val,
		      const char *label, char *err, size_t errlen)
{
	const char *p = val;
	char lockable[256];
	loom_setting_keys(1, lockable, sizeof lockable);
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int id = loom_opt_from_key(p, len);
		if (id < 0) {
			snprintf(err, errlen,
				 "plugstack argument lock='%s': '%.*s' is not one of %s",
				 val, (int)(len > 64 ? 64 : len), p, lockable);
			return -1;
		}
		cfg->locked |= 1u << id;
		if (!end)
			break;
		p = end + 1;
	}
	if (!*val) {
		snprintf(err, errlen,
			 "plugstack argument lock='' is empty: list options among %s", lockable);
		return -1;
	}
	return 0;
}

static int parse_port_base(struct loom_config *cfg, const struct site_key *k, const char *val,
			   const char *label, char *err, size_t errlen)
{
	long v;
	if (loom_parse_uint(val, 1024, 65535, &v) < 0) {
		snprintf(err, errlen, "%s='%s' is not a port number from 1024 to 65535", label, val);
		return -1;
	}
	cfg->master_port_base = (int)v;
	return 0;
}

static int parse_port_range(struct loom_config *cfg, const struct site_key *k, const char *val,
			    const char *label, char *err, size_t errlen)
{
	long v;
	if (loom_parse_uint(val, 1, 64512, &v) < 0) {
		snprintf(err, errlen, "%s='%s' is not a number of ports from 1 to 64512", label, val);
		return -1;
	}
	cfg->master_port_range = (int)v;
	return 0;
}

static int parse_path(struct loom_config *cfg, const struct site_key *k, const char *val,
		      const char *label, char *err, size_t errlen)
{
	char *dst = (char *)cfg + k->off;
	if (!*val || strlen(val) >= k->size) {
		snprintf(err, errlen, "plugstack argument %s='%.64s' must be a path of 1-%zu characters",
			 k->key, val, k->size - 1);
		return -1;
	}
	strcpy(dst, val);
	if (k->rule != ANY_PATH && dst[0] != '/' && (k->rule == ABSOLUTE || strcmp(dst, "none"))) {
		snprintf(err, errlen, "plugstack argument %s='%.64s' must be an absolute path%s",
			 k->key, val, k->rule == ABSOLUTE ? "" : " or none");
		return -1;
	}
	return 0;
}

/* The parsers of the site's own keys. The user options' keys are not
 * here: they set cfg->defaults through loom_opt_parse. */
static const struct site_key site_keys[] = {
#define PATH_KEY(field, r) \
	{ .key = #field, .parse = parse_path, .off = offsetof(struct loom_config, field), \
	  .size = sizeof ((struct loom_config *)0)->field, .rule = r }
	{ .key = "master_port_base", .parse = parse_port_base },
	{ .key = "master_port_range", .parse = parse_port_range },
	{ .key = "nccl_env", .parse = parse_nccl_env },
	{ .key = "lock", .parse = parse_lock },
	PATH_KEY(topology_root, ANY_PATH),
	PATH_KEY(nvml_library, ANY_PATH),
	PATH_KEY(flight_dir, ABSOLUTE_OR_NONE),
	PATH_KEY(flight_local_base, ABSOLUTE),
	PATH_KEY(topology_cache, ABSOLUTE_OR_NONE),
	PATH_KEY(munge_key, ABSOLUTE),
#undef PATH_KEY
};

static const struct site_key *site_key(const char *key)
{
	for (size_t i = 0; i < sizeof site_keys / sizeof site_keys[0]; i++)
		if (strcmp(site_keys[i].key, key) == 0)
			return &site_keys[i];
	return NULL;
}

/* setting S = VAL: a site key, or a user option's default */
static int parse_setting(struct loom_config *cfg, const struct loom_setting *s, const char *val,
			 char *err, size_t errlen)
{
	const struct site_key *k;
	char label[96];

	snprintf(label, sizeof label, "plugstack argument %s", s->key);
	if (s->option)
		return loom_opt_parse((enum loom_opt_id)s->opt, val, &cfg->defaults, label, err, errlen);
	k = site_key(s->key);
	if (!k) {       /* a setting without a parser: spank/test/settings catches it */
		snprintf(err, errlen, "plugstack argument %s: not handled", s->key);
		return -1;
	}
	return k->parse(cfg, k, val, label, err, errlen);
}

static int parse_arg(struct loom_config *cfg, const char *arg, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	const struct loom_setting *s;
	char known[512];

	if (!eq) {
		snprintf(err, errlen, "plugstack argument '%s' is not key=value", arg);
		return -1;
	}
	size_t klen = (size_t)(eq - arg);
	s = loom_setting_find(arg, klen);
	if (s) {
		if (s->option)
			cfg->site_value[s->opt] = eq + 1;
		return parse_setting(cfg, s, eq + 1, err, errlen);
	}
	loom_setting_keys(0, known, sizeof known);
	snprintf(err, errlen, "unknown plugstack argument '%.*s' (known: %s)",
		 (int)(klen > 64 ? 64 : klen), arg, known);
	return -1;
}

int loom_config_parse(struct loom_config *cfg, int argc, char **argv,
		      char *err, size_t errlen)
{
	memset(cfg, 0, sizeof *cfg);
	loom_opts_init(&cfg->defaults);
	/* the defaults are the table's, parsed as if the site gave them */
	for (size_t i = 0; i < loom_n_settings; i++)
		if (loom_settings[i].dflt &&
		    parse_setting(cfg, &loom_settings[i], loom_settings[i].dflt, err, errlen) < 0)
			return -1;

	for (int i = 0; i < argc; i++)
		if (parse_arg(cfg, argv[i], err, errlen) < 0)
			return -1;
	if ((long)cfg->master_port_base + cfg->master_port_range - 1 > 65535) {
		snprintf(err, errlen,
			 "plugstack arguments master_port_base=%d master_port_range=%d reach past port 65535",
			 cfg->master_port_base, cfg->master_port_range);
		return -1;
	}
	cfg->env_mode = cfg->defaults.env;
	return 0;
}
