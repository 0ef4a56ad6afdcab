/* spank/options.c: parse and validate the values of loom's options. */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"

static const char *const env_mode_names[] = {
	[LOOM_ENV_TORCH] = "torch",
	[LOOM_ENV_MPI] = "mpi",
	[LOOM_ENV_NONE] = "none",
};

void loom_opts_init(struct loom_opts *o)
{
	memset(o, 0, sizeof *o);
	o->env = LOOM_ENV_TORCH;
	o->affinity.mode = LOOM_AFF_NONE;
}

/* the names are in the table of settings */
const char *loom_opt_key(enum loom_opt_id id)
{
	const struct loom_setting *s = loom_setting_of_opt((int)id);
	return s ? s->key : "?";
}

const char *loom_opt_user_name(enum loom_opt_id id)
{
	const struct loom_setting *s = loom_setting_of_opt((int)id);
	return s ? s->option : NULL;
}

int loom_opt_from_key(const char *s, size_t len)
{
	char norm[64];
	const struct loom_setting *set;
	if (len >= 5 && strncmp(s, "loom-", 5) == 0) {
		s += 5;
		len -= 5;
	}
	if (len == 0 || len >= sizeof norm)
		return -1;
	for (size_t i = 0; i < len; i++)
		norm[i] = s[i] == '-' ? '_' : s[i];
	set = loom_setting_find(norm, len);
	return set ? set->opt : -1;
}

