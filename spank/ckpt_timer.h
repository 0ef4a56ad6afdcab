/* spank/ckpt_timer.h: --loom-ckpt-signal=SIG@SECONDS. A thread in the
 * slurmstepd of the step's first node asks slurmctld for the job's end
 * time and, SECONDS before it, has Slurm signal every task of the step
 * (slurm_signal_job_step: the same delivery as sbatch --signal). The end
 * time is asked again at least every LOOM_TIMER_RECHECK seconds, so a
 * changed time limit is followed. The first look is made by
 * loom_ckpt_timer_start itself, before the tasks run, so a step that
 * starts inside the window is refused in the job log even when its tasks
 * end at once.
 * SIG@auto (seconds LOOM_CKPT_SIGNAL_AUTO): the lead time is taken at
 * every look from the save times libloom keeps in the checkpoint
 * directory (save_times.h), read as the job's user. */
#ifndef LOOM_SPANK_CKPT_TIMER_H
#define LOOM_SPANK_CKPT_TIMER_H

#include <stdint.h>
#include <time.h>

#include "requeue.h"

#define LOOM_TIMER_RECHECK 300
/* SIG@auto: the save times are read again this often (a save made since
 * may change the lead time) */
#define LOOM_TIMER_AUTO_RECHECK 10

enum loom_timer_action {
	LOOM_TIMER_FIRE,        /* signal now */
	LOOM_TIMER_WAIT,        /* ask again in *wait seconds */
	LOOM_TIMER_TOO_LATE,    /* the step started inside the window: never */
};

/* first: this is the first look at the end time (the step just started).
 * end 0 or far away: no limit, look again later. */
enum loom_timer_action loom_timer_next(time_t now, time_t end, int seconds, int first,
				       time_t *wait);

/* Start/stop the thread (slurmstepd only). start: 0, or -1 with err.
 * dir ("" without --loom-ckpt) and ids are copied: SIG@auto reads the
 * save times there, and each decision also goes to the job's own log
 * there (job_log.h). */
int loom_ckpt_timer_start(uint32_t job, uint32_t step, int sig, int seconds, const char *dir,
			  const struct loom_user_ids *ids, char *err, size_t errlen);
/* 1 when it has signalled the step */
int loom_ckpt_timer_fired(void);
void loom_ckpt_timer_stop(void);

#endif
