/* spank/options.h: the values of loom's options (--loom-* on the command
 * line, SLURM_SPANK_LOOM_* in the environment, #SBATCH lines, and the
 * site defaults in plugstack.conf), and their parsers.
 *
 * Every parser takes a label ("--loom-env" or "plugstack argument env")
 * and on a bad value writes one line into err:
 *   LABEL='VALUE' is not ...: allowed values
 * so that the user sees what was wrong and what would be accepted. */
#ifndef LOOM_SPANK_OPTIONS_H
#define LOOM_SPANK_OPTIONS_H

#include <stddef.h>

enum loom_env_mode { LOOM_ENV_TORCH, LOOM_ENV_MPI, LOOM_ENV_NONE };

/* the options a user can set, and the site can default and lock */
enum loom_opt_id {
	LOOM_OPT_ENV,
	LOOM_OPT_AFFINITY,
	LOOM_OPT_GPUS_PER_TASK,
	LOOM_OPT_CKPT,
	LOOM_OPT_CKPT_SIGNAL,
	LOOM_OPT_CKPT_CACHE,
	LOOM_OPT_JOIN,          /* --loom-join[=STEP]: its argument is optional */
	LOOM_OPT_NCCL_ENV,      /* site only: lockable, not a user option */
	LOOM_OPT_COUNT
};

enum loom_affinity_mode { LOOM_AFF_NONE, LOOM_AFF_CLOSEST, LOOM_AFF_MAP };

#define LOOM_MAP_MAX 256        /* entries of map: (one per local task) */
#define LOOM_MAP_GPUS_MAX 16    /* GPUs in one entry (0+1+2...) */
#define LOOM_CKPT_PATH_MAX 1024

struct loom_affinity_spec {
	enum loom_affinity_mode mode;
	int verbose;
	int nmap;                               /* map entries */
	int map_ngpu[LOOM_MAP_MAX];             /* GPUs in entry i */
	int map_gpu[LOOM_MAP_MAX][LOOM_MAP_GPUS_MAX];
};

struct loom_opts {
	enum loom_env_mode env;
	struct loom_affinity_spec affinity;
	int gpus_per_task;                      /* 0: split the node's GPUs evenly */
	char ckpt_dir[LOOM_CKPT_PATH_MAX];      /* "" when not set */
	int ckpt_signal;                        /* 0 when not set */
	int ckpt_signal_seconds;
	/* node-local cache tier in front of ckpt_dir, "" when not set; %n
	 * stays for libloom to expand on each node */
	char ckpt_cache[LOOM_CKPT_PATH_MAX];
	int join;                               /* --loom-join given */
	long join_step;                         /* the step whose world it joins */
};

/* defaults: env=torch, affinity=none, gpus_per_task auto, no checkpoint */
void loom_opts_init(struct loom_opts *o);

/* "env", "affinity", "gpus_per_task", ...; the plugstack key */
const char *loom_opt_key(enum loom_opt_id id);
/* "loom-env", "loom-affinity", ...; NULL for site-only keys */
const char *loom_opt_user_name(enum loom_opt_id id);
/* plugstack key or user option name (with or without "loom-", '-' or '_')
 * -> id; -1 when unknown */
int loom_opt_from_key(const char *s, size_t len);

/* Parse VALUE for option ID into o. 0, or -1 with a message in err. */
int loom_opt_parse(enum loom_opt_id id, const char *value, struct loom_opts *o,
		   const char *label, char *err, size_t errlen);

/* the individual parsers */
int loom_env_mode_from_string(const char *s);         /* -1 when unknown */
const char *loom_env_mode_name(enum loom_env_mode m);
int loom_parse_affinity(const char *s, struct loom_affinity_spec *a,
			const char *label, char *err, size_t errlen);
int loom_parse_gpus_per_task(const char *s, int *n, const char *label,
			     char *err, size_t errlen);
/* an absolute directory (--loom-ckpt, --loom-ckpt-cache); the messages
 * suggest LABEL=EXAMPLE */
int loom_parse_ckpt_dir(const char *s, const char *example, char *dir, size_t dirlen,
			const char *label, char *err, size_t errlen);
int loom_parse_ckpt_signal(const char *s, int *sig, int *seconds,
			   const char *label, char *err, size_t errlen);

/* "USR1" for SIGUSR1, NULL when the number has no name of ours */
const char *loom_signal_name(int sig);

/* Strict decimal: all of s is digits, value within [lo, hi]. 0 or -1. */
int loom_parse_uint(const char *s, long lo, long hi, long *out);

#define LOOM_CKPT_SIGNAL_DEFAULT_SECONDS 60
/* ckpt_signal_seconds of SIG@auto: the lead time from the save times */
#define LOOM_CKPT_SIGNAL_AUTO (-1)

/* Options the user gave (a bit per enum loom_opt_id in user_set) that do
 * nothing with the effective options o: one line each into warn, naming
 * the option, why, and what to add. Returns how many (at most max). */
#define LOOM_NOOP_MAX 4
int loom_opts_noops(const struct loom_opts *o, unsigned user_set, char (*warn)[256], int max);

#endif
