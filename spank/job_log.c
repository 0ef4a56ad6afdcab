/* spank/job_log.c: loom.so's decisions about a job, for its user (see
 * job_log.h). */
#include "config.h"
#include "job_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <slurm/spank.h>

#include "loom_spank.h"
#include "strbuf.h"

void loom_job_log(const char *dir, const struct loom_user_ids *ids, const char *msg)
{
	char line[4200], stamp[32], err[1200];
	time_t now = time(NULL);
	struct tm tm;
	if (!dir || !dir[0] || !ids)
		return;
	if (!localtime_r(&now, &tm) || !strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm))
		strcpy(stamp, "?");
	/* a line cut to fit still ends in a newline */
	if (snprintf(line, sizeof line, "%s " LOOM_PREFIX "%s\n", stamp, msg) >= (int)sizeof line)
		line[sizeof line - 2] = '\n';
	loom_log_clean(line);
	line[strlen(line) - 1] = '\n';  /* the one control character kept */
	if (loom_user_file_append_as(dir, LOOM_JOB_LOG_FILE, ids, line, LOOM_JOB_LOG_MAX, err,
				     sizeof err) < 0) {
		loom_log_clean(err);
		slurm_error(LOOM_PREFIX "the job's own log: %s", err);
	}
}

void loom_job_decided(int is_error, const char *dir, const struct loom_user_ids *ids,
		      const char *fmt, ...)
{
	char msg[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (is_error)
		slurm_error(LOOM_PREFIX "%s", msg);
	else
		slurm_info(LOOM_PREFIX "%s", msg);
	loom_job_log(dir, ids, msg);
}
