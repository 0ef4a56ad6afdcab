/* spank/ckpt_timer.c: the time-limit stop signal (see ckpt_timer.h). */
#include "config.h"
#include "ckpt_timer.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "job_log.h"
#include "loom_spank.h"
#include "options.h"
#include "save_times.h"
#include "strbuf.h"

/* a year away counts as no limit (Slurm reports INFINITE as far future) */
#define NO_LIMIT_AFTER (365L * 24 * 3600)

enum loom_timer_action loom_timer_next(time_t now, time_t end, int seconds, int first,
				       time_t *wait)
{
	time_t at;
	if (end <= 0 || end - now > NO_LIMIT_AFTER) {
		*wait = LOOM_TIMER_RECHECK;
		return LOOM_TIMER_WAIT;
	}
	at = end - seconds;
	if (now >= at) {
		/* Started inside the window: signalling now would checkpoint and
		 * requeue at every start, forever. */
		if (first)
			return LOOM_TIMER_TOO_LATE;
		return LOOM_TIMER_FIRE;
	}
	*wait = at - now < LOOM_TIMER_RECHECK ? at - now : LOOM_TIMER_RECHECK;
	return LOOM_TIMER_WAIT;
}

static struct {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int running, stop, fired;
	int looked;             /* the first look is made once per step */
	uint32_t job, step;
	int sig, seconds;       /* seconds: the lead time (@auto: the one chosen last) */
	int is_auto;            /* SIG@auto */
	time_t first_wait;      /* from the first look, made by start */
	/* the checkpoint directory ("" without --loom-ckpt) and its user:
	 * @auto reads the save times there, and what the timer decides goes
	 * to the job's own log there too; the last @auto reason logged (each
	 * change of lead or reason is logged once) */
	char dir[LOOM_CKPT_PATH_MAX];
	struct loom_user_ids ids;
	gid_t groups[64];
	char said[2700];
} T = { .mu = PTHREAD_MUTEX_INITIALIZER };

