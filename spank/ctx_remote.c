/* spank/ctx_remote.c: slurmstepd. user_init (once per node, as the job's
 * user) plans the node's tasks; task_init (in each task, just before exec)
 * writes its environment and binds it. Errors fail the step with one loom:
 * line; nothing here may crash or block slurmstepd. */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include "affinity.h"
#include "ckpt_dir.h"
#include "ckpt_timer.h"
#include "flight_dir.h"
#include "hostlist.h"
#include "job_key.h"
#include "job_secret.h"
#include "job_log.h"
#include "launch_env.h"
#include "loom_spank.h"
#include "master_addr.h"
#include "port.h"
#include "requeue.h"
#include "strbuf.h"
#include "topo_cache.h"
#include "user_options.h"

/* What one SPANK callback leaves for a later one. slurmstepd runs the
 * callbacks of one step on one node in one process (task_init in each
 * task's fork of it), so this is the state of that step on that node. */
static struct remote_state {
	/* set by post_opt (root, before user_init): the node's topology from
	 * the topology cache, NULL: user_init discovers it live (plan_affinity
	 * takes it over). Why the cache was not used goes to the slurmd log,
	 * and with --loom-affinity=verbose to the node's first task. */
	struct loom_topo *cached_topo;
	char topo_warning[1100];
	/* set by user_init: an error found there fails every task in
	 * task_init (Slurm 22.05's srun exits 0 when user_init fails, but not
	 * when the tasks fail) */
	char node_error[1200];
	/* set by user_init: MASTER_ADDR of the step, and the warning its
	 * first task gives when no address of it resolves */
	char step_master[256];
	char master_warning[600];
	/* set by user_init (plan_affinity), freed by exit: one plan per local
	 * task, NULL: no binding */
	struct loom_task_plan *plan;
	int plan_ntasks;
	int plan_simulated;             /* topology from a fixture, not this host */
	/* set by user_init: --loom-gpus-per-task on a node where the step has
	 * no GPU, which its first task says */
	int gpus_per_task_noop;
	/* set by post_opt (flight_setup): LOOM_FLIGHT_DIR for the tasks, and
	 * flight_kind 1 node-local, 2 shared, 0 none or the user's own */
	char flight_path[1024];
	int flight_kind;
	/* set by task_exit: a task on this node did not exit 0 (exit keeps
	 * the node-local flight records) */
	int flight_dirty;
	/* set by task_exit: the requeue request was decided on, once per step */
	int requeued;
	/* set by post_opt (root): the job key (job_key.h), or why there is
	 * none; kept in slurmstepd, never written anywhere */
	unsigned char job_key[LOOM_JOB_KEY_LEN];
	int have_job_key;
	char job_key_error[600];
} remote;

static int regular_step(spank_t sp)
{
	uint32_t step = 0;
	if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return 0;
	return step != SLURM_BATCH_SCRIPT && step != SLURM_EXTERN_CONT &&
	       step != SLURM_INTERACTIVE_STEP;
}

static int getenv_sp(spank_t sp, const char *name, char *buf, int len)
{
	return spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS;
}

/* LOOM_JOB_SECRET made by srun (not the user's own) */
static int secret_is_srun(spank_t sp)
{
	char by[16];
	return getenv_sp(sp, LOOM_JOB_SECRET_BY_VAR, by, sizeof by) && !strcmp(by, "srun");
}

/* messages for the user: the task's stderr is the user's by task_init */
static void user_msg(const char *kind, const char *msg)
{
	char clean[1200];
	snprintf(clean, sizeof clean, "%s", msg);
	loom_log_clean(clean);  /* it may quote what the user or a host name said */
	fprintf(stderr, LOOM_PREFIX "%s%s\n", kind, clean);
	fflush(stderr);
}

