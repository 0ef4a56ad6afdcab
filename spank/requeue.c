/* spank/requeue.c: the requeue request left by libloom, and whether to
 * act on it (pure: slurmstepd's part is in ctx_remote.c). */
#include "config.h"
#include "requeue.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int parse_num(const char *v, long long lo, long long *out)
{
	char *end;
	long long x;
	if (!*v || *v == '-' || *v == '+')
		return -1;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (errno || *end || x < lo)
		return -1;
	*out = x;
	return 0;
}

int loom_requeue_parse(const char *text, struct loom_requeue_req *r, char *err, size_t errlen)
{
	int have_job = 0, have_restart = 0, have_step = 0;
	const char *p = text;

	memset(r, 0, sizeof *r);
	while (*p) {
		char line[128];
		size_t n = strcspn(p, "\n");
		const char *eq;
		long long v;
		if (n >= sizeof line) {
			snprintf(err, errlen, "line too long");
			return -1;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (p[n] == '\n');
		if (!line[0])
			continue;
		if (!(eq = strchr(line, '='))) {
			snprintf(err, errlen, "'%s' is not KEY=VALUE", line);
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
		} else if (!strncmp(line, "step=", 5)) {
			if (parse_num(eq + 1, 0, &v) < 0)
				goto bad;
			r->step = v;
			have_step = 1;
		} else if (!strncmp(line, "signal=", 7)) {
			snprintf(r->signal, sizeof r->signal, "%s", eq + 1);
		}
		continue;
bad:
		snprintf(err, errlen, "'%s': bad value", line);
		return -1;
	}
	if (!have_job || !have_restart || !have_step) {
		snprintf(err, errlen, "missing %s", !have_job ? "job=" : !have_restart ? "restart=" : "step=");
		return -1;
	}
	return 0;
}

int loom_requeue_read(const char *dir, char *text, size_t len, char *err, size_t errlen)
{
	char path[4200];
	struct stat st;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "%s/%s", dir, LOOM_REQUEUE_FILE);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	n = read(fd, text, len - 1);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	text[n] = '\0';
	return 1;
}

enum loom_requeue_verdict loom_requeue_decide(const struct loom_requeue_req *req,
					      const struct loom_job_view *job)
{
	if (!req)
		return LOOM_REQUEUE_NO_REQUEST;
	if (req->job != job->job || req->restart != job->restart)
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
	case LOOM_REQUEUE_OTHER_RUN: return "the request is from another job or an earlier run";
	case LOOM_REQUEUE_NOT_BATCH: return "not a batch job: Slurm requeues only sbatch jobs";
	case LOOM_REQUEUE_NOT_RUNNING: return "the job is no longer running (cancelled, or Slurm requeues it itself)";
	}
	return "?";
}
