/* spank/flight_dir.c: the job's flight-record directory (LOOM_FLIGHT_DIR).
 * Its name is predictable (/var/tmp/loom-flight.UID.JOB), so where other
 * users can write its parent the plugin makes it as root before the
 * user's tasks start: a squatter at the name is removed, the directory
 * made and handed to the job's user, 0700. Elsewhere the runtime makes it
 * as the user (0700, owner checked, never a link). Node-local records of
 * a step that ended cleanly are removed by a child that has become the
 * job's user. */
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

/* Remove the entry base of pfd that is not the job's directory: a file,
 * link or FIFO is unlinked; a directory, when not empty, renamed aside
 * under a random name (root never walks a tree someone else made). */
static int remove_squatter(int pfd, const char *base, const struct stat *st, char *note,
			   size_t notelen)
{
	char aside[300];
	unsigned r;
	int fd;
	if (!S_ISDIR(st->st_mode)) {
		if (unlinkat(pfd, base, 0))
			return -1;
		snprintf(note, notelen, "removed a %s of uid %u at its name",
			 S_ISLNK(st->st_mode) ? "symbolic link" : S_ISFIFO(st->st_mode) ? "FIFO" :
			 S_ISREG(st->st_mode) ? "file" : "special file", (unsigned)st->st_uid);
		return 0;
	}
	if (unlinkat(pfd, base, AT_REMOVEDIR) == 0) {
		snprintf(note, notelen, "removed an empty directory of uid %u at its name",
			 (unsigned)st->st_uid);
		return 0;
	}
	if (errno != ENOTEMPTY && errno != EEXIST)
		return -1;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, &r, sizeof r) != (ssize_t)sizeof r)
		r = (unsigned)time(NULL) ^ (unsigned)getpid();
	if (fd >= 0)
		close(fd);
	snprintf(aside, sizeof aside, ".%.200s.squatted.%08x", base, r);
	if (renameat(pfd, base, pfd, aside))
		return -1;
	snprintf(note, notelen, "moved a directory of uid %u at its name aside to %s",
		 (unsigned)st->st_uid, aside);
	return 0;
}

int loom_flight_dir_make(const char *path, uid_t uid, gid_t gid, char *note, size_t notelen,
			 char *err, size_t errlen)
{
	char parent[1024];
	const char *base = strrchr(path, '/');
	struct stat st;
	int pfd, fd = -1, tries;
	note[0] = '\0';
	if (!base || !base[1] || !strcmp(base + 1, ".") || !strcmp(base + 1, "..") ||
	    (size_t)(base - path) >= sizeof parent) {
		snprintf(err, errlen, "%s: not a directory name", path);
		return -1;
	}
	snprintf(parent, sizeof parent, "%.*s", (int)(base > path ? base - path : 1), path);
	base++;
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &st)) {
		if (pfd >= 0)
			close(pfd);
		return 0;       /* the runtime says what is wrong, as the user */
	}
	/* only a parent others may write is a squatter's place; one of
	 * another user (neither root nor the job's) is not ours to act in */
	if (!(st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_uid != 0 && st.st_uid != uid)) {
		close(pfd);
		return 0;
	}
	if (!(st.st_mode & S_ISVTX)) {
		snprintf(err, errlen, "%s: its parent %s may be written by other users and is not "
			 "sticky: no safe place for the job's records", path, parent);
		close(pfd);
		return -1;
	}
	for (tries = 0; tries < 4 && fd < 0; tries++) {
		if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			/* the job's own (an earlier step's): kept as it is */
			if (S_ISDIR(st.st_mode) && st.st_uid == uid) {
				close(pfd);
				return 1;
			}
			if (remove_squatter(pfd, base, &st, note, notelen))
				break;
		} else if (errno != ENOENT) {
			break;
		}
		if (mkdirat(pfd, base, 0700)) {
			if (errno == EEXIST)
				continue;       /* planted again meanwhile: look again */
			break;
		}
		/* root's entry in a sticky directory: no other user can swap it */
		fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) || st.st_uid != geteuid() || fchown(fd, uid, gid) ||
				fchmod(fd, 0700))) {
			close(fd);
			fd = -1;
			break;
		}
	}
	if (fd < 0) {
		snprintf(err, errlen, "%s: making it for uid %u: %s%s%s", path, (unsigned)uid,
			 errno ? strerror(errno) : "someone keeps planting at its name",
			 note[0] ? "; " : "", note);
		close(pfd);
		return -1;
	}
	close(fd);
	close(pfd);
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
