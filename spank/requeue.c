/* spank/requeue.c: the requeue request left by libloom, reading it as
 * the job's user, and whether to act on it (slurmstepd's part is in
 * ctx_remote.c). */
#include "config.h"
#include "requeue.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "strbuf.h"

static int parse_num(const char *v, long long lo, long long *out)
{
	char *end;
	long long x;
	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || *end || x < lo)
		return -1;
	*out = x;
	return 0;
}

static int signal_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= sizeof((struct loom_requeue_req *)0)->signal)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9')))
			return 0;
	return 1;
}

int loom_requeue_parse(const char *text, struct loom_requeue_req *r, char *err, size_t errlen)
{
	int have_job = 0, have_restart = 0, have_step = 0, have_sstep = 0;
	const char *p = text;
	char shown[64];

	memset(r, 0, sizeof *r);
	while (*p) {
		char line[128];
		size_t n = strcspn(p, "\n");
		const char *eq;
		long long v;
		if (n >= sizeof line) {
			snprintf(err, errlen, "a line longer than %zu characters", sizeof line - 1);
			return -1;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (p[n] == '\n');
		if (!line[0])
			continue;
		loom_str_clean(shown, sizeof shown, line, 40);
		if (!(eq = strchr(line, '='))) {
			snprintf(err, errlen, "'%s' is not KEY=VALUE", shown);
			return -1;
		}
		if (!strncmp(line, "job=", 4)) {
			if (parse_num(eq + 1, 1, &v) < 0 || v > 0xffffffffLL)
				goto bad;
			r->job = (unsigned long)v;
			have_job = 1;
		} else if (!strncmp(line, "restart=", 8)) {
			if (parse_num(eq + 1, 0, &v) < 0 || v > 0xffff)
				goto bad;
			r->restart = (long)v;
			have_restart = 1;
		} else if (!strncmp(line, "slurm_step=", 11)) {
			if (!strcmp(eq + 1, "none"))
				v = -1;
			else if (parse_num(eq + 1, 0, &v) < 0 || v > 0xffffffffLL)
				goto bad;
			r->slurm_step = (long)v;
			have_sstep = 1;
		} else if (!strncmp(line, "step=", 5)) {
			if (parse_num(eq + 1, 0, &v) < 0)
				goto bad;
			r->step = v;
			have_step = 1;
		} else if (!strncmp(line, "signal=", 7)) {
			if (!signal_ok(eq + 1))
				goto bad;
			strcpy(r->signal, eq + 1);
		}
		continue;
bad:
		snprintf(err, errlen, "'%s': bad value", shown);
		return -1;
	}
	if (!have_job || !have_restart || !have_sstep || !have_step) {
		snprintf(err, errlen, "missing %s", !have_job ? "job=" : !have_restart ? "restart="
						    : !have_sstep ? "slurm_step=" : "step=");
		return -1;
	}
	if (!r->signal[0])
		strcpy(r->signal, "?");
	return 0;
}

/* what went wrong in reading, errno aside: said by the child, worded by
 * the parent (the child only calls async-signal-safe functions) */
enum rq_stage { RQ_OK, RQ_ABSENT, RQ_IDS, RQ_DIR, RQ_OPEN, RQ_NOTREG, RQ_BIG, RQ_READ, RQ_UNLINK,
		RQ_WRITE };

/* what the child does as the user */
enum rq_op { RQ_OP_READ, RQ_OP_REMOVE, RQ_OP_APPEND };

static enum rq_stage rq_open(const char *dir, const char *name, int *fd)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*fd = -1;
	if (dfd < 0)
		return RQ_DIR;
	*fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (*fd < 0)
		return errno == ENOENT ? RQ_ABSENT : RQ_OPEN;
	return RQ_OK;
}

/* the request's bytes into text (at most len-1, terminated); *n bytes */
static enum rq_stage rq_read(const char *dir, const char *name, char *text, size_t len, size_t *n,
			     int *e)
{
	struct stat st;
	ssize_t got;
	int fd;
	enum rq_stage s = rq_open(dir, name, &fd);
	*n = 0;
	*e = errno;
	if (s != RQ_OK)
		return s;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return RQ_NOTREG;
	}
	if (st.st_size < 0 || (size_t)st.st_size >= len) {
		close(fd);
		return RQ_BIG;
	}
	got = read(fd, text, len - 1);
	*e = errno;
	close(fd);
	if (got < 0)
		return RQ_READ;
	*n = (size_t)got;
	text[got] = '\0';
	return RQ_OK;
}

