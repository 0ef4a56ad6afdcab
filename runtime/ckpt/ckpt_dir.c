/* runtime/ckpt/ckpt_dir.c: the entries of a checkpoint directory: listing
 * the committed steps, pruning, removing a failed save, the small files
 * replaced by rename (latest, the requeue request). No communication.
 *
 * Nothing here follows a symbolic link below DIR: entries are examined
 * with fstatat(AT_SYMLINK_NOFOLLOW), directories opened with
 * openat(O_DIRECTORY | O_NOFOLLOW) and emptied through that descriptor
 * (fdopendir, unlinkat), so a `step-N` or `.tmp-*` that is a link (to an
 * archive, or planted by another user in a shared DIR) is skipped with a
 * warning and never deleted through. Entries owned by another user are
 * skipped the same way (docs/checkpoint-format.md, "Directory"). */
#include "config.h"
#include "ckpt/ckpt_nocomm.h"
#include "loom.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int loom_ck_fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;
	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

static int open_dir(const char *dir)
{
	return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int loom_ck_step_name(const char *s, long long *step)
{
	char *end;
	if (strncmp(s, "step-", 5) || s[5] < '0' || s[5] > '9')
		return 0;
	errno = 0;
	*step = strtoll(s + 5, &end, 10);
	return *end == 0 && errno == 0;
}

/* NAME in DIR (descriptor dfd) is a real directory of ours: 1; a link or
 * another user's entry: 0 with a warning; anything else: 0 quietly */
static int own_dir_entry(int dfd, const char *dir, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		LOOM_WARN("ckpt: %s/%s is a symbolic link: skipped (never loaded, pruned or removed "
			  "through a link)", dir, name);
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (st.st_uid != geteuid()) {
		LOOM_WARN("ckpt: %s/%s belongs to uid %u, not to this job's user (uid %u): skipped",
			  dir, name, (unsigned)st.st_uid, (unsigned)geteuid());
		return 0;
	}
	return 1;
}

/* MANIFEST of DIR/NAME is a regular file (the directory not followed) */
static int has_manifest(int dfd, const char *name)
{
	struct stat st;
	int sfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), ok;
	if (sfd < 0)
		return 0;
	ok = fstatat(sfd, "MANIFEST", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
	close(sfd);
	return ok;
}

static int cmp_desc(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

int loom_ck_list_steps(const char *dir, long long **steps, int *n)
{
	int dfd = open_dir(dir), cnt = 0, cap = 0;
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;
	long long *v = NULL, s;
	*steps = NULL;
	*n = 0;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return LOOM_ERR_IO;
	}
	while ((e = readdir(d))) {
		if (!loom_ck_step_name(e->d_name, &s) || !own_dir_entry(dfd, dir, e->d_name) ||
		    !has_manifest(dfd, e->d_name))
			continue;
		if (cnt == cap) {
			long long *nv = cap < (1 << 24) ? realloc(v, sizeof *v * (size_t)(cap = cap ? 2 * cap : 16))
							: NULL;
			if (!nv) {
				free(v);
				closedir(d);
				return LOOM_ERR_NOMEM;
			}
			v = nv;
		}
		v[cnt++] = s;
	}
	closedir(d);
	if (cnt)
		qsort(v, (size_t)cnt, sizeof *v, cmp_desc);
	*steps = v;
	*n = cnt;
	return LOOM_SUCCESS;
}

/* DIR/NAME: its files (and links, which are removed themselves), then the
 * directory. A link or a non-directory is left alone. */
static int rmtree_at(int dfd, const char *dir, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *e;
	if (fd < 0) {
		struct stat st;
		if (errno == ENOENT)
			return 0;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			LOOM_WARN("ckpt: %s/%s is a symbolic link: not removed (nothing is deleted "
				  "through a link)", dir, name);
		return -1;
	}
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -1;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(fd, e->d_name, 0); /* a subdirectory stays: not ours */
	closedir(d);
	return unlinkat(dfd, name, AT_REMOVEDIR);
}

int loom_ck_rmtree(const char *dir, const char *name)
{
	int dfd = open_dir(dir), rc;
	if (dfd < 0)
		return errno == ENOENT ? 0 : -1;
	rc = rmtree_at(dfd, dir, name);
	close(dfd);
	return rc;
}

/* ".NAME.tmp-PID" of loom_ck_write_small whose writer PID is dead here */
static int stale_small_tmp(const char *name)
{
	const char *p = name[0] == '.' ? strstr(name + 1, ".tmp-") : NULL;
	char *end;
	long pid;
	if (!p || p == name + 1 || p[5] < '1' || p[5] > '9')
		return 0;
	errno = 0;
	pid = strtol(p + 5, &end, 10);
	if (*end || errno || pid <= 0 || pid == (long)getpid())
		return 0;
	return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

static int leftover(const char *name)
{
	return !strncmp(name, ".tmp-step-", 10) || !strncmp(name, ".prune-step-", 12) ||
	       !strncmp(name, ".replaced-step-", 15);
}

static int prune(const char *dir, int keep, long long just_committed, int remove);

int loom_ck_prune(const char *dir, int keep, long long just_committed)
{
	return prune(dir, keep, just_committed, 1);
}

int loom_ck_prune_mark(const char *dir, int keep, long long just_committed)
{
	return prune(dir, keep, just_committed, 0);
}

/* remove 0: the old steps are only renamed .prune-step-N (no longer
 * checkpoints), and those are left for loom_ck_prune_sweep */
static int prune(const char *dir, int keep, long long just_committed, int remove)
{
	long long *v;
	int n, dfd, rc = loom_ck_list_steps(dir, &v, &n);
	DIR *d;
	struct dirent *e;
	if (rc != LOOM_SUCCESS)
		return rc;
	if ((dfd = open_dir(dir)) < 0) {
		free(v);
		return LOOM_ERR_IO;
	}
	for (int i = keep; i < n; i++) {
		char p[64], q[64];
		if (v[i] == just_committed)
			continue;
		/* rename first, so that a half-removed step is never taken for
		 * one; what was renamed is opened without following (a link put
		 * there in between stays, with a warning) */
		snprintf(p, sizeof p, "step-%lld", v[i]);
		snprintf(q, sizeof q, ".prune-step-%lld", v[i]);
		if (own_dir_entry(dfd, dir, p) && renameat(dfd, p, dfd, q) == 0 && remove)
			rmtree_at(dfd, dir, q);
	}
	free(v);
	/* leftovers of crashed commits or prunes (one writer per directory:
	 * the commit in progress has been renamed by now), and small files
	 * that a dead writer left half written */
	if (!(d = fdopendir(dfd))) {
		close(dfd);
		return LOOM_SUCCESS;
	}
	while ((e = readdir(d))) {
		struct stat st;
		if (leftover(e->d_name)) {
			if ((remove || strncmp(e->d_name, ".prune-step-", 12)) &&
			    own_dir_entry(dfd, dir, e->d_name))
				rmtree_at(dfd, dir, e->d_name);
		} else if (stale_small_tmp(e->d_name) &&
			   fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			   S_ISREG(st.st_mode) && st.st_uid == geteuid()) {
			unlinkat(dfd, e->d_name, 0);
		}
	}
	fsync(dfd);
	closedir(d);
	return LOOM_SUCCESS;
}

int loom_ck_prune_sweep(const char *dir)
{
	int dfd = open_dir(dir);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return LOOM_ERR_IO;
	}
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, ".prune-step-", 12) && own_dir_entry(dfd, dir, e->d_name))
			rmtree_at(dfd, dir, e->d_name);
	closedir(d);
	return LOOM_SUCCESS;
}