static int plan_affinity(spank_t sp)
{
	char err[512], step_gpus[1024], cuda[1024];
	uint32_t ntasks = 0;
	struct loom_topo *topo;
	struct loom_gpu_grant grant;
	loom_cpuset_t allowed;
	int rc = -1;

	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS || ntasks == 0)
		return 0;
	int from_cache = remote.cached_topo != NULL;
	topo = from_cache ? remote.cached_topo : calloc(1, sizeof *topo);
	remote.cached_topo = NULL;
	remote.plan = calloc(ntasks, sizeof *remote.plan);
	if (!topo || !remote.plan) {
		snprintf(remote.node_error, sizeof remote.node_error, "--loom-affinity: out of memory");
		goto out;
	}
	if (!from_cache &&
	    loom_topo_load(topo, loom_cfg.topology_root, loom_cfg.nvml_library, err, sizeof err) < 0) {
		snprintf(remote.node_error, sizeof remote.node_error, "--loom-affinity: %s", err);
		goto out;
	}
	remote.plan_simulated = strcmp(loom_cfg.topology_root, "/") != 0;
	if (grant.n = 0, loom_gpu_grant_parse(getenv_sp(sp, "SLURM_STEP_GPUS", step_gpus, sizeof step_gpus) ? step_gpus : NULL,
				  getenv_sp(sp, "CUDA_VISIBLE_DEVICES", cuda, sizeof cuda) ? cuda : NULL,
				  topo->ngpu, &grant, err, sizeof err) < 0) {
		snprintf(remote.node_error, sizeof remote.node_error, "--loom-affinity: %s", err);
		goto out;
	}
	if (remote.plan_simulated) {
		allowed = topo->cpus;
	} else {
		cpu_set_t cs;
		loom_cpuset_zero(&allowed);
		if (sched_getaffinity(0, sizeof cs, &cs) == 0) {
			for (int c = 0; c < CPU_SETSIZE && c < LOOM_MAX_CPUS; c++)
				if (CPU_ISSET(c, &cs))
					loom_cpuset_set(&allowed, c);
		} else {
			allowed = topo->cpus;
		}
	}
	if (loom_affinity_plan(topo, &grant, &allowed, (int)ntasks, &loom_eff.affinity,
			       loom_eff.gpus_per_task, remote.plan, err, sizeof err) < 0) {
		snprintf(remote.node_error, sizeof remote.node_error, "%s", err);
		goto out;
	}
	remote.gpus_per_task_noop = (loom_user_set & (1u << LOOM_OPT_GPUS_PER_TASK)) && grant.n == 0;
	remote.plan_ntasks = (int)ntasks;
	rc = 0;
out:
	free(topo);
	if (rc < 0) {
		free(remote.plan);
		remote.plan = NULL;
	}
	return rc;
}

static int get_remote(void *ctx, const char *name, char *buf, int len)
{
	return getenv_sp((spank_t)ctx, name, buf, len);
}

/* The step's first node, by a name or an address that resolves here. */
static void find_master(spank_t sp)
{
	char list[8192], first[256], note[512];
	int warn;

	remote.step_master[0] = '\0';
	if ((!getenv_sp(sp, "SLURM_STEP_NODELIST", list, sizeof list) &&
	     !getenv_sp(sp, "SLURM_JOB_NODELIST", list, sizeof list)) ||
	    loom_hostlist_first(list, first, sizeof first) < 0 ||
	    loom_master_addr(first, NULL, remote.step_master, sizeof remote.step_master,
			     note, sizeof note, &warn) < 0) {
		remote.step_master[0] = '\0';
		return;
	}
	if (warn)
		snprintf(remote.master_warning, sizeof remote.master_warning, "%s", note);
	else if (note[0])
		slurm_info(LOOM_PREFIX "%s", note);
}

static int job_user(spank_t sp, struct loom_user_ids *ids);

/* the flight-record directory, unless the user chose one; root, before
 * user_init: made here, handed to the user, where others could squat its
 * predictable name (loom_flight_dir_make) */
