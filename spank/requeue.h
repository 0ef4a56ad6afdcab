/* spank/requeue.h: requeue a job whose tasks committed a checkpoint
 * because a stop signal (preemption's SIGTERM, --loom-ckpt-signal) asked
 * for one. libloom leaves LOOM_CKPT_DIR/.loom-requeue (docs/environment.md,
 * "Requeue after a checkpoint"); slurmstepd on the step's first node reads
 * it as tasks exit and asks slurmctld to requeue the job. */
#ifndef LOOM_SPANK_REQUEUE_H
#define LOOM_SPANK_REQUEUE_H

#include "../common/loom_files.h" /* LOOM_REQUEUE_FILE */

#include <stddef.h>
#include <sys/types.h>

/* a request is a few short lines; anything larger is not one */
#define LOOM_REQUEUE_MAX 1024

struct loom_requeue_req {
	unsigned long job;      /* SLURM_JOB_ID of the run that wrote it */
	long restart;           /* its SLURM_RESTART_COUNT */
	long slurm_step;        /* its SLURM_STEP_ID, -1 when it had none */
	long long step;         /* the checkpoint's step */
	char signal[16];        /* the stop signal, e.g. TERM */
};

/* "job=N\nrestart=N\nslurm_step=N\nstep=N\nsignal=NAME\n" (any order,
 * other keys ignored; slurm_step=none: written outside a Slurm step).
 * 0, or -1 with err naming what is wrong (the text shown cleaned and cut,
 * never verbatim). */
int loom_requeue_parse(const char *text, struct loom_requeue_req *r, char *err, size_t errlen);

/* Read DIR/.loom-requeue in this process: DIR opened, the file opened in
 * it without following a link, a regular file of at most len-1 bytes.
 * 1 read, 0 absent, -1 error (err says). */
int loom_requeue_read(const char *dir, char *text, size_t len, char *err, size_t errlen);

/* The job's user, as whom slurmstepd (root) reaches into DIR */
struct loom_user_ids {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	int ngroups;
};

/* loom_requeue_read in a child that first becomes the job's user
 * (groups, gid, uid): root never opens a path the user controls. The
 * bytes come back over a pipe; a child that does not answer within
 * LOOM_REQUEUE_TIMEOUT_S is killed. Same results as loom_requeue_read. */
#define LOOM_REQUEUE_TIMEOUT_S 10
int loom_requeue_read_as(const char *dir, const struct loom_user_ids *ids, char *text, size_t len,
			 char *err, size_t errlen);
/* The same for any small file NAME of the user's in DIR (the save times
 * of --loom-ckpt-signal=SIG@auto) */
int loom_user_file_read_as(const char *dir, const char *name, const struct loom_user_ids *ids,
			   char *text, size_t len, char *err, size_t errlen);
/* Append the terminated line to the user's file NAME in DIR the same way
 * (as the user; created mode 0600 when missing; O_APPEND, no link
 * followed, a regular file only); a file that would grow past max bytes
 * is emptied first, a line saying so. 0, or -1 with err */
int loom_user_file_append_as(const char *dir, const char *name, const struct loom_user_ids *ids,
			     const char *line, size_t max, char *err, size_t errlen);
/* Remove DIR/.loom-requeue the same way (a request is acted on once):
 * 0 (also when absent), -1 with err */
int loom_requeue_remove_as(const char *dir, const struct loom_user_ids *ids, char *err,
			   size_t errlen);

/* What slurmctld says of the job, and who we are */
struct loom_job_view {
	unsigned long job;
	long restart;           /* SLURM_RESTART_COUNT of this run */
	long slurm_step;        /* the step whose tasks are exiting */
	int batch;              /* a batch job (only those can be requeued) */
	int running;            /* RUNNING: not cancelled, not already requeued */
	char state[64];         /* for the message ("OUT_OF_MEMORY+REQUEUE+COMPLETING" fits) */
};

enum loom_requeue_verdict {
	LOOM_REQUEUE_YES,
	LOOM_REQUEUE_NO_REQUEST,        /* no checkpoint was asked for by a signal */
	LOOM_REQUEUE_OTHER_RUN,         /* another job's, an earlier run's or another step's */
	LOOM_REQUEUE_NOT_BATCH,         /* srun/salloc job: Slurm cannot requeue it */
	LOOM_REQUEUE_NOT_RUNNING,       /* cancelled, or Slurm is requeueing it already */
};

/* 1 when req names job->job, job->restart and job->slurm_step */
int loom_requeue_ours(const struct loom_requeue_req *req, const struct loom_job_view *job);
/* req NULL: there is none */
enum loom_requeue_verdict loom_requeue_decide(const struct loom_requeue_req *req,
					      const struct loom_job_view *job);
const char *loom_requeue_verdict_str(enum loom_requeue_verdict v);
/* Why the job stopped, for the slurmd log: "timelimit" when loom.so's
 * --loom-ckpt-signal timer sent the signal (timer_fired), "cancel" when
 * the job is no longer running (scancel), else "preempt" (a SIGTERM that
 * Slurm sent while the job keeps running: preemption, or a signal sent by
 * hand) */
const char *loom_requeue_reason(int timer_fired, enum loom_requeue_verdict v);

#endif