/* NAME in DIR holds TEXT, or is unchanged: write aside (a new file, never
 * through a link someone left at that name), fsync, rename */
int loom_ck_write_small(const char *dir, const char *name, const char *text)
{
	char tmp[300], from[4400], to[4400];
	size_t n = strlen(text);
	int dfd, fd = -1, rc = LOOM_ERR_IO;
	if (strlen(name) > 200 || strlen(dir) > 4000 || (dfd = open_dir(dir)) < 0)
		return LOOM_ERR_IO;
	snprintf(tmp, sizeof tmp, ".%s.tmp-%ld", name, (long)getpid());
	/* rename(2) by path (the last components are renamed, never followed) */
	snprintf(from, sizeof from, "%s/%s", dir, tmp);
	snprintf(to, sizeof to, "%s/%s", dir, name);
	for (int tries = 0; tries < 2 && fd < 0; tries++) {
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno == EEXIST)
			unlinkat(dfd, tmp, 0); /* our pid's, from an earlier life */
		else if (fd < 0)
			break;
	}
	if (fd >= 0) {
		int ok = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
		ok = close(fd) == 0 && ok;
		if (ok && rename(from, to) == 0 && fsync(dfd) == 0)
			rc = LOOM_SUCCESS;
		else
			unlinkat(dfd, tmp, 0);
	}
	close(dfd);
	return rc;
}

int loom_ck_write_latest(const char *dir, long long step)
{
	char line[64];
	snprintf(line, sizeof line, "step-%lld\n", step);
	return loom_ck_write_small(dir, "latest", line);
}

long long loom_ck_read_latest(const char *dir)
{
	char line[64];
	long long s;
	ssize_t got;
	int dfd = open_dir(dir), fd;
	if (dfd < 0)
		return -1;
	fd = openat(dfd, "latest", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return -1;
	got = read(fd, line, sizeof line - 1); /* "step-N\n" is short: a bound, not a loop */
	close(fd);
	if (got <= 0)
		return -1;
	line[got] = 0;
	line[strcspn(line, "\n")] = 0;
	return loom_ck_step_name(line, &s) ? s : -1;
}