static int rq_say(enum rq_stage s, int e, const char *dir, const char *f, size_t len, char *err,
		  size_t errlen)
{
	switch (s) {
	case RQ_OK: return 1;
	case RQ_ABSENT: return 0;
	case RQ_IDS: snprintf(err, errlen, "cannot take the job user's ids: %s", strerror(e)); break;
	case RQ_DIR: snprintf(err, errlen, "%s: %s", dir, strerror(e)); break;
	case RQ_OPEN:
		snprintf(err, errlen, "%s/%s: %s", dir, f,
			 e == ELOOP ? "a symbolic link (not followed)" : strerror(e));
		break;
	case RQ_NOTREG: snprintf(err, errlen, "%s/%s: not a regular file", dir, f); break;
	case RQ_BIG: snprintf(err, errlen, "%s/%s: larger than %zu bytes", dir, f, len - 1); break;
	case RQ_READ: snprintf(err, errlen, "%s/%s: %s", dir, f, strerror(e)); break;
	case RQ_UNLINK: snprintf(err, errlen, "cannot remove %s/%s: %s", dir, f, strerror(e)); break;
	case RQ_WRITE: snprintf(err, errlen, "cannot append to %s/%s: %s", dir, f, strerror(e)); break;
	}
	return -1;
}

int loom_requeue_read(const char *dir, char *text, size_t len, char *err, size_t errlen)
{
	size_t n;
	int e;
	enum rq_stage s = rq_read(dir, LOOM_REQUEUE_FILE, text, len, &n, &e);
	return rq_say(s, e, dir, LOOM_REQUEUE_FILE, len, err, errlen);
}

/* the child's answer: then n bytes of text */
struct rq_reply {
	int stage, err;
	size_t n;
};

static int become(const struct loom_user_ids *ids)
{
	if (geteuid() != 0)     /* not root (a unit test): only as ourselves */
		return ids->uid == geteuid() ? 0 : (errno = EPERM, -1);
	if (setgroups((size_t)(ids->ngroups > 0 ? ids->ngroups : 0), ids->groups) < 0 ||
	    setgid(ids->gid) < 0 || setuid(ids->uid) < 0)
		return -1;
	return 0;
}

/* append n bytes of text to DIR/NAME, created (mode 0600) by the user
 * when missing, never through a link; a file that would grow past max
 * bytes starts again, its first line saying so */
static enum rq_stage rq_append(const char *dir, const char *name, const char *text, size_t n,
			       size_t max, int *e)
{
	static const char restart[] = "(earlier lines removed: the file reached its size limit)\n";
	struct stat st;
	int fd, dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	enum rq_stage s = RQ_OK;
	if (dfd < 0) {
		*e = errno;
		return RQ_DIR;
	}
	fd = openat(dfd, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
		    0600);
	*e = errno;
	close(dfd);
	if (fd < 0)
		return RQ_OPEN;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return RQ_NOTREG;
	}
	if ((size_t)st.st_size + n > max &&
	    (ftruncate(fd, 0) < 0 || write(fd, restart, sizeof restart - 1) < 0))
		s = RQ_WRITE;
	if (s == RQ_OK && write(fd, text, n) != (ssize_t)n)
		s = RQ_WRITE;
	*e = errno;
	close(fd);
	return s;
}

static void child(int out, const struct loom_user_ids *ids, const char *dir, const char *name,
		  enum rq_op op, char *text, size_t len)
{
	struct rq_reply r = { RQ_OK, 0, 0 };
	if (become(ids) < 0) {
		r.stage = RQ_IDS;
		r.err = errno;
	} else if (op == RQ_OP_APPEND) {
		/* len is the file's limit here, text a terminated line */
		r.stage = (int)rq_append(dir, name, text, strlen(text), len, &r.err);
	} else if (op == RQ_OP_REMOVE) {
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			r.stage = RQ_DIR;
		} else if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT) {
			r.stage = RQ_UNLINK;
		}
		r.err = errno;
	} else {
		r.stage = (int)rq_read(dir, name, text, len, &r.n, &r.err);
	}
	if (write(out, &r, sizeof r) == (ssize_t)sizeof r && r.n)
		(void)!write(out, text, r.n);
	_exit(0);
}