static void flight_setup(spank_t sp)
{
	struct loom_user_ids ids;
	char note[400];
	uint32_t job = 0, uid = 0;
	char have[1024], err[300];
	remote.flight_kind = remote.flight_dirty = 0;
	if (!regular_step(sp) || getenv_sp(sp, "LOOM_FLIGHT_DIR", have, sizeof have) ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
		return;
	remote.flight_kind = loom_flight_dir_for(&loom_cfg, job, uid, remote.flight_path,
						 sizeof remote.flight_path, err, sizeof err);
	if (remote.flight_kind < 0) {
		slurm_error(LOOM_PREFIX "job %u: no flight records: %s", job, err);
		remote.flight_kind = 0;
	}
	if (remote.flight_kind && job_user(sp, &ids) == 0 && geteuid() == 0) {
		if (loom_flight_dir_make(remote.flight_path, ids.uid, ids.gid, note, sizeof note,
					 err, sizeof err) < 0) {
			slurm_error(LOOM_PREFIX "job %u: no flight records: %s", job, err);
			remote.flight_kind = 0;
		} else if (note[0]) {
			slurm_error(LOOM_PREFIX "job %u: flight directory %s: %s", job,
				    remote.flight_path, note);
		}
	}
}

/* slurmstepd, still root, once per node before user_init: when the step
 * binds tasks on this machine (not a topology_root fixture), the topology
 * from the node's cache, written here when missing or stale. */
/* root, before user_init: the job key from the munge key, for the step
 * secrets of task_init (job_key.h) */
static void job_key_setup(spank_t sp)
{
	uint32_t job = 0, restarts = 0;
	remote.have_job_key = 0;
	remote.job_key_error[0] = '\0';
	if (!regular_step(sp) || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS)
		return;
	spank_get_item(sp, S_SLURM_RESTART_COUNT, &restarts);
	if (loom_job_key_derive(loom_cfg.munge_key, job, restarts, remote.job_key, remote.job_key_error,
				sizeof remote.job_key_error) == 0)
		remote.have_job_key = 1;
	else
		slurm_info(LOOM_PREFIX "job %u: %s; its steps keep srun's random LOOM_JOB_SECRET", job,
			   remote.job_key_error);
}

int loom_remote_post_opt(spank_t sp)
{
	char note[1000], v[64];
	enum loom_topo_cache_rc rc;
	int binds = loom_eff.affinity.mode != LOOM_AFF_NONE ||
		    getenv_sp(sp, "SLURM_SPANK_LOOM_AFFINITY", v, sizeof v);

	remote.topo_warning[0] = '\0';
	flight_setup(sp);
	job_key_setup(sp);
	if (!binds || !regular_step(sp) || strcmp(loom_cfg.topology_root, "/") != 0 ||
	    strcmp(loom_cfg.topology_cache, "none") == 0)
		return 0;
	if (!(remote.cached_topo = calloc(1, sizeof *remote.cached_topo)))
		return 0;
	rc = loom_topo_cache_load(remote.cached_topo, loom_cfg.topology_cache, loom_cfg.nvml_library,
				  note, sizeof note);
	if (rc == LOOM_TOPO_CACHE_REUSED || rc == LOOM_TOPO_CACHE_WRITTEN) {
		slurm_info(LOOM_PREFIX "%s", note);
		return 0;
	}
	if (rc == LOOM_TOPO_CACHE_REFUSED) {
		free(remote.cached_topo);
		remote.cached_topo = NULL;
		snprintf(remote.topo_warning, sizeof remote.topo_warning,
			 "%s; discovering the topology live", note);
	} else {
		snprintf(remote.topo_warning, sizeof remote.topo_warning, "%s", note);
	}
	slurm_error(LOOM_PREFIX "%s", remote.topo_warning);
	return 0;
}

int loom_remote_user_init(spank_t sp)
{
	char err[1200];

	remote.node_error[0] = '\0';
	remote.master_warning[0] = '\0';
	remote.gpus_per_task_noop = 0;
	if (loom_env_options(get_remote, sp) < 0)
		return -1;
	if (regular_step(sp))
		find_master(sp);
	if (loom_eff.join && regular_step(sp) && !remote.have_job_key && secret_is_srun(sp)) {
		snprintf(remote.node_error, sizeof remote.node_error, "--loom-join: %s",
			 remote.job_key_error[0] ? remote.job_key_error : "no job key");
		return 0;
	}
	if (loom_eff.ckpt_dir[0]) {
		uint32_t job = 0;
		char dir[LOOM_CKPT_PATH_MAX];
		spank_get_item(sp, S_JOB_ID, &job);
		if (loom_ckpt_expand(loom_eff.ckpt_dir, job, 0, "--loom-ckpt", dir, sizeof dir,
				     err, sizeof err) < 0 ||
		    loom_ckpt_prepare(dir, 1, err, sizeof err) < 0) {
			snprintf(remote.node_error, sizeof remote.node_error, "%s", err);
			return 0;
		}
		strcpy(loom_eff.ckpt_dir, dir);  /* what the tasks and the requeue see */
		/* the cache tier: %j here, %n by libloom on each node, which also
		 * makes the directory; without --loom-ckpt it is not set (srun
		 * warned) */
		if (loom_eff.ckpt_cache[0]) {
			char cache[LOOM_CKPT_PATH_MAX];
			if (loom_ckpt_expand(loom_eff.ckpt_cache, job, LOOM_EXPAND_KEEP_NODE,
					     "--loom-ckpt-cache", cache, sizeof cache, err, sizeof err) < 0) {
				snprintf(remote.node_error, sizeof remote.node_error, "%s", err);
				return 0;
			}
			strcpy(loom_eff.ckpt_cache, cache);
		}
	}
	if (loom_eff.affinity.mode != LOOM_AFF_NONE && regular_step(sp))
		plan_affinity(sp);
	return 0;
}

static int first_node(spank_t sp)
{
	uint32_t nodeid = 1;
	return spank_get_item(sp, S_JOB_NODEID, &nodeid) == ESPANK_SUCCESS && nodeid == 0;
}

/* slurmstepd, root, once per task after the fork: the time-limit signal
 * is armed once per step, on its first node */
static int job_user(spank_t sp, struct loom_user_ids *ids);

int loom_remote_task_post_fork(spank_t sp)
{
	uint32_t job = 0, step = 0;
	struct loom_user_ids ids;
	char err[256];

	if (!loom_eff.ckpt_signal || !regular_step(sp) || !first_node(sp))
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS || job_user(sp, &ids) < 0)
		return 0;
	if (loom_ckpt_timer_start(job, step, loom_eff.ckpt_signal, loom_eff.ckpt_signal_seconds,
				  loom_eff.ckpt_dir, &ids, err, sizeof err) < 0)
		slurm_error(LOOM_PREFIX "%s", err);
	return 0;
}

