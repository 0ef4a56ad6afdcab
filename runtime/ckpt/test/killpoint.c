/* killpoint.so: a test-only LD_PRELOAD shim that SIGKILLs the process at
 * one chosen file-system call, to interrupt a checkpoint commit at an
 * exact point (t/t4001-ckpt.t). Never linked into anything installed.
 *
 *   LOOM_TEST_KILL_AT=[after:]CALL:GLOB
 *     CALL   rename, renameat, fsync, fdatasync or close
 *     GLOB   fnmatch(3) pattern (FNM_PATHNAME: '*' does not cross '/')
 *            matched against the absolute, symlink-free path of the
 *            call's file (fsync, fdatasync, close: the descriptor's file;
 *            rename, renameat: the source or the destination)
 *     after: the call is made first and the process killed on its return
 *            (else it is killed before the call)
 *   LOOM_TEST_KILL_RANK=N  only in the task whose SLURM_PROCID is N
 *   LOOM_TEST_PAUSE_UNTIL=FILE  pause there instead of dying: create
 *          FILE.paused, wait until FILE exists, then go on (once), so that
 *          a test can act while a save is held at that point
 *   LOOM_TEST_DELAY_S=SECONDS  neither die nor pause: sleep SECONDS there,
 *          at every matching call (a save made slow on purpose)
 *   LOOM_TEST_KILL_ALSO=FILE[,FILE...]  before dying, SIGKILL the process
 *          whose pid each FILE holds (a node's other ranks: a whole node
 *          lost at that point; ckpt-drive's pid.RANK files)
 *
 * Before dying it writes "killpoint: SIGKILL before|after CALL PATH" (a
 * rename: "OLD -> NEW") on
 * stderr, so that a test can tell the point was reached. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int armed = -1; /* -1: not parsed yet, 0: off, 1: on */
static int after;
static char call[32], glob[PATH_MAX];

static void parse(void)
{
	const char *e = getenv("LOOM_TEST_KILL_AT"), *r = getenv("LOOM_TEST_KILL_RANK"),
		   *me = getenv("SLURM_PROCID"), *c;
	armed = 0;
	if (!e || !*e)
		return;
	if (r && *r && (!me || strcmp(r, me)))
		return;
	if (!strncmp(e, "after:", 6)) {
		after = 1;
		e += 6;
	}
	if (!(c = strchr(e, ':')) || (size_t)(c - e) >= sizeof call || strlen(c + 1) >= sizeof glob) {
		dprintf(2, "killpoint: LOOM_TEST_KILL_AT=%s: not [after:]CALL:GLOB\n", e);
		return;
	}
	memcpy(call, e, (size_t)(c - e));
	call[c - e] = 0;
	strcpy(glob, c + 1);
	armed = 1;
}

/* is CALL armed (the pattern is checked separately)? */
static int watching(const char *name)
{
	if (armed < 0)
		parse();
	return armed == 1 && !strcmp(call, name);
}

static void fd_path(int fd, char *out, size_t len)
{
	char l[64];
	ssize_t n;
	snprintf(l, sizeof l, "/proc/self/fd/%d", fd);
	n = readlink(l, out, len - 1);
	out[n > 0 ? n : 0] = 0;
}

/* PATH (relative to DIRFD) as an absolute path with a canonical parent:
 * the last component need not exist (a rename's destination) */
static void abs_path(int dirfd, const char *path, char *out, size_t len)
{
	char dir[PATH_MAX], joined[2 * PATH_MAX + 2], canon[PATH_MAX];
	const char *slash;
	if (path[0] == '/') {
		snprintf(joined, sizeof joined, "%s", path);
	} else {
		if (dirfd == AT_FDCWD) {
			if (!getcwd(dir, sizeof dir))
				dir[0] = 0;
		} else {
			fd_path(dirfd, dir, sizeof dir);
		}
		snprintf(joined, sizeof joined, "%s/%s", dir, path);
	}
	slash = strrchr(joined, '/');
	snprintf(dir, sizeof dir, "%.*s", (int)(slash - joined), joined);
	if (realpath(dir[0] ? dir : "/", canon))
		snprintf(out, len, "%s%s", strcmp(canon, "/") ? canon : "", slash);
	else
		snprintf(out, len, "%s", joined);
}