int loom_env_mode_from_string(const char *s)
{
	for (size_t i = 0; i < sizeof env_mode_names / sizeof env_mode_names[0]; i++)
		if (strcmp(s, env_mode_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *loom_env_mode_name(enum loom_env_mode m)
{
	return (unsigned)m < 3 ? env_mode_names[m] : "?";
}

int loom_parse_uint(const char *s, long lo, long hi, long *out)
{
	long v = 0;
	if (!s || !*s)
		return -1;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
		if (v > hi)
			return -1;
	}
	if (v < lo)
		return -1;
	*out = v;
	return 0;
}

#define AFF_ALLOWED "closest, none, verbose[,closest|none], or map:<gpu>[+<gpu>...][,...] (one entry per local task, last)"

static int map_parse(const char *s, struct loom_affinity_spec *a, const char *label,
		     const char *whole, char *err, size_t errlen)
{
	const char *p = s;
	a->nmap = 0;
	if (!*p) {
		snprintf(err, errlen, "%s='%s' has an empty map: give map:<gpu>[+<gpu>...][,...], e.g. map:0,1,2,3",
			 label, whole);
		return -1;
	}
	while (*p) {
		if (a->nmap >= LOOM_MAP_MAX) {
			snprintf(err, errlen, "%s='%.64s...' has more than %d map entries", label,
				 whole, LOOM_MAP_MAX);
			return -1;
		}
		int k = 0;
		for (;;) {
			long v = 0;
			const char *q = p;
			while (*q >= '0' && *q <= '9') {
				v = v * 10 + (*q - '0');
				if (v > 1023)
					break;
				q++;
			}
			if (q == p || v > 1023 || (*q && *q != ',' && *q != '+')) {
				snprintf(err, errlen,
					 "%s='%s': map entry %d is not a GPU index 0-1023: use map:<gpu>[+<gpu>...][,...], e.g. map:0,1 or map:0+1,2+3",
					 label, whole, a->nmap + 1);
				return -1;
			}
			if (k >= LOOM_MAP_GPUS_MAX) {
				snprintf(err, errlen, "%s='%s': map entry %d names more than %d GPUs",
					 label, whole, a->nmap + 1, LOOM_MAP_GPUS_MAX);
				return -1;
			}
			for (int j = 0; j < k; j++)
				if (a->map_gpu[a->nmap][j] == (int)v) {
					snprintf(err, errlen, "%s='%s': map entry %d names GPU %ld twice",
						 label, whole, a->nmap + 1, v);
					return -1;
				}
			a->map_gpu[a->nmap][k++] = (int)v;
			p = q;
			if (*p == '+') {
				p++;
				continue;
			}
			break;
		}
		a->map_ngpu[a->nmap++] = k;
		if (*p == ',') {
			p++;
			if (!*p) {
				snprintf(err, errlen, "%s='%s' ends with ',': remove it or add a map entry",
					 label, whole);
				return -1;
			}
		}
	}
	return 0;
}

int loom_parse_affinity(const char *s, struct loom_affinity_spec *a, const char *label,
			char *err, size_t errlen)
{
	struct loom_affinity_spec t;
	int have_mode = 0;
	const char *p = s;

	memset(&t, 0, sizeof t);
	t.mode = LOOM_AFF_CLOSEST;      /* "verbose" alone means verbose,closest */
	if (!s || !*s) {
		snprintf(err, errlen, "%s='' is empty: use " AFF_ALLOWED, label);
		return -1;
	}
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		enum loom_affinity_mode m;
		if (len >= 4 && strncmp(p, "map:", 4) == 0) {
			if (have_mode)
				goto conflict;
			if (map_parse(p + 4, &t, label, s, err, errlen) < 0)
				return -1;
			t.mode = LOOM_AFF_MAP;
			break;          /* map: takes the rest of the value */
		}
		if (len == 7 && strncmp(p, "verbose", 7) == 0) {
			if (t.verbose) {
				snprintf(err, errlen, "%s='%s' says verbose twice", label, s);
				return -1;
			}
			t.verbose = 1;
		} else if ((len == 7 && strncmp(p, "closest", 7) == 0 && (m = LOOM_AFF_CLOSEST, 1)) ||
			   (len == 4 && strncmp(p, "none", 4) == 0 && (m = LOOM_AFF_NONE, 1))) {
			if (have_mode)
				goto conflict;
			have_mode = 1;
			t.mode = m;
		} else {
			snprintf(err, errlen, "%s='%s': '%.*s' is not one of " AFF_ALLOWED,
				 label, s, (int)(len > 64 ? 64 : len), p);
			return -1;
		}
		if (!end)
			break;
		p = end + 1;
		if (!*p) {
			snprintf(err, errlen, "%s='%s' ends with ',': use " AFF_ALLOWED, label, s);
			return -1;
		}
	}
	*a = t;
	return 0;
conflict:
	snprintf(err, errlen, "%s='%s' names more than one of closest, none, map:...: pick one",
		 label, s);
	return -1;
}

int loom_parse_gpus_per_task(const char *s, int *n, const char *label, char *err,
			     size_t errlen)
{
	long v;
	if (loom_parse_uint(s, 1, 64, &v) < 0) {
		snprintf(err, errlen, "%s='%s' is not a whole number from 1 to 64", label,
			 s ? s : "");
		return -1;
	}
	*n = (int)v;
	return 0;
}

int loom_parse_ckpt_dir(const char *s, const char *example, char *dir, size_t dirlen,
			const char *label, char *err, size_t errlen)
{
	if (!s || !*s) {
		snprintf(err, errlen, "%s='' is empty: give an absolute directory, e.g. %s=%s",
			 label, label, example);
		return -1;
	}
	if (strlen(s) >= dirlen || strlen(s) >= LOOM_CKPT_PATH_MAX) {
		snprintf(err, errlen, "%s='%.40s...' is longer than %d characters", label, s,
			 LOOM_CKPT_PATH_MAX - 1);
		return -1;
	}
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f) {
			snprintf(err, errlen, "%s: the directory name contains a control character", label);
			return -1;
		}
	if (s[0] != '/') {
		snprintf(err, errlen, "%s='%s' is not an absolute path: give /path/to/dir (e.g. %s=%s)",
			 label, s, label, example);
		return -1;
	}
	strcpy(dir, s);
	return 0;
}

static const struct { const char *name; int sig; } signals[] = {
	{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "ABRT", SIGABRT },
	{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "ALRM", SIGALRM }, { "TERM", SIGTERM },
	{ "CONT", SIGCONT }, { "URG", SIGURG }, { "XCPU", SIGXCPU }, { "XFSZ", SIGXFSZ },
	{ "WINCH", SIGWINCH }, { "PWR", SIGPWR },
};

const char *loom_signal_name(int sig)
{
	for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
		if (signals[i].sig == sig)
			return signals[i].name;
	return NULL;
}

#define SIG_ALLOWED "SIG[@SECONDS|@auto]: SIG a signal name (USR1, USR2, TERM, INT, HUP, ...) or number 1-64 other than KILL(9) and STOP(19), SECONDS 0-65535 or auto (from the measured save time)"