static void state_name(uint32_t st, char *buf, size_t len)
{
	static const char *base[] = { "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED",
				      "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
				      "DEADLINE", "OUT_OF_MEMORY" };
	uint32_t b = st & JOB_STATE_BASE;
	snprintf(buf, len, "%s%s%s", b < sizeof base / sizeof base[0] ? base[b] : "?",
		 st & (JOB_REQUEUE | JOB_REQUEUE_HOLD) ? "+REQUEUE" : "",
		 st & JOB_COMPLETING ? "+COMPLETING" : "");
}

static void job_view(uint32_t job, struct loom_job_view *v)
{
	job_info_msg_t *msg = NULL;
	v->batch = v->running = 0;
	snprintf(v->state, sizeof v->state, "unknown");
	if (slurm_load_job(&msg, job, SHOW_ALL) != SLURM_SUCCESS || !msg || msg->record_count < 1) {
		snprintf(v->state, sizeof v->state, "unknown (%s)", slurm_strerror(slurm_get_errno()));
		if (msg)
			slurm_free_job_info_msg(msg);
		return;
	}
	for (uint32_t i = 0; i < msg->record_count; i++) {
		slurm_job_info_t *j = &msg->job_array[i];
		uint32_t st = j->job_state;
		if (j->job_id != job)
			continue;
		v->batch = j->batch_flag != 0;
		v->running = (st & JOB_STATE_BASE) == JOB_RUNNING &&
			     !(st & (JOB_REQUEUE | JOB_REQUEUE_HOLD | JOB_COMPLETING));
		state_name(st, v->state, sizeof v->state);
	}
	slurm_free_job_info_msg(msg);
}

/* the job's user, for reaching into its checkpoint directory */
static int job_user(spank_t sp, struct loom_user_ids *ids)
{
	gid_t *groups = NULL;
	int n = 0;
	memset(ids, 0, sizeof *ids);
	if (spank_get_item(sp, S_JOB_UID, &ids->uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &ids->gid) != ESPANK_SUCCESS)
		return -1;
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, &groups, &n) == ESPANK_SUCCESS && n > 0) {
		ids->groups = groups;
		ids->ngroups = n;
	} else {                /* no list: the primary group only */
		ids->groups = &ids->gid;
		ids->ngroups = 1;
	}
	return 0;
}

/* slurmstepd, root, as each task exits. On the step's first node: if the
 * tasks committed a checkpoint because a stop signal asked for it, requeue
 * the job now, before srun hears that its tasks ended (so the batch script
 * never sees a finished step and ends the job COMPLETED). The request is
 * read as the job's user (a child that takes its ids: root never opens a
 * path the user controls) and acted on once: removed first, so that a
 * failed requeue leaves nothing a later step would take for its own. */
