/* spank/settings.c: the table of loom's settings (see settings.h). Its
 * order is the order of the "known:" list in the parser's messages. */
#include "settings.h"

#include <stdio.h>
#include <string.h>

#include "plugstack_config.h"

#define SITE(k) .key = #k, .option = NULL, .opt = -1

const struct loom_setting loom_settings[] = {
	{ .key = "env", .option = "loom-env", .opt = LOOM_OPT_ENV,
	  .syntax = "torch|mpi|none", .dflt = "torch",
	  .what = "launch environment to write for each task" },
	{ .key = "affinity", .option = "loom-affinity", .opt = LOOM_OPT_AFFINITY,
	  .syntax = "[verbose,]closest|none|map:<gpu>[+<gpu>...][,...]", .dflt = "none",
	  .what = "bind each task to GPUs, nearby CPUs and NIC (one GPU per task: all see the node's GPUs, their own at position LOCAL_RANK; else their own only; LOOM_LOCAL_DEVICE says where); map: the GPUs of each local task, verbose: print the binding" },
	{ .key = "gpus_per_task", .option = "loom-gpus-per-task", .opt = LOOM_OPT_GPUS_PER_TASK,
	  .syntax = "N", .dflt_doc = "the node's GPUs split evenly",
	  .what = "GPUs per task for --loom-affinity, 1-64, among the GPUs Slurm granted the step on the node (request them with --gpus-per-node or --gpus-per-task; not with --gpu-bind)" },
	{ .key = "ckpt", .option = "loom-ckpt", .opt = LOOM_OPT_CKPT, .syntax = "DIR",
	  .what = "checkpoint directory, absolute (%j: job id), exported as LOOM_CKPT_DIR" },
	{ .key = "ckpt_signal", .option = "loom-ckpt-signal", .opt = LOOM_OPT_CKPT_SIGNAL,
	  .syntax = "SIG[@SECONDS|@auto]",
	  .what = "checkpoint signal, sent SECONDS (60 when not given) before the time limit; @auto: from the measured save time" },
	{ .key = "ckpt_cache", .option = "loom-ckpt-cache", .opt = LOOM_OPT_CKPT_CACHE,
	  .syntax = "DIR",
	  .what = "node-local checkpoint cache in front of --loom-ckpt, absolute (%n: node name, %j: job id), exported as LOOM_CKPT_CACHE" },
	{ .key = "join", .option = "loom-join", .opt = LOOM_OPT_JOIN, .syntax = "STEP",
	  .what = "this step's tasks join the world of step STEP (default 0) of the same job, which grows by them (loom_comm_grow); srun --jobid=$SLURM_JOB_ID --overlap -N1 -n K -w NODE --loom-join PROG" },
	{ SITE(master_port_base), .syntax = "N", .dflt = "29500",
	  .what = "MASTER_PORT lies in [N, N+master_port_range), N 1024-65535" },
	{ SITE(master_port_range), .syntax = "N", .dflt = "1000",
	  .what = "ports MASTER_PORT is chosen from, 1-64512; a job's concurrent steps get distinct ports" },
	{ .key = "nccl_env", .option = NULL, .opt = LOOM_OPT_NCCL_ENV,
	  .syntax = "KEY=VALUE[,KEY=VALUE...]",
	  .what = "variables written into every task, e.g. NCCL_SOCKET_IFNAME=ib0; may repeat" },
	{ SITE(lock), .syntax = "NAME[,NAME...]",
	  .what = "options users may not change: env, affinity, gpus_per_task, ckpt, ckpt_signal, ckpt_cache, join, nccl_env" },
	{ SITE(topology_root), .syntax = "PATH", .dflt = "/",
	  .what = "machine topology: / this node, an .xml file an hwloc XML export, a directory a fake sysfs root" },
	{ SITE(nvml_library), .syntax = "PATH|none", .dflt = "libnvidia-ml.so.1",
	  .what = "NVML for GPU numbering, dlopen()ed only when present; none: never" },
	{ SITE(flight_dir), .syntax = "PATH|none", .dflt_doc = "node-local, under flight_local_base",
	  .what = "a shared directory for the flight records instead, kept (%j: job id); none: no LOOM_FLIGHT_DIR" },
	{ SITE(flight_local_base), .syntax = "PATH", .dflt = "/var/tmp",
	  .what = "where each node keeps a job's flight records, removed after a step whose tasks there all exited 0" },
	{ SITE(munge_key), .syntax = "PATH", .dflt = "/etc/munge/munge.key",
	  .what = "the key munged uses, read by root in slurmstepd only: the job's key, and from it each step's LOOM_JOB_SECRET, derive from it (docs/security.md); unreadable: steps get random secrets and --loom-join fails" },
	{ SITE(topology_cache), .syntax = "PATH|none", .dflt = "/var/lib/loom/topology.xml",
	  .what = "this node's topology as hwloc XML, written by the first binding step after a boot and read by the next, used only when root's; none: off" },
};
#undef SITE

const size_t loom_n_settings = sizeof loom_settings / sizeof loom_settings[0];

const struct loom_setting *loom_setting_find(const char *key, size_t len)
{
	for (size_t i = 0; i < loom_n_settings; i++)
		if (strlen(loom_settings[i].key) == len && strncmp(loom_settings[i].key, key, len) == 0)
			return &loom_settings[i];
	return NULL;
}

const struct loom_setting *loom_setting_of_opt(int id)
{
	for (size_t i = 0; i < loom_n_settings; i++)
		if (loom_settings[i].opt == id && id >= 0)
			return &loom_settings[i];
	return NULL;
}

const char *loom_setting_default(const struct loom_setting *s)
{
	return s->dflt ? s->dflt : s->dflt_doc;
}

void loom_setting_keys(int lockable, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < loom_n_settings; i++) {
		if (lockable && loom_settings[i].opt < 0)
			continue;
		int w = snprintf(buf + n, len - n, "%s%s", n ? ", " : "", loom_settings[i].key);
		if (w < 0 || (size_t)w >= len - n)
			return;         /* cut short: the caller's buffer is for messages */
		n += (size_t)w;
	}
}

void loom_option_usage(const struct loom_setting *s, const struct loom_config *cfg,
		       char *buf, size_t len)
{
	const char *site = cfg->site_value[s->opt];
	const char *dflt = loom_setting_default(s);
	int locked = loom_config_locked(cfg, (enum loom_opt_id)s->opt);

	if (site)
		snprintf(buf, len, "[loom] %s (default: %s, %s by the site)", s->what, site,
			 locked ? "set and locked" : "set");
	else if (dflt)
		snprintf(buf, len, "[loom] %s (default: %s%s)", s->what, dflt,
			 locked ? ", locked by the site" : "");
	else
		snprintf(buf, len, "[loom] %s%s", s->what, locked ? " (locked by the site)" : "");
}
