/* unit test: the requeue request libloom leaves, the decision to act on
 * it, and when the time-limit signal comes */
#include "config.h"
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../ckpt_timer.h"
#include "../job_log.h"
#include "../requeue.h"
#include "../save_times.h"
#include "../strbuf.h"
#include "../../t/tap.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* --loom-ckpt-signal=SIG@auto: the save times libloom keeps, and the
 * lead time from them */
static void t_save_times(void)
{
	struct loom_save_times st;
	char err[400], big[4000];
	is_int(loom_save_times_parse("loom-save-times 1\nstep=10 seconds=3.250 bytes=4096\n"
				     "step=20 seconds=7.500 bytes=8192\nstep=30 seconds=1.000 bytes=4096\n",
				     &st, err, sizeof err), 0, "save times: three records");
	ok(st.n == 3 && st.slowest_s == 7.5 && st.slowest_bytes == 8192 && st.slowest_step == 20,
	   "the slowest is step 20's, 7.5 s for 8192 bytes");
	is_int(loom_auto_lead(&st), 25, "lead: ceil(2 x 7.5 + 10) = 25 s");
	st.slowest_s = 0.01;
	is_int(loom_auto_lead(&st), LOOM_AUTO_FLOOR_S, "a quick save: the floor");
	st.slowest_s = 2.4;
	is_int(loom_auto_lead(&st), 15, "2.4 s: ceil(14.8) = 15 s");
	st.slowest_s = 6.01;
	is_int(loom_auto_lead(&st), 23, "6.01 s: ceil(22.02) = 23 s");
	st.slowest_s = 1e6;
	is_int(loom_auto_lead(&st), LOOM_AUTO_MAX_S, "a huge save: capped at the option's maximum");
	is_int(loom_save_times_parse("loom-save-times 1\n", &st, err, sizeof err), 0,
	       "a header and no record: no history");
	is_int(st.n, 0, "... zero records");
	const char *bad[] = { "", "loom-save-times 2\nstep=1 seconds=1 bytes=1\n",
			      "loom-save-times 1\nstep=1 seconds=1\n",
			      "loom-save-times 1\nstep=1 seconds=-1 bytes=1\n",
			      "loom-save-times 1\nstep=1 seconds=nan bytes=1\n",
			      "loom-save-times 1\nstep=1 seconds=1e9 bytes=1\n",
			      "loom-save-times 1\nstep=1 seconds=1 bytes=1 x=2\n",
			      "loom-save-times 1\nstep=x seconds=1 bytes=1\n",
			      "loom-save-times 1\nseconds=1 step=1 bytes=1\n",
			      "loom-save-times 1\nstep=1 seconds=1 bytes=99999999999999999999\n",
			      "\x1b[31mloom-save-times 1\n" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		is_int(loom_save_times_parse(bad[i], &st, err, sizeof err), -1,
		       "garbage %zu rejected: %s", i, err);
	ok(!strchr(err, 0x1b), "what is shown of it is cleaned");
	strcpy(big, "loom-save-times 1\n");
	for (int i = 0; i <= LOOM_SAVE_TIMES_RECORDS; i++)
		strcat(big, "step=1 seconds=1 bytes=1\n");
	is_int(loom_save_times_parse(big, &st, err, sizeof err), -1, "too many records rejected");
	like(err, "more than", "... and said");
}

/* the same read as the job's user for the save times: a link is not
 * followed, a file too large is refused */
static void t_save_times_as_user(const char *base)
{
	struct loom_user_ids me = { geteuid(), getegid(), NULL, 0 };
	char d[600], f[700], g[700], text[LOOM_SAVE_TIMES_MAX + 1], err[1200], big[3000];
	gid_t gid = getegid();
	me.groups = &gid;
	me.ngroups = 1;
	snprintf(d, sizeof d, "%s/times", base);
	mkdir(d, 0755);
	snprintf(f, sizeof f, "%s/%s", d, LOOM_SAVE_TIMES_FILE);
	write_file(f, "loom-save-times 1\nstep=1 seconds=2.000 bytes=3\n");
	is_int(loom_user_file_read_as(d, LOOM_SAVE_TIMES_FILE, &me, text, sizeof text, err,
				      sizeof err), 1, "save times read as the user");
	like(text, "step=1 seconds=2.000", "... its text");
	unlink(f);
	is_int(loom_user_file_read_as(d, LOOM_SAVE_TIMES_FILE, &me, text, sizeof text, err,
				      sizeof err), 0, "absent: no history");
	snprintf(g, sizeof g, "%s/elsewhere", d);
	write_file(g, "loom-save-times 1\n");
	symlink(g, f);
	is_int(loom_user_file_read_as(d, LOOM_SAVE_TIMES_FILE, &me, text, sizeof text, err,
				      sizeof err), -1, "a link in its place is not followed");
	like(err, "symbolic link", "... and said");
	unlink(f);
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = 0;
	write_file(f, big);
	is_int(loom_user_file_read_as(d, LOOM_SAVE_TIMES_FILE, &me, text, sizeof text, err,
				      sizeof err), -1, "a file larger than the bound is refused");
	like(err, "larger than 2048 bytes", "... and said");
	unlink(f);
	unlink(g);
	rmdir(d);
}

/* slurmstepd's read as the job's user: a real second user (nobody)
 * against root-only places, links and odd files */
static void t_read_as_user(const char *base)
{
	struct passwd *pw = getpwnam("nobody");
	struct loom_user_ids nobody, root = { 0, 0, NULL, 0 };
	char d[600], f[700], text[LOOM_REQUEUE_MAX + 1], err[1200], big[2000];
	gid_t g;

	if (geteuid() != 0 || !pw) {
		skip(16, geteuid() ? "not root: the read as another user needs root" : "no user nobody");
		return;
	}
	g = pw->pw_gid;
	nobody = (struct loom_user_ids){ pw->pw_uid, pw->pw_gid, &g, 1 };
	root.groups = &root.gid;
	root.ngroups = 1;
	chmod(base, 0755);
	/* a directory only root can enter, with a request in it */
	snprintf(d, sizeof d, "%s/root-only", base);
	mkdir(d, 0700);
	snprintf(f, sizeof f, "%s/%s", d, LOOM_REQUEUE_FILE);
	write_file(f, "job=5\nrestart=0\nslurm_step=0\nstep=9\n");
	is_int(loom_requeue_read_as(d, &root, text, sizeof text, err, sizeof err), 1,
	       "as root (a root job): the request is read");
	is_int(loom_requeue_read_as(d, &nobody, text, sizeof text, err, sizeof err), -1,
	       "as nobody: a root-only directory is not read (slurmstepd took the user's ids)");
	like(err, "Permission denied", "the reason is the user's own: permission denied");
	/* the user's directory is a link to it */
	snprintf(f, sizeof f, "%s/link", base);
	symlink(d, f);
	is_int(loom_requeue_read_as(f, &nobody, text, sizeof text, err, sizeof err), -1,
	       "a checkpoint directory that links to a root-only one: nothing read");
	like(err, "Permission denied", "... as the user could not either");
	/* the user's own directory, with the request a link to root's file */
	snprintf(d, sizeof d, "%s/pub", base);
	mkdir(d, 0755);
	if (chown(d, pw->pw_uid, pw->pw_gid) != 0)
		bail_out("chown %s: cannot give it to nobody", d);
	snprintf(f, sizeof f, "%s/%s", d, LOOM_REQUEUE_FILE);
	{
		char target[700];
		snprintf(target, sizeof target, "%s/root-only/%s", base, LOOM_REQUEUE_FILE);
		symlink(target, f);
	}
	is_int(loom_requeue_read_as(d, &nobody, text, sizeof text, err, sizeof err), -1,
	       "a request that is a link (to a root-only file) is not followed");
	like(err, "a symbolic link (not followed)", "... and the reason says so");
	unlink(f);
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	write_file(f, big);
	is_int(loom_requeue_read_as(d, &nobody, text, sizeof text, err, sizeof err), -1,
	       "a request larger than 1024 bytes is refused unread");
	like(err, "larger than 1024 bytes", "... saying so");
	unlink(f);
	mkfifo(f, 0666);
	is_int(loom_requeue_read_as(d, &nobody, text, sizeof text, err, sizeof err), -1,
	       "a FIFO is refused (no hang waiting for a writer)");
	like(err, "not a regular file", "... as not a regular file");
	unlink(f);
	is_int(loom_requeue_read_as(d, &nobody, text, sizeof text, err, sizeof err), 0,
	       "no request: 0, nothing to say");
	write_file(f, "job=5\nrestart=0\nslurm_step=0\nstep=9\n");
	is_int(loom_requeue_read_as(d, &nobody, text, sizeof text, err, sizeof err), 1,
	       "the user's own request is read as the user");
	is_str(text, "job=5\nrestart=0\nslurm_step=0\nstep=9\n", "its bytes come back over the pipe");
	snprintf(f, sizeof f, "%s/root-only", base);
	is_int(loom_requeue_remove_as(f, &nobody, err, sizeof err), -1,
	       "nobody cannot remove root's request");
	is_int(loom_requeue_remove_as(d, &nobody, err, sizeof err), 0,
	       "the user's request is removed as the user once acted on");
	snprintf(f, sizeof f, "%s/%s", d, LOOM_REQUEUE_FILE);
	ok(access(f, F_OK) != 0, "... and is gone");
	snprintf(f, sizeof f, "rm -rf %s/root-only %s/pub %s/link", base, base, base);
	if (system(f) != 0)
		diag("cleanup failed");
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* the job's own log of loom.so's decisions: appended as the user,
 * created 0600 by the user, never through a link or into a FIFO, bounded */
static void t_job_log(const char *base)
{
	struct loom_user_ids me = { geteuid(), getegid(), NULL, 0 };
	struct passwd *pw = getpwnam("nobody");
	char d[600], f[700], g[700], text[LOOM_REQUEUE_MAX + 1], err[1200], line[200];
	struct stat st;
	gid_t gid = getegid();
	me.groups = &gid;
	me.ngroups = 1;
	snprintf(d, sizeof d, "%s/joblog", base);
	mkdir(d, 0755);
	snprintf(f, sizeof f, "%s/%s", d, LOOM_JOB_LOG_FILE);
	is_int(loom_user_file_append_as(d, LOOM_JOB_LOG_FILE, &me, "one\n", 100, err, sizeof err), 0,
	       "a line appended as the user creates the file");
	ok(stat(f, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_uid == geteuid(),
	   "... mode 0600, the user's");
	loom_user_file_append_as(d, LOOM_JOB_LOG_FILE, &me, "two\n", 100, err, sizeof err);
	is_int(loom_user_file_read_as(d, LOOM_JOB_LOG_FILE, &me, text, sizeof text, err, sizeof err),
	       1, "read back");
	is_str(text, "one\ntwo\n", "... the lines in order");
	memset(line, 'x', 90);
	strcpy(line + 90, "\n");
	loom_user_file_append_as(d, LOOM_JOB_LOG_FILE, &me, line, 100, err, sizeof err);
	loom_user_file_append_as(d, LOOM_JOB_LOG_FILE, &me, "three\n", 100, err, sizeof err);
	loom_user_file_read_as(d, LOOM_JOB_LOG_FILE, &me, text, sizeof text, err, sizeof err);
	ok(!strncmp(text, "(earlier lines removed", 22) && strstr(text, "\nthree\n") &&
	   !strstr(text, "one"), "a file that would pass its bound starts again, saying so");
	ok(file_size(f) <= 100, "... and stays within it");
	unlink(f);
	snprintf(g, sizeof g, "%s/elsewhere", d);
	write_file(g, "");
	symlink(g, f);
	is_int(loom_user_file_append_as(d, LOOM_JOB_LOG_FILE, &me, "x\n", 100, err, sizeof err), -1,
	       "a link in its place is not followed");
	like(err, "symbolic link", "... and said");
	is_int((int)file_size(g), 0, "... its target untouched");
	unlink(f);
	mkfifo(f, 0600);
	is_int(loom_user_file_append_as(d, LOOM_JOB_LOG_FILE, &me, "x\n", 100, err, sizeof err), -1,
	       "a FIFO in its place: refused, no hang waiting for a reader");
	unlink(f);
	mkdir(f, 0700);
	is_int(loom_user_file_append_as(d, LOOM_JOB_LOG_FILE, &me, "x\n", 100, err, sizeof err), -1,
	       "a directory in its place: refused");
	rmdir(f);
	loom_job_log(d, &me, "job 7: not requeued: \033[2Jwhy");
	loom_user_file_read_as(d, LOOM_JOB_LOG_FILE, &me, text, sizeof text, err, sizeof err);
	ok(text[0] >= '0' && text[0] <= '9' && strchr(text, 'T') &&
	   !strcmp(strchr(text, ' '), " loom: job 7: not requeued: ?[2Jwhy\n"),
	   "loom_job_log: the local time, the loom: prefix, control characters as ?, one line");
	unlink(f);
	if (geteuid() == 0 && pw) {
		gid_t ng = pw->pw_gid;
		struct loom_user_ids nobody = { pw->pw_uid, pw->pw_gid, &ng, 1 };
		chmod(d, 0700);
		is_int(loom_user_file_append_as(d, LOOM_JOB_LOG_FILE, &nobody, "x\n", 100, err,
						sizeof err), -1,
		       "as nobody: nothing is written into a root-only directory");
		ok(access(f, F_OK) != 0, "... no file made there");
		chmod(d, 0755);
	} else {
		skip(2, "not root, or no user nobody");
	}
	unlink(g);
	rmdir(d);
}

int main(void)
{
	struct loom_requeue_req r;
	struct loom_job_view v;
	char err[600], text[512], base[] = "/tmp/loom-requeue-test.XXXXXX", p[600], q[600];
	time_t wait = -1;

	plan(NO_PLAN);

	/* the request */
	is_int(loom_requeue_parse("job=1234\nrestart=2\nslurm_step=0\nstep=85\nsignal=TERM\n", &r, err,
				  sizeof err), 0, "a request as libloom writes it parses");
	ok(r.job == 1234 && r.restart == 2 && r.slurm_step == 0 && r.step == 85 &&
	   !strcmp(r.signal, "TERM"), "job, restart, Slurm step, step and signal read back");
	is_int(loom_requeue_parse("step=3\nextra=x\nslurm_step=4\nrestart=0\njob=7", &r, err, sizeof err), 0,
	       "any order, unknown keys ignored, no final newline");
	is_int(loom_requeue_parse("job=7\nrestart=0\nslurm_step=1\n", &r, err, sizeof err), -1,
	       "step missing refused");
	like(err, "missing step=", "the message names the missing key");
	is_int(loom_requeue_parse("job=7\nrestart=0\nstep=1\n", &r, err, sizeof err), -1,
	       "a request that names no Slurm step is refused (an older or a forged one)");
	like(err, "missing slurm_step=", "... naming the key");
	is_int(loom_requeue_parse("job=7\nrestart=0\nslurm_step=none\nstep=1\n", &r, err, sizeof err), 0,
	       "slurm_step=none (written outside a step) parses ...");
	is_int((int)r.slurm_step, -1, "... as no step, which no step takes for its own");
	is_int(loom_requeue_parse("job=7\nrestart=0\nslurm_step=1\nstep=1\nsignal=\033[2J\n", &r, err,
				  sizeof err), -1, "a signal name with control characters is refused");
	ok(!strchr(err, '\033'), "and the message does not carry the escape character");
	like(err, "'signal=?[2J': bad value", "it shows it as ?");
	{
		char evil[120];
		snprintf(evil, sizeof evil, "job=\033]0;owned\a%s\n", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
		is_int(loom_requeue_parse(evil, &r, err, sizeof err), -1, "a job id made of control characters is refused");
		ok(!strchr(err, '\033') && !strchr(err, '\a'), "no control character reaches the message");
		ok(strlen(err) < 70 && strstr(err, "...'"), "the line is cut at 40 characters, marked ...: %s", err);
	}
	is_int(loom_requeue_parse("job=x\nrestart=0\nslurm_step=0\nstep=1\n", &r, err, sizeof err), -1, "bad job id refused");
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
	t_read_as_user(base);
	t_save_times_as_user(base);
	t_job_log(base);
	rmdir(base);

	/* the decision */
	loom_requeue_parse("job=42\nrestart=1\nslurm_step=3\nstep=10\nsignal=TERM\n", &r, err, sizeof err);
	memset(&v, 0, sizeof v);
	v.job = 42;
	v.restart = 1;
	v.slurm_step = 3;
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
	v.slurm_step = 4;
	is_int(loom_requeue_decide(&r, &v), LOOM_REQUEUE_OTHER_RUN,
	       "an earlier step's request (its requeue failed): a later step does not act on it");
	v.slurm_step = 3;
	v.running = 0;
	is_int(loom_requeue_decide(&r, &v), LOOM_REQUEUE_NOT_RUNNING, "a cancelled job stays cancelled");
	like(loom_requeue_verdict_str(LOOM_REQUEUE_NOT_RUNNING), "cancelled", "the reason says cancelled");
	is_str(loom_requeue_reason(0, LOOM_REQUEUE_NOT_RUNNING), "cancel", "reason: scancel");
	is_str(loom_requeue_reason(0, LOOM_REQUEUE_YES), "preempt", "reason: SIGTERM, job running");
	is_str(loom_requeue_reason(1, LOOM_REQUEUE_YES), "timelimit", "reason: the timer's signal");
	is_str(loom_requeue_reason(1, LOOM_REQUEUE_NOT_RUNNING), "timelimit",
	       "reason: the timer's signal, then cancelled: still the time limit");
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
	t_save_times();
	done_testing();
	return exit_status();
}
