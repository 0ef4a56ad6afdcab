/* spank/requeue.h: requeue a job whose tasks committed a checkpoint
 * because a stop signal (preemption's SIGTERM, --loom-ckpt-signal) asked
 * for one. libloom leaves LOOM_CKPT_DIR/.loom-requeue (docs/environment.md,
 * "Requeue after a checkpoint"); slurmstepd on the step's first node reads
 * it as tasks exit and asks slurmctld to requeue the job. */
#ifndef LOOM_SPANK_REQUEUE_H
#define LOOM_SPANK_REQUEUE_H

#include <stddef.h>

#define LOOM_REQUEUE_FILE ".loom-requeue"

struct loom_requeue_req {
	unsigned long job;      /* SLURM_JOB_ID of the run that wrote it */
	long restart;           /* its SLURM_RESTART_COUNT */
	long long step;         /* the checkpoint's step */
	char signal[16];        /* the stop signal, e.g. TERM */
};

/* "job=N\nrestart=N\nstep=N\nsignal=NAME\n" (any order, other keys
 * ignored). 0, or -1 with err naming what is wrong. */
int loom_requeue_parse(const char *text, struct loom_requeue_req *r, char *err, size_t errlen);

/* Read DIR/.loom-requeue (a regular file, not followed if a symlink,
 * at most len-1 bytes): 1 read, 0 absent, -1 error (err says). */
int loom_requeue_read(const char *dir, char *text, size_t len, char *err, size_t errlen);

/* What slurmctld says of the job, and who we are */
struct loom_job_view {
	unsigned long job;
	long restart;           /* SLURM_RESTART_COUNT of this run */
	int batch;              /* a batch job (only those can be requeued) */
	int running;            /* RUNNING: not cancelled, not already requeued */
	char state[32];         /* for the message */
};

enum loom_requeue_verdict {
	LOOM_REQUEUE_YES,
	LOOM_REQUEUE_NO_REQUEST,        /* no checkpoint was asked for by a signal */
	LOOM_REQUEUE_OTHER_RUN,         /* the request is another job's or an earlier run's */
	LOOM_REQUEUE_NOT_BATCH,         /* srun/salloc job: Slurm cannot requeue it */
	LOOM_REQUEUE_NOT_RUNNING,       /* cancelled, or Slurm is requeueing it already */
};

/* req NULL: there is none */
enum loom_requeue_verdict loom_requeue_decide(const struct loom_requeue_req *req,
					      const struct loom_job_view *job);
const char *loom_requeue_verdict_str(enum loom_requeue_verdict v);

#endif