int loom_remote_task_exit(spank_t sp)
{
	char text[LOOM_REQUEUE_MAX + 1], err[1200], env[32];
	struct loom_requeue_req req;
	struct loom_job_view view;
	struct loom_user_ids ids;
	enum loom_requeue_verdict v;
	int status = 0;
	uint32_t job = 0, step = 0, restarts = 0;
	int r;

	if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS || status != 0)
		remote.flight_dirty = 1;
	if (remote.requeued || !loom_eff.ckpt_dir[0] || !regular_step(sp) || !first_node(sp))
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS || job_user(sp, &ids) < 0) {
		slurm_error(LOOM_PREFIX "cannot read the job id, step or user from Slurm: no requeue");
		remote.requeued = 1;
		return 0;
	}
	r = loom_requeue_read_as(loom_eff.ckpt_dir, &ids, text, sizeof text, err, sizeof err);
	if (r == 0)
		return 0;
	remote.requeued = 1;   /* decided once per step, whatever comes next */
	if (r < 0 || loom_requeue_parse(text, &req, err, sizeof err) < 0) {
		loom_log_clean(err);
		loom_job_decided(1, loom_eff.ckpt_dir, &ids, "job %u step %u: not requeueing: the requeue request %s/%s, read as "
			"the job's user (uid %u), is unusable: %s", job, step, loom_eff.ckpt_dir,
			LOOM_REQUEUE_FILE, (unsigned)ids.uid, err);
		if (r > 0 && loom_requeue_remove_as(loom_eff.ckpt_dir, &ids, err, sizeof err) < 0)
			slurm_error(LOOM_PREFIX "job %u: %s", job, err);
		return 0;
	}
	/* the tasks' SLURM_RESTART_COUNT, which libloom wrote into the request
	 * (S_SLURM_RESTART_COUNT stays 0 in the stepd of a step after a requeue) */
	if (getenv_sp(sp, "SLURM_RESTART_COUNT", env, sizeof env))
		restarts = (uint32_t)strtoul(env, NULL, 10);
	else
		spank_get_item(sp, S_SLURM_RESTART_COUNT, &restarts);
	view.job = job;
	view.restart = (long)restarts;
	view.slurm_step = (long)step;
	if (!loom_requeue_ours(&req, &view)) {
		/* another job's, run's or step's: nothing to do, no call to slurmctld */
		loom_job_decided(0, loom_eff.ckpt_dir, &ids, "job %u restart %u step %u: ignoring the requeue request of job %lu "
			"restart %ld step %ld in %s (not this job, run and step)", job, restarts, step,
			req.job, req.restart, req.slurm_step, loom_eff.ckpt_dir);
		return 0;
	}
	if (loom_requeue_remove_as(loom_eff.ckpt_dir, &ids, err, sizeof err) < 0) {
		loom_log_clean(err);
		loom_job_decided(1, loom_eff.ckpt_dir, &ids, "job %u: not requeueing: the request cannot be removed once acted "
			"on: %s", job, err);
		return 0;
	}
	job_view(job, &view);
	v = loom_requeue_decide(&req, &view);
	if (v != LOOM_REQUEUE_YES) {
		loom_job_decided(0, loom_eff.ckpt_dir, &ids, "job %u: checkpoint step %lld after SIG%s, not requeued: %s (state "
			"%s) reason=%s", job, req.step, req.signal, loom_requeue_verdict_str(v),
			view.state, loom_requeue_reason(loom_ckpt_timer_fired(), v));
		return 0;
	}
	if (slurm_requeue(job, 0) != SLURM_SUCCESS) {
		loom_job_decided(1, loom_eff.ckpt_dir, &ids, "job %u: checkpoint step %lld committed after SIG%s, but the requeue "
			"failed: %s (resubmit it; it resumes from %s)", job, req.step, req.signal,
			slurm_strerror(slurm_get_errno()), loom_eff.ckpt_dir);
		return 0;
	}
	loom_job_decided(0, loom_eff.ckpt_dir, &ids, "job %u: checkpoint step %lld committed after SIG%s%s; requeued (restart "
		"%u) reason=%s", job, req.step, req.signal,
		loom_ckpt_timer_fired() ? " (time limit)" : "", restarts + 1,
		loom_requeue_reason(loom_ckpt_timer_fired(), v));
	return 0;
}

/* a cleanly ended step's node-local records go; a failed one's stay for
 * loom-doctor */
