/* spank/job_log.h: what loom.so decided about a job's stop signal and
 * requeue, for the job's user. slurmstepd's log (slurm_info/slurm_error)
 * is the admin's; the same lines are appended, as the user, to
 * LOOM_CKPT_DIR/.loom-requeue.log, which the user can read
 * (docs/environment.md, "What loom.so decided"). */
#ifndef LOOM_SPANK_JOB_LOG_H
#define LOOM_SPANK_JOB_LOG_H

#include "requeue.h"

#define LOOM_JOB_LOG_FILE ".loom-requeue.log"
/* a few hundred lines; past this the file starts again */
#define LOOM_JOB_LOG_MAX (64 * 1024)

/* "<local time> loom: MSG\n" appended to DIR/.loom-requeue.log as the
 * user ids (msg cleaned of control characters). A failure is said in the
 * slurmd log only: the decision stands. dir NULL or empty: nothing. */
void loom_job_log(const char *dir, const struct loom_user_ids *ids, const char *msg);

/* a decision: the slurmd log (slurm_error when is_error, else
 * slurm_info) for the admin, and the same line through loom_job_log for
 * the user */
void loom_job_decided(int is_error, const char *dir, const struct loom_user_ids *ids,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
