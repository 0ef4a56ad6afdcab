/* spank/plugstack_config.c: parse the plugin's arguments in plugstack.conf */
#include "plugstack_config.h"

#include <stdio.h>
#include <string.h>

#define KNOWN "env, affinity, gpus_per_task, ckpt, ckpt_signal, ckpt_cache, master_port_base, " \
	"master_port_range, nccl_env, lock, topology_root, nvml_library, flight_dir, " \
	"flight_local_base, topology_cache"
/* what lock= takes: the keys of enum loom_opt_id */
#define LOCKABLE "env, affinity, gpus_per_task, ckpt, ckpt_signal, ckpt_cache, nccl_env"

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

static int parse_nccl_env(struct loom_config *cfg, const char *val, char *err, size_t errlen)
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

static int parse_lock(struct loom_config *cfg, const char *val, char *err, size_t errlen)
{
	const char *p = val;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int id = loom_opt_from_key(p, len);
		if (id < 0) {
			snprintf(err, errlen,
				 "plugstack argument lock='%s': '%.*s' is not one of " LOCKABLE,
				 val, (int)(len > 64 ? 64 : len), p);
			return -1;
		}
		cfg->locked |= 1u << id;
		if (!end)
			break;
		p = end + 1;
	}
	if (!*val) {
		snprintf(err, errlen,
			 "plugstack argument lock='' is empty: list options among " LOCKABLE);
		return -1;
	}
	return 0;
}

static int parse_path(char *dst, size_t dstlen, const char *key, const char *val,
		      char *err, size_t errlen)
{
	if (!*val || strlen(val) >= dstlen) {
		snprintf(err, errlen, "plugstack argument %s='%.64s' must be a path of 1-%zu characters",
			 key, val, dstlen - 1);
		return -1;
	}
	strcpy(dst, val);
	return 0;
}

int loom_config_parse(struct loom_config *cfg, int argc, char **argv,
		      char *err, size_t errlen)
{
	long range_set = -1;

	memset(cfg, 0, sizeof *cfg);
	loom_opts_init(&cfg->defaults);
	cfg->env_mode = LOOM_ENV_TORCH;
	cfg->master_port_base = LOOM_PORT_BASE_DEFAULT;
	cfg->master_port_range = LOOM_PORT_RANGE_DEFAULT;
	strcpy(cfg->topology_root, "/");
	strcpy(cfg->topology_cache, "/var/lib/loom/topology.xml");
	strcpy(cfg->nvml_library, "libnvidia-ml.so.1");
	strcpy(cfg->flight_local_base, "/var/tmp");

	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		char label[96];
		long v;
		if (!eq) {
			snprintf(err, errlen, "plugstack argument '%s' is not key=value", arg);
			return -1;
		}
		size_t klen = (size_t)(eq - arg);
		const char *val = eq + 1;
		snprintf(label, sizeof label, "plugstack argument %.*s", (int)(klen > 40 ? 40 : klen), arg);
#define KEY(s) (klen == sizeof(s) - 1 && strncmp(arg, s, klen) == 0)
		if (KEY("master_port_base")) {
			if (loom_parse_uint(val, 1024, 65535, &v) < 0) {
				snprintf(err, errlen, "%s='%s' is not a port number from 1024 to 65535", label, val);
				return -1;
			}
			cfg->master_port_base = (int)v;
		} else if (KEY("master_port_range")) {
			if (loom_parse_uint(val, 1, 64512, &v) < 0) {
				snprintf(err, errlen, "%s='%s' is not a number of ports from 1 to 64512", label, val);
				return -1;
			}
			range_set = v;
		} else if (KEY("nccl_env")) {
			if (parse_nccl_env(cfg, val, err, errlen) < 0)
				return -1;
		} else if (KEY("lock")) {
			if (parse_lock(cfg, val, err, errlen) < 0)
				return -1;
		} else if (KEY("topology_root")) {
			if (parse_path(cfg->topology_root, sizeof cfg->topology_root, "topology_root",
				       val, err, errlen) < 0)
				return -1;
		} else if (KEY("topology_cache")) {
			if (parse_path(cfg->topology_cache, sizeof cfg->topology_cache, "topology_cache",
				       val, err, errlen) < 0)
				return -1;
			if (cfg->topology_cache[0] != '/' && strcmp(cfg->topology_cache, "none")) {
				snprintf(err, errlen, "plugstack argument topology_cache='%.64s' must be an "
					 "absolute path or none", val);
				return -1;
			}
		} else if (KEY("flight_dir") || KEY("flight_local_base")) {
			int local = KEY("flight_local_base");
			char *dst = local ? cfg->flight_local_base : cfg->flight_dir;
			if (parse_path(dst, sizeof cfg->flight_dir, local ? "flight_local_base" : "flight_dir",
				       val, err, errlen) < 0)
				return -1;
			if (dst[0] != '/' && (local || strcmp(dst, "none"))) {
				snprintf(err, errlen, "plugstack argument %s='%.64s' must be an absolute path%s",
					 local ? "flight_local_base" : "flight_dir", val,
					 local ? "" : " or none");
				return -1;
			}
		} else if (KEY("nvml_library")) {
			if (parse_path(cfg->nvml_library, sizeof cfg->nvml_library, "nvml_library",
				       val, err, errlen) < 0)
				return -1;
		} else {
			int id = -1;
			for (int k = 0; k < LOOM_OPT_NCCL_ENV; k++)
				if (strlen(loom_opt_key(k)) == klen &&
				    strncmp(arg, loom_opt_key(k), klen) == 0)
					id = k;
			if (id < 0) {
				snprintf(err, errlen, "unknown plugstack argument '%.*s' (known: " KNOWN ")",
					 (int)(klen > 64 ? 64 : klen), arg);
				return -1;
			}
			if (loom_opt_parse(id, val, &cfg->defaults, label, err, errlen) < 0)
				return -1;
		}
#undef KEY
	}
	if (range_set > 0)
		cfg->master_port_range = (int)range_set;
	if ((long)cfg->master_port_base + cfg->master_port_range - 1 > 65535) {
		snprintf(err, errlen,
			 "plugstack arguments master_port_base=%d master_port_range=%d reach past port 65535",
			 cfg->master_port_base, cfg->master_port_range);
		return -1;
	}
	cfg->env_mode = cfg->defaults.env;
	return 0;
}