static void flight_clean(spank_t sp)
{
	struct loom_user_ids ids;
	uint32_t job = 0, step = 0;
	char err[1400];
	if (remote.flight_kind != 1 || spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS)
		return;
	if (remote.flight_dirty) {
		slurm_info(LOOM_PREFIX "job %u step %u: flight records kept in %s (a task on this "
			   "node did not exit 0)", job, step, remote.flight_path);
		return;
	}
	if (job_user(sp, &ids) < 0 ||
	    loom_flight_clean_as(remote.flight_path, step, &ids, err, sizeof err) < 0) {
		slurm_error(LOOM_PREFIX "job %u step %u: flight records not removed: %s", job, step,
			    job_user(sp, &ids) < 0 ? "cannot read the job's user from Slurm" : err);
		return;
	}
	slurm_info(LOOM_PREFIX "job %u step %u: flight records removed from %s (every task on "
		   "this node exited 0)", job, step, remote.flight_path);
}

/* the time-limit signal went out but no task left a request: the one
 * case of no requeue that loom.so can tell from a normal end (a program
 * that ignores preemption's SIGTERM leaves nothing to tell by) */
static void signal_unanswered(spank_t sp)
{
	struct loom_user_ids ids;
	uint32_t job = 0, step = 0;
	if (remote.requeued || !loom_eff.ckpt_dir[0] || !first_node(sp) || !loom_ckpt_timer_fired() ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS || job_user(sp, &ids) < 0)
		return;
	loom_job_decided(0, loom_eff.ckpt_dir, &ids, "job %u step %u: not requeued: the --loom-ckpt-signal signal was sent, "
		"but no task left a requeue request in %s/%s (did the program checkpoint on it?)",
		job, step, loom_eff.ckpt_dir, LOOM_REQUEUE_FILE);
}

void loom_remote_exit(spank_t sp)
{
	if (regular_step(sp)) {
		signal_unanswered(sp);
		flight_clean(sp);
	}
	remote.flight_kind = 0;
	loom_ckpt_timer_stop();
	free(remote.plan);
	remote.plan = NULL;
}

static int ops_get(void *ctx, const char *name, char *buf, size_t len)
{
	return getenv_sp((spank_t)ctx, name, buf, (int)len);
}

static int ops_set(void *ctx, const char *name, const char *value)
{
	return spank_setenv((spank_t)ctx, name, value, 1) == ESPANK_SUCCESS ? 0 : -1;
}

static void ops_warn(void *ctx, const char *msg)
{
	user_msg("warning: ", msg);
}

static int task_info(spank_t sp, struct loom_task_info *ti)
{
	char buf[8192];
	uint32_t local_count = 0;
	int local_id = 0;

	memset(ti, 0, sizeof *ti);
	if (spank_get_item(sp, S_JOB_ID, &ti->job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &ti->step_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &ti->rank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_ID, &local_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ti->world_size) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NODEID, &ti->node_rank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NNODES, &ti->nnodes) != ESPANK_SUCCESS) {
		slurm_error(LOOM_PREFIX "cannot read the step's task layout from Slurm");
		return -1;
	}
	ti->local_rank = (uint32_t)local_id;
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local_count) != ESPANK_SUCCESS ||
	    local_count == 0) {
		int n = getenv_sp(sp, "SLURM_STEP_TASKS_PER_NODE", buf, sizeof buf)
			? loom_tasks_on_node(buf, ti->node_rank) : -1;
		if (n <= 0) {
			slurm_error(LOOM_PREFIX "cannot tell how many tasks run on this node");
			return -1;
		}
		local_count = (uint32_t)n;
	}
	ti->local_world_size = local_count;
	if (remote.step_master[0] && strlen(remote.step_master) < sizeof ti->master_addr) {
		strcpy(ti->master_addr, remote.step_master);
		return 0;
	}
	slurm_error(LOOM_PREFIX "cannot find the first host of the step's node list (SLURM_STEP_NODELIST)");
	return -1;
}

/* The binding of one task: always into slurmd's log (slurm_info), for the
 * admin; also to the user's stderr with --loom-affinity=...,verbose. */