/* read all of n bytes from fd before the deadline (CLOCK_MONOTONIC) */
static int read_until(int fd, void *buf, size_t n, const struct timespec *end)
{
	size_t got = 0;
	while (got < n) {
		struct timespec now;
		struct pollfd p = { fd, POLLIN, 0 };
		long ms;
		ssize_t k;
		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (end->tv_sec - now.tv_sec) * 1000 + (end->tv_nsec - now.tv_nsec) / 1000000;
		if (ms <= 0 || poll(&p, 1, (int)ms) == 0)
			return -2;
		k = read(fd, (char *)buf + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

static int as_user(const char *dir, const char *name, const struct loom_user_ids *ids,
		   enum rq_op op, char *text, size_t len, char *err, size_t errlen)
{
	struct rq_reply r;
	struct timespec end;
	int pfd[2], rc;
	pid_t pid;
	if (len < 2 || pipe2(pfd, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		close(pfd[0]);
		child(pfd[1], ids, dir, name, op, text, len);
	}
	close(pfd[1]);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += LOOM_REQUEUE_TIMEOUT_S;
	rc = read_until(pfd[0], &r, sizeof r, &end);
	if (rc == 0 && op != RQ_OP_READ && r.n)
		rc = -1;
	if (rc == 0 && (r.n >= len || read_until(pfd[0], text, r.n, &end) != 0))
		rc = -1;
	close(pfd[0]);
	if (rc == -2)
		kill(pid, SIGKILL);     /* a hung file system: the step goes on */
	/* slurmstepd may reap it first: the answer came through the pipe */
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (rc == -2) {
		snprintf(err, errlen, "%s/%s: no answer within %d s from the child reaching it as uid "
			 "%u (a hung file system?)", dir, name, LOOM_REQUEUE_TIMEOUT_S,
			 (unsigned)ids->uid);
		return -1;
	}
	if (rc < 0) {
		snprintf(err, errlen, "%s/%s: the child reaching it as uid %u ended without an answer",
			 dir, name, (unsigned)ids->uid);
		return -1;
	}
	if (op == RQ_OP_READ)
		text[r.n] = '\0';
	return rq_say((enum rq_stage)r.stage, r.err, dir, name, len, err, errlen);
}

int loom_user_file_read_as(const char *dir, const char *name, const struct loom_user_ids *ids,
			   char *text, size_t len, char *err, size_t errlen)
{
	return as_user(dir, name, ids, RQ_OP_READ, text, len, err, errlen);
}

int loom_user_file_append_as(const char *dir, const char *name, const struct loom_user_ids *ids,
			     const char *line, size_t max, char *err, size_t errlen)
{
	/* the child has its own copy of line (fork): nothing goes over the pipe */
	return as_user(dir, name, ids, RQ_OP_APPEND, (char *)line, max, err, errlen) < 0 ? -1 : 0;
}

int loom_requeue_read_as(const char *dir, const struct loom_user_ids *ids, char *text, size_t len,
			 char *err, size_t errlen)
{
	return as_user(dir, LOOM_REQUEUE_FILE, ids, RQ_OP_READ, text, len, err, errlen);
}

int loom_requeue_remove_as(const char *dir, const struct loom_user_ids *ids, char *err,
			   size_t errlen)
{
	char none[2];
	return as_user(dir, LOOM_REQUEUE_FILE, ids, RQ_OP_REMOVE, none, sizeof none, err, errlen) < 0
	       ? -1 : 0;
}

int loom_requeue_ours(const struct loom_requeue_req *req, const struct loom_job_view *job)
{
	return req->job == job->job && req->restart == job->restart &&
	       req->slurm_step == job->slurm_step;
}

enum loom_requeue_verdict loom_requeue_decide(const struct loom_requeue_req *req,
					      const struct loom_job_view *job)
{
	if (!req)
		return LOOM_REQUEUE_NO_REQUEST;
	if (!loom_requeue_ours(req, job))
		return LOOM_REQUEUE_OTHER_RUN;
	if (!job->batch)
		return LOOM_REQUEUE_NOT_BATCH;
	if (!job->running)
		return LOOM_REQUEUE_NOT_RUNNING;
	return LOOM_REQUEUE_YES;
}

const char *loom_requeue_verdict_str(enum loom_requeue_verdict v)
{
	switch (v) {
	case LOOM_REQUEUE_YES: return "requeue";
	case LOOM_REQUEUE_NO_REQUEST: return "no checkpoint was asked for by a stop signal";
	case LOOM_REQUEUE_OTHER_RUN: return "the request is from another job, an earlier run or another step";
	case LOOM_REQUEUE_NOT_BATCH: return "not a batch job: Slurm requeues only sbatch jobs";
	case LOOM_REQUEUE_NOT_RUNNING: return "the job is no longer running (cancelled, or Slurm requeues it itself)";
	}
	return "?";
}

const char *loom_requeue_reason(int timer_fired, enum loom_requeue_verdict v)
{
	if (timer_fired)
		return "timelimit";
	return v == LOOM_REQUEUE_NOT_RUNNING ? "cancel" : "preempt";
}