int loom_parse_ckpt_signal(const char *s, int *sig, int *seconds, const char *label,
			   char *err, size_t errlen)
{
	char name[32];
	const char *at;
	size_t len;
	long v;
	int signo = 0;

	if (!s)
		s = "";
	at = strchr(s, '@');
	len = at ? (size_t)(at - s) : strlen(s);
	if (len == 0 || len >= sizeof name)
		goto bad;
	memcpy(name, s, len);
	name[len] = '\0';
	if (loom_parse_uint(name, 1, 64, &v) == 0) {
		if (v == SIGKILL || v == SIGSTOP)
			goto bad;
		signo = (int)v;
	} else {
		const char *n = name;
		if (strncasecmp(n, "SIG", 3) == 0)
			n += 3;
		for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
			if (strcasecmp(n, signals[i].name) == 0)
				signo = signals[i].sig;
		if (!signo)
			goto bad;
	}
	v = LOOM_CKPT_SIGNAL_DEFAULT_SECONDS;
	if (at && !strcasecmp(at + 1, "auto"))
		v = LOOM_CKPT_SIGNAL_AUTO;
	else if (at && loom_parse_uint(at + 1, 0, 65535, &v) < 0)
		goto bad;
	*sig = signo;
	*seconds = (int)v;
	return 0;
bad:
	snprintf(err, errlen, "%s='%s' is not " SIG_ALLOWED, label, s);
	return -1;
}

int loom_opt_parse(enum loom_opt_id id, const char *value, struct loom_opts *o,
		   const char *label, char *err, size_t errlen)
{
	if (!value)
		value = "";
	switch (id) {
	case LOOM_OPT_ENV: {
		int m = loom_env_mode_from_string(value);
		if (m < 0) {
			snprintf(err, errlen, "%s='%s' is not one of torch, mpi, none", label, value);
			return -1;
		}
		o->env = (enum loom_env_mode)m;
		return 0;
	}
	case LOOM_OPT_AFFINITY:
		return loom_parse_affinity(value, &o->affinity, label, err, errlen);
	case LOOM_OPT_GPUS_PER_TASK:
		return loom_parse_gpus_per_task(value, &o->gpus_per_task, label, err, errlen);
	case LOOM_OPT_CKPT:
		return loom_parse_ckpt_dir(value, "$HOME/ckpt", o->ckpt_dir, sizeof o->ckpt_dir, label,
					   err, errlen);
	case LOOM_OPT_CKPT_SIGNAL:
		return loom_parse_ckpt_signal(value, &o->ckpt_signal, &o->ckpt_signal_seconds,
					      label, err, errlen);
	case LOOM_OPT_JOIN:
		if (*value && loom_parse_uint(value, 0, 0x7ffffff0, &o->join_step) < 0) {
			snprintf(err, errlen, "%s='%s' is not a step id: give --loom-join (step 0) or "
				 "--loom-join=STEP, STEP the step whose world it joins", label, value);
			return -1;
		}
		if (!*value)
			o->join_step = 0;
		o->join = 1;
		return 0;
	case LOOM_OPT_CKPT_CACHE:
		return loom_parse_ckpt_dir(value, "/tmp/ckpt-%j", o->ckpt_cache, sizeof o->ckpt_cache,
					   label, err, errlen);
	default:
		snprintf(err, errlen, "%s: not an option", label);
		return -1;
	}
}

int loom_opts_noops(const struct loom_opts *o, unsigned user_set, char (*warn)[256], int max)
{
	int n = 0;
	if ((user_set & (1u << LOOM_OPT_GPUS_PER_TASK)) && o->affinity.mode == LOOM_AFF_NONE && n < max)
		snprintf(warn[n++], sizeof warn[0],
			 "--loom-gpus-per-task=%d does nothing with --loom-affinity=none: GPUs are "
			 "given to tasks only when loom binds them (add --loom-affinity=closest)",
			 o->gpus_per_task);
	if ((user_set & (1u << LOOM_OPT_CKPT_SIGNAL)) && !o->ckpt_dir[0] && n < max)
		snprintf(warn[n++], sizeof warn[0],
			 "--loom-ckpt-signal does nothing without --loom-ckpt=DIR: no signal is sent "
			 "and no requeue follows (add --loom-ckpt=DIR)");
	/* the cache is a tier in front of the shared directory, never alone */
	if ((user_set & (1u << LOOM_OPT_CKPT_CACHE)) && !o->ckpt_dir[0] && n < max)
		snprintf(warn[n++], sizeof warn[0],
			 "--loom-ckpt-cache does nothing without --loom-ckpt=DIR: the cache sits in "
			 "front of the shared checkpoint directory, so LOOM_CKPT_CACHE is not set "
			 "(add --loom-ckpt=DIR)");
	if ((user_set & (1u << LOOM_OPT_AFFINITY)) && o->affinity.mode == LOOM_AFF_NONE &&
	    o->affinity.verbose && n < max)
		snprintf(warn[n++], sizeof warn[0],
			 "--loom-affinity=verbose,none prints nothing: no task is bound "
			 "(use --loom-affinity=verbose for the default binding)");
	return n;
}