/* LOOM_TEST_KILL_ALSO: the processes named by pid files die first */
static void kill_also(void)
{
	const char *e = getenv("LOOM_TEST_KILL_ALSO");
	char list[PATH_MAX], *tok, *save = NULL;
	if (!e || !*e)
		return;
	snprintf(list, sizeof list, "%s", e);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char buf[32] = "";
		int fd = open(tok, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
		long pid = n > 0 ? strtol(buf, NULL, 10) : 0;
		if (fd >= 0)
			close(fd);
		if (pid > 1) {
			dprintf(2, "killpoint: SIGKILL pid %ld of %s too\n", pid, tok);
			kill((pid_t)pid, SIGKILL);
		}
	}
}

static void reached(const char *when, const char *path)
{
	const char *until = getenv("LOOM_TEST_PAUSE_UNTIL"), *delay = getenv("LOOM_TEST_DELAY_S");
	if (delay && *delay) {
		dprintf(2, "killpoint: %s s %s %s %s\n", delay, when, call, path);
		double d = atof(delay);
		struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
		return;
	}
	if (until && *until) {
		char marker[PATH_MAX + 8];
		int fd;
		armed = 0; /* once; and the close below is not watched */
		dprintf(2, "killpoint: paused %s %s %s\n", when, call, path);
		snprintf(marker, sizeof marker, "%s.paused", until);
		if ((fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
			close(fd);
		while (access(until, F_OK) != 0)
			usleep(20000);
		dprintf(2, "killpoint: released %s %s\n", call, path);
		return;
	}
	dprintf(2, "killpoint: SIGKILL %s %s %s\n", when, call, path);
	kill_also();
	kill(getpid(), SIGKILL);
	for (;;)
		pause();
}

static int match(const char *a, const char *b)
{
	return (a && !fnmatch(glob, a, FNM_PATHNAME)) || (b && !fnmatch(glob, b, FNM_PATHNAME));
}

static void *next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f) {
		dprintf(2, "killpoint: no %s after the shim\n", name);
		abort();
	}
	return f;
}

/* one descriptor call: PATH is looked up before the call (close ends it) */
#define FD_CALL(name)                                                       \
	int name(int fd)                                                    \
	{                                                                   \
		static int (*real)(int);                                    \
		char p[PATH_MAX];                                           \
		int hit = 0, rc, e;                                         \
		if (!real)                                                  \
			real = (int (*)(int))next(#name);                   \
		if (watching(#name)) {                                      \
			e = errno;                                          \
			fd_path(fd, p, sizeof p);                           \
			errno = e;                                          \
			hit = match(p, NULL);                               \
		}                                                           \
		if (hit && !after)                                          \
			reached("before", p);                                   \
		rc = real(fd);                                              \
		if (hit && after)                                           \
			reached("after", p);                                    \
		return rc;                                                  \
	}

FD_CALL(fsync)
FD_CALL(fdatasync)
FD_CALL(close)

static int renamed(const char *name, int ofd, const char *o, int nfd, const char *n)
{
	static int (*real_rename)(const char *, const char *);
	static int (*real_renameat)(int, const char *, int, const char *);
	char po[2 * PATH_MAX + 2], pn[2 * PATH_MAX + 2], both[4 * PATH_MAX + 8];
	int hit = 0, rc, e;
	if (!real_rename) {
		real_rename = (int (*)(const char *, const char *))next("rename");
		real_renameat = (int (*)(int, const char *, int, const char *))next("renameat");
	}
	if (watching(name)) {
		e = errno;
		abs_path(ofd, o, po, sizeof po);
		abs_path(nfd, n, pn, sizeof pn);
		errno = e;
		hit = match(po, pn);
		snprintf(both, sizeof both, "%s -> %s", po, pn);
	}
	if (hit && !after)
		reached("before", both);
	rc = !strcmp(name, "rename") ? real_rename(o, n) : real_renameat(ofd, o, nfd, n);
	if (hit && after)
		reached("after", both);
	return rc;
}

int rename(const char *oldpath, const char *newpath)
{
	return renamed("rename", AT_FDCWD, oldpath, AT_FDCWD, newpath);
}

int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
	return renamed("renameat", olddirfd, oldpath, newdirfd, newpath);
}
