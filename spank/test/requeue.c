/* unit test: the requeue request libloom leaves, the decision to act on
 * it, and when the time-limit signal comes */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../ckpt_timer.h"
#include "../requeue.h"
#include "../../t/tap.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

int main(void)
{
	struct loom_requeue_req r;
	struct loom_job_view v;
	char err[600], text[512], base[] = "/tmp/loom-requeue-test.XXXXXX", p[600], q[600];
	time_t wait = -1;

	plan(NO_PLAN);

	/* the request */
	is_int(loom_requeue_parse("job=1234\nrestart=2\nstep=85\nsignal=TERM\n", &r, err, sizeof err), 0,
	       "a request as libloom writes it parses");
	ok(r.job == 1234 && r.restart == 2 && r.step == 85 && !strcmp(r.signal, "TERM"),
	   "job, restart, step and signal read back");
	is_int(loom_requeue_parse("step=3\nextra=x\nrestart=0\njob=7", &r, err, sizeof err), 0,
	       "any order, unknown keys ignored, no final newline");
	is_int(loom_requeue_parse("job=7\nrestart=0\n", &r, err, sizeof err), -1, "step missing refused");
	like(err, "missing step=", "the message names the missing key");
	is_int(loom_requeue_parse("job=x\nrestart=0\nstep=1\n", &r, err, sizeof err), -1, "bad job id refused");
	like(err, "'job=x': bad value", "the message names the line");
	is_int(loom_requeue_parse("job=-1\nrestart=0\nstep=1\n", &r, err, sizeof err), -1, "negative job id refused");
	is_int(loom_requeue_parse("job=0\nrestart=0\nstep=1\n", &r, err, sizeof err), -1, "job id 0 refused");
	is_int(loom_requeue_parse("job=1\nrestart=70000\nstep=1\n", &r, err, sizeof err), -1,
	       "restart count beyond Slurm's 16 bits refused");
	is_int(loom_requeue_parse("garbage\n", &r, err, sizeof err), -1, "a line without = refused");
	{
		char longline[300];
		memset(longline, 'a', sizeof longline - 1);
		longline[sizeof longline - 1] = '\0';
		is_int(loom_requeue_parse(longline, &r, err, sizeof err), -1, "an overlong line refused");
	}

	/* reading it */
	if (!mkdtemp(base))
		bail_out("mkdtemp failed");
	is_int(loom_requeue_read(base, text, sizeof text, err, sizeof err), 0, "no request: 0");
	snprintf(p, sizeof p, "%s/%s", base, LOOM_REQUEUE_FILE);
	write_file(p, "job=5\nrestart=0\nstep=9\n");
	is_int(loom_requeue_read(base, text, sizeof text, err, sizeof err), 1, "a request is read");
	is_str(text, "job=5\nrestart=0\nstep=9\n", "its text");
	unlink(p);
	snprintf(q, sizeof q, "%s/elsewhere", base);
	write_file(q, "job=5\nrestart=0\nstep=9\n");
	if (symlink(q, p) == 0) {
		is_int(loom_requeue_read(base, text, sizeof text, err, sizeof err), -1,
		       "a symlink is not followed (slurmstepd reads it as root)");
		unlink(p);
	}
	mkdir(p, 0755);
	is_int(loom_requeue_read(base, text, sizeof text, err, sizeof err), -1, "a directory is refused");
	like(err, "not a regular file", "and the message says so");
	rmdir(p);
	unlink(q);
	rmdir(base);

	/* the decision */
	loom_requeue_parse("job=42\nrestart=1\nstep=10\nsignal=TERM\n", &r, err, sizeof err);
	memset(&v, 0, sizeof v);
	v.job = 42;
	v.restart = 1;
	v.batch = 1;
	v.running = 1;
	is_int(loom_requeue_decide(&r, &v), LOOM_REQUEUE_YES, "this run's request, batch job running: requeue");
	is_int(loom_requeue_decide(NULL, &v), LOOM_REQUEUE_NO_REQUEST, "no request: a normal end, no requeue");
	v.restart = 2;
	is_int(loom_requeue_decide(&r, &v), LOOM_REQUEUE_OTHER_RUN, "an earlier run's request: no requeue");
	v.restart = 1;
	v.job = 43;
	is_int(loom_requeue_decide(&r, &v), LOOM_REQUEUE_OTHER_RUN, "another job's request: no requeue");
	v.job = 42;
	v.running = 0;
	is_int(loom_requeue_decide(&r, &v), LOOM_REQUEUE_NOT_RUNNING, "a cancelled job stays cancelled");
	like(loom_requeue_verdict_str(LOOM_REQUEUE_NOT_RUNNING), "cancelled", "the reason says cancelled");
	v.running = 1;
	v.batch = 0;
	is_int(loom_requeue_decide(&r, &v), LOOM_REQUEUE_NOT_BATCH, "an srun-only job cannot be requeued");

	/* the time-limit signal */
	is_int(loom_timer_next(1000, 0, 60, 1, &wait), LOOM_TIMER_WAIT, "no end time: wait");
	is_int((int)wait, LOOM_TIMER_RECHECK, "and ask again later");
	is_int(loom_timer_next(1000, 1000 + 400L * 24 * 3600, 60, 1, &wait), LOOM_TIMER_WAIT,
	       "no time limit (end far away): wait");
	is_int(loom_timer_next(1000, 1000 + 3600, 60, 1, &wait), LOOM_TIMER_WAIT, "an hour left: wait");
	is_int((int)wait, LOOM_TIMER_RECHECK, "at most the recheck interval, so a changed limit is seen");
	is_int(loom_timer_next(1000, 1100, 60, 0, &wait), LOOM_TIMER_WAIT, "100 s left, signal at 60: wait");
	is_int((int)wait, 40, "exactly until the signal is due");
	is_int(loom_timer_next(1040, 1100, 60, 0, &wait), LOOM_TIMER_FIRE, "60 s left: signal now");
	is_int(loom_timer_next(1090, 1100, 60, 0, &wait), LOOM_TIMER_FIRE, "late wake-up: still signal");
	is_int(loom_timer_next(1050, 1100, 60, 1, &wait), LOOM_TIMER_TOO_LATE,
	       "a step starting inside the window gets no signal (no requeue loop)");
	done_testing();
	return exit_status();
}