static void report_binding(spank_t sp, const struct loom_task_info *ti,
			   const struct loom_task_plan *p, int bound, int to_user)
{
	char host[256] = "", cpus[LOOM_MAX_CPUS * 6], gpus[256];
	char line[sizeof cpus + sizeof p->cuda_visible + 1024], dev[16] = "-";
	struct loom_sb g, l;
	if (!getenv_sp(sp, "SLURMD_NODENAME", host, sizeof host))
		gethostname(host, sizeof host - 1);
	loom_log_clean(host);
	if (loom_cpuset_format(&p->cpus, cpus, sizeof cpus) < 0)
		strcpy(cpus, "(too many to list)");
	if (p->device >= 0)
		snprintf(dev, sizeof dev, "%d", p->device);
	loom_sb_init(&g, gpus, sizeof gpus);
	for (int i = 0; i < p->ngpu; i++)
		loom_sb_add(&g, "%s%d", i ? "," : "", p->gpu[i]);
	loom_sb_init(&l, line, sizeof line);
	if (g.full ||
	    loom_sb_add(&l, "affinity host=%s rank=%u local_rank=%u gpus=%s cuda_visible_devices=%s "
			"device=%s cpus=%s%s numa=%s nic=%s", host, ti->rank, ti->local_rank,
			p->ngpu ? gpus : "none", p->cuda_visible[0] ? p->cuda_visible : "-", dev,
			cpus[0] ? cpus : "-", bound ? "" : " (not bound)", p->numa, p->nic) < 0)
		snprintf(line, sizeof line, "affinity rank=%u: the binding report does not fit in "
			 "%zu characters", ti->rank, sizeof line - 1);
	slurm_info(LOOM_PREFIX "%s", line);
	if (to_user) {
		fprintf(stderr, LOOM_PREFIX "%s\n", line);
		fflush(stderr);
	}
}

static int bind_task(const struct loom_task_plan *p)
{
	cpu_set_t cur, want;
	int n = 0;
	if (sched_getaffinity(0, sizeof cur, &cur) < 0)
		return 0;
	CPU_ZERO(&want);
	for (int c = 0; c < CPU_SETSIZE && c < LOOM_MAX_CPUS; c++)
		if (loom_cpuset_isset(&p->cpus, c) && CPU_ISSET(c, &cur)) {
			CPU_SET(c, &want);
			n++;
		}
	if (n == 0)
		return 0;       /* never bind to nothing: leave Slurm's binding */
	return sched_setaffinity(0, sizeof want, &want) == 0;
}

/* a --loom-join step: where the world it joins listens for newcomers
 * (MASTER_PORT of that step, on one of the job's nodes) */
static int join_env(spank_t sp, const struct loom_task_info *ti)
{
	char list[8192], hosts[8192], buf[32];
	if ((!getenv_sp(sp, "SLURM_JOB_NODELIST", list, sizeof list) &&
	     !getenv_sp(sp, "SLURM_NODELIST", list, sizeof list)) ||
	    loom_hostlist_expand(list, hosts, sizeof hosts) < 0) {
		user_msg("", "--loom-join: cannot read the job's node list (SLURM_JOB_NODELIST)");
		return -1;
	}
	snprintf(buf, sizeof buf, "%ld", loom_eff.join_step);
	spank_setenv(sp, "LOOM_JOIN", buf, 1);
	spank_setenv(sp, "LOOM_JOIN_HOSTS", hosts, 1);
	snprintf(buf, sizeof buf, "%d", loom_master_port(ti->job_id, (uint32_t)loom_eff.join_step,
							 loom_cfg.master_port_base, loom_cfg.master_port_range));
	return spank_setenv(sp, "MASTER_PORT", buf, 1) == ESPANK_SUCCESS ? 0 : -1;
}

/* LOOM_JOB_SECRET from the job key in place of srun's random one: this
 * step's, or with --loom-join the secret of the step whose world it
 * joins; without a job key srun's stays, and the user's own is always
 * kept (docs/security.md) */
static int step_secret(spank_t sp, const struct loom_task_info *ti)
{
	char hex[33];
	uint32_t step = loom_eff.join ? (uint32_t)loom_eff.join_step : ti->step_id;
	int rc = 0;
	if (remote.have_job_key && secret_is_srun(sp)) {
		loom_job_key_step_secret(remote.job_key, step, hex);
		if (spank_setenv(sp, LOOM_JOB_SECRET_VAR, hex, 1) != ESPANK_SUCCESS ||
		    spank_setenv(sp, LOOM_JOB_SECRET_BY_VAR, "job-key", 1) != ESPANK_SUCCESS)
			rc = -1;
		memset(hex, 0, sizeof hex);
	}
	if (rc == 0 && loom_eff.join)
		rc = join_env(sp, ti);
	if (rc < 0)
		slurm_error(LOOM_PREFIX "could not set the job secret of task %u", ti->rank);
	return rc;
}

