/* spank/flight_dir.c: the job's flight-record directory (LOOM_FLIGHT_DIR).
 * The plugin only names it; the runtime makes it as the user (0700, owner
 * checked, never a link). Node-local records of a step that ended cleanly
 * are removed by a child that has become the job's user. */
#include "config.h"

#include "flight_dir.h"

#include "ckpt_dir.h"
#include "requeue.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CLEAN_TIMEOUT_S 10

int loom_flight_dir_for(const struct loom_config *cfg, unsigned long job, unsigned long uid,
			char *out, size_t len, char *err, size_t errlen)
{
	int n;
	if (!strcmp(cfg->flight_dir, "none"))
		return 0;
	if (cfg->flight_dir[0])
		return loom_ckpt_expand(cfg->flight_dir, job, 0, "plugstack argument flight_dir", out,
					len, err, errlen) < 0 ? -1 : 2;
	/* the uid in the name: another user's job never shares it */
	n = snprintf(out, len, "%s/loom-flight.%lu.%lu", cfg->flight_local_base, uid, job);
	if (n < 0 || (size_t)n >= len) {
		snprintf(err, errlen, "flight_local_base=%.64s: the job's directory name is too long",
			 cfg->flight_local_base);
		return -1;
	}
	return 1;
}

/* the child: become the user, remove the step's records; exit status 0
 * or an errno */
static void child(const char *dir, unsigned step, const struct loom_user_ids *ids)
{
	char prefix[48];
	struct dirent *e;
	struct stat st;
	size_t pl;
	DIR *dp;
	int fd;
	if (setgroups((size_t)ids->ngroups, ids->groups) || setgid(ids->gid) || setuid(ids->uid) ||
	    (ids->uid != 0 && setuid(0) == 0))
		_exit(EPERM);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		_exit(errno == ENOENT ? 0 : errno);
	if (fstat(fd, &st) || st.st_uid != ids->uid)
		_exit(EPERM);
	if (!(dp = fdopendir(fd)))
		_exit(errno);
	pl = (size_t)snprintf(prefix, sizeof prefix, "step%u-rank", step);
	while ((e = readdir(dp))) {
		size_t l = strlen(e->d_name);
		if (l <= pl + 7 || strncmp(e->d_name, prefix, pl) || strcmp(e->d_name + l - 7, ".flight"))
			continue;
		if (!fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
			unlinkat(fd, e->d_name, 0);
	}
	closedir(dp);
	/* ENOENT: another node's slurmstepd removed it first (nodes that share
	 * a host and its /tmp, as on the test cluster: seen in CI) */
	if (rmdir(dir) && errno != ENOTEMPTY && errno != EEXIST && errno != ENOENT)
		_exit(errno);
	_exit(0);
}

int loom_flight_clean_as(const char *dir, unsigned step, const struct loom_user_ids *ids,
			 char *err, size_t errlen)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int status = 0, i;
	pid_t pid = fork(), w = 0;
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0)
		child(dir, step, ids);
	/* bounded: a hung file system must not hold slurmstepd */
	for (i = 0; i < CLEAN_TIMEOUT_S * 100; i++) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			break;
		nanosleep(&tick, NULL);
	}
	if (w < 0 && errno == ECHILD)
		return 0;       /* slurmstepd reaped it first */
	if (w != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		snprintf(err, errlen, "%s: no answer within %d s from the child removing the records "
			 "as uid %u", dir, CLEAN_TIMEOUT_S, (unsigned)ids->uid);
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(err, errlen, "%s: removing the records as uid %u: %s", dir,
			 (unsigned)ids->uid,
			 WIFEXITED(status) ? strerror(WEXITSTATUS(status)) : "the child was killed");
		return -1;
	}
	return 0;
}