static const char *signame(int sig, char *buf, size_t len)
{
	const char *n = loom_signal_name(sig);
	if (n)
		snprintf(buf, len, "SIG%s", n);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

/* sleep up to secs; 1 when asked to stop */
static int nap(time_t secs)
{
	struct timespec ts;
	int stop;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += secs;
	pthread_mutex_lock(&T.mu);
	while (!T.stop && pthread_cond_timedwait(&T.cv, &T.mu, &ts) != ETIMEDOUT)
		;
	stop = T.stop;
	pthread_mutex_unlock(&T.mu);
	return stop;
}

/* @auto: the lead time from DIR/.loom-save-times, read as the job's user
 * (root never opens what the user controls), into T.seconds; the reason
 * logged whenever it changes */
static void auto_lead(void)
{
	char text[LOOM_SAVE_TIMES_MAX + 1], err[1200], why[2600], sn[32];
	struct loom_save_times st;
	int r = loom_user_file_read_as(T.dir, LOOM_SAVE_TIMES_FILE, &T.ids, text, sizeof text, err,
				       sizeof err), lead = LOOM_CKPT_SIGNAL_DEFAULT_SECONDS, bad = 0;
	if (r > 0 && loom_save_times_parse(text, &st, err, sizeof err) < 0)
		r = -1;
	if (r < 0) {
		loom_log_clean(err);
		snprintf(why, sizeof why, "the save times %s/%s are unusable (%s): ignored, the "
			 "default %d s", T.dir, LOOM_SAVE_TIMES_FILE, err, lead);
		bad = 1;
	} else if (r == 0 || st.n == 0) {
		snprintf(why, sizeof why, "no save recorded yet in %s/%s: the default %d s", T.dir,
			 LOOM_SAVE_TIMES_FILE, lead);
	} else {
		lead = loom_auto_lead(&st);
		snprintf(why, sizeof why, "the slowest of the last %d saves (step %lld) took %.2f s "
			 "for %llu bytes: max(%d s, ceil(%.0f x %.2f s + %.0f s)) = %d s", st.n,
			 st.slowest_step, st.slowest_s, st.slowest_bytes, LOOM_AUTO_FLOOR_S,
			 LOOM_AUTO_FACTOR, st.slowest_s, LOOM_AUTO_MARGIN_S, lead);
	}
	T.seconds = lead;      /* only the thread that looks uses it */
	signame(T.sig, sn, sizeof sn);
	/* said when the lead time or the kind of reason changes, not at
	 * every look (a garbage file: when what is wrong with it changes) */
	char key[sizeof T.said];
	snprintf(key, sizeof key, "%d %s", lead, bad ? why : r > 0 && st.n ? "measured" : "none");
	if (strcmp(key, T.said)) {
		snprintf(T.said, sizeof T.said, "%s", key);
		loom_job_decided(bad, T.dir, &T.ids, "step %u.%u: --loom-ckpt-signal=%s@auto: lead time %d s: %s", T.job,
			  T.step, sn + 3 * !strncmp(sn, "SIG", 3), lead, why);
	}
}

/* One look at the end time. Returns what to do; *wait when WAIT. */
static enum loom_timer_action look(int first, time_t *wait)
{
	char sn[32];
	time_t end = 0, now;
	enum loom_timer_action a;

	signame(T.sig, sn, sizeof sn);
	if (T.is_auto)
		auto_lead();
	if (slurm_get_end_time(T.job, &end) != SLURM_SUCCESS) {
		slurm_info(LOOM_PREFIX "job %u: cannot get its end time (%s); asking again in 60 s",
			   T.job, slurm_strerror(slurm_get_errno()));
		*wait = 60;
		return LOOM_TIMER_WAIT;
	}
	now = time(NULL);
	a = loom_timer_next(now, end, T.seconds, first, wait);
	/* @auto: a save made meanwhile may change the lead time */
	if (a == LOOM_TIMER_WAIT && T.is_auto && *wait > LOOM_TIMER_AUTO_RECHECK)
		*wait = LOOM_TIMER_AUTO_RECHECK;
	if (a == LOOM_TIMER_TOO_LATE)
		loom_job_decided(1, T.dir, &T.ids, "--loom-ckpt-signal=%s@%s%d: step %u.%u started %ld s before the job's "
			  "time limit, inside the signal window: no %s will come (ask for a longer "
			  "--time or fewer SECONDS)", sn + (strncmp(sn, "SIG", 3) ? 0 : 3),
			  T.is_auto ? "auto, lead " : "", T.seconds, T.job, T.step, (long)(end - now),
			  sn);
	return a;
}

static void fire(void)
{
	char sn[32];
	signame(T.sig, sn, sizeof sn);
	if (slurm_signal_job_step(T.job, T.step, (uint32_t)T.sig) != SLURM_SUCCESS) {
		loom_job_decided(1, T.dir, &T.ids, "step %u.%u: could not send %s before the time limit: %s", T.job,
			  T.step, sn, slurm_strerror(slurm_get_errno()));
		return;
	}
	loom_job_decided(0, T.dir, &T.ids, "step %u.%u: sent %s, %d s before the time limit%s", T.job, T.step, sn,
		  T.seconds, T.is_auto ? " (@auto)" : "");
	pthread_mutex_lock(&T.mu);
	T.fired = 1;
	pthread_mutex_unlock(&T.mu);
}

static void *timer_main(void *arg)
{
	time_t wait = T.first_wait;
	(void)arg;
	while (!nap(wait)) {
		enum loom_timer_action a = look(0, &wait);
		if (a == LOOM_TIMER_FIRE) {
			fire();
			break;
		}
	}
	return NULL;
}

int loom_ckpt_timer_start(uint32_t job, uint32_t step, int sig, int seconds, const char *dir,
			  const struct loom_user_ids *ids, char *err, size_t errlen)
{
	pthread_condattr_t ca;
	int rc;
	/* every task of the step comes here: one look, one refusal at most */
	if (T.running || T.looked)
		return 0;
	T.looked = 1;
	T.job = job;
	T.step = step;
	T.sig = sig;
	T.is_auto = seconds == LOOM_CKPT_SIGNAL_AUTO;
	T.seconds = T.is_auto ? LOOM_CKPT_SIGNAL_DEFAULT_SECONDS : seconds;
	T.stop = T.fired = 0;
	T.said[0] = '\0';
	T.dir[0] = '\0';
	if (dir && dir[0]) {
		int n = ids->ngroups < 64 ? ids->ngroups : 64;  /* Slurm's list, copied */
		snprintf(T.dir, sizeof T.dir, "%s", dir);
		T.ids = *ids;
		memcpy(T.groups, ids->groups, sizeof T.groups[0] * (size_t)(n > 0 ? n : 0));
		T.ids.groups = T.groups;
		T.ids.ngroups = n;
	}
	/* The first look is made here, before the tasks are let go: a
	 * refusal is then logged while the step's output is still open (a
	 * task that ends at once would otherwise take it away first). */
	if (look(1, &T.first_wait) == LOOM_TIMER_TOO_LATE)
		return 0;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&T.cv, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&T.th, NULL, timer_main, NULL);
	if (rc) {
		pthread_cond_destroy(&T.cv);
		snprintf(err, errlen, "cannot start the --loom-ckpt-signal timer: %s", strerror(rc));
		return -1;
	}
	T.running = 1;
	return 0;
}

int loom_ckpt_timer_fired(void)
{
	int f;
	pthread_mutex_lock(&T.mu);
	f = T.fired;
	pthread_mutex_unlock(&T.mu);
	return f;
}

void loom_ckpt_timer_stop(void)
{
	if (!T.running)
		return;
	pthread_mutex_lock(&T.mu);
	T.stop = 1;
	pthread_cond_signal(&T.cv);
	pthread_mutex_unlock(&T.mu);
	/* Joined, never left behind: the plugin is unloaded after this. A
	 * call to slurmctld in flight ends within Slurm's MessageTimeout. */
	pthread_join(T.th, NULL);
	pthread_cond_destroy(&T.cv);
	T.running = 0;
}