int loom_remote_task_init(spank_t sp)
{
	struct loom_task_info ti;
	struct loom_envlist *env;
	struct loom_env_ops ops = { sp, ops_get, ops_set, ops_warn };
	const struct loom_task_plan *p = NULL;
	int rc = 0, bound = 0;
	char buf[32];

	if (remote.node_error[0]) {
		loom_log_clean(remote.node_error);     /* it may echo what the user set */
		user_msg("", remote.node_error);       /* the task's stderr: the user sees it */
		return -1;
	}
	spank_setenv(sp, "LOOM_PLUGIN_VERSION", PACKAGE_VERSION, 1);
	spank_setenv(sp, "LOOM_ENV_MODE", loom_env_mode_name(loom_eff.env), 1);
	if (loom_eff.ckpt_dir[0]) {
		spank_setenv(sp, "LOOM_CKPT_DIR", loom_eff.ckpt_dir, 1);
		if (loom_eff.ckpt_cache[0])
			spank_setenv(sp, "LOOM_CKPT_CACHE", loom_eff.ckpt_cache, 1);
	}
	if (remote.flight_kind)
		spank_setenv(sp, "LOOM_FLIGHT_DIR", remote.flight_path, 0);
	if (loom_eff.ckpt_signal) {
		const char *name = loom_signal_name(loom_eff.ckpt_signal);
		snprintf(buf, sizeof buf, "%d", loom_eff.ckpt_signal);
		spank_setenv(sp, "LOOM_CKPT_SIGNAL", name ? name : buf, 1);
		snprintf(buf, sizeof buf, "%d", loom_eff.ckpt_signal_seconds);
		spank_setenv(sp, "LOOM_CKPT_SIGNAL_SECONDS",
			     loom_eff.ckpt_signal_seconds == LOOM_CKPT_SIGNAL_AUTO ? "auto" : buf, 1);
	}
	if (!regular_step(sp))
		return 0;
	if (task_info(sp, &ti) < 0)
		return -1;
	env = calloc(1, sizeof *env);
	if (!env) {
		slurm_error(LOOM_PREFIX "out of memory");
		return -1;
	}
	if (remote.plan && (int)ti.local_rank < remote.plan_ntasks) {
		p = &remote.plan[ti.local_rank];
		if (!remote.plan_simulated)
			bound = bind_task(p);
		/* always written, whatever the task had; set here, not through
		 * the list, whose values are shorter than a node's GPU UUIDs */
		if (p->cuda_visible[0]) {
			snprintf(buf, sizeof buf, "%d", p->device);
			if (spank_setenv(sp, "CUDA_VISIBLE_DEVICES", p->cuda_visible, 1) != ESPANK_SUCCESS ||
			    spank_setenv(sp, "LOOM_LOCAL_DEVICE", buf, 1) != ESPANK_SUCCESS) {
				slurm_error(LOOM_PREFIX "could not set CUDA_VISIBLE_DEVICES of task %u", ti.rank);
				rc = -1;
			}
		}
		if (p->nccl_ib_hca[0] && !loom_config_nccl(&loom_cfg, "NCCL_IB_HCA"))
			loom_envlist_add(env, "NCCL_IB_HCA", p->nccl_ib_hca, LOOM_OPT_AFFINITY);
	}
	if (remote.master_warning[0] && ti.rank == 0 && loom_eff.env == LOOM_ENV_TORCH)
		user_msg("warning: ", remote.master_warning);
	if (remote.topo_warning[0] && ti.local_rank == 0 && loom_eff.affinity.verbose)
		user_msg("warning: ", remote.topo_warning);
	if (remote.gpus_per_task_noop && ti.local_rank == 0) {
		char host[64] = "?", msg[300];
		getenv_sp(sp, "SLURMD_NODENAME", host, sizeof host);
		snprintf(msg, sizeof msg, "--loom-gpus-per-task=%d does nothing on node %s: the step has "
			 "no GPUs there (its tasks get CPUs and NUMA memory only)", loom_eff.gpus_per_task, host);
		user_msg("warning: ", msg);
	}
	loom_launch_env(&loom_cfg, loom_eff.env, &ti, bound, env);
	if (loom_env_apply(&loom_cfg, env, &ops) > 0) {
		slurm_error(LOOM_PREFIX "could not set the launch environment of task %u", ti.rank);
		rc = -1;
	}
	if (p)
		report_binding(sp, &ti, p, bound, loom_eff.affinity.verbose);
	free(env);
	if (rc == 0 && step_secret(sp, &ti) < 0)
		rc = -1;
	return rc;
}
