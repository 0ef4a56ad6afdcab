/* t/security/shm_owner.c: libloom's shared-memory segments against another
 * local user (nobody, via setuid in a child; needs root, as make check
 * runs on CI):
 *  - a name that user made first (mode 0666) is refused by the leader's
 *    create (O_EXCL) and by the others' open (not this user's);
 *  - a segment of this user with a mode other than 0600 is refused;
 *  - a segment the leader made cannot be opened by that user at all,
 *    read or write: it reads nothing;
 *  - the open waits for the leader, then takes only the full size. */
#include "transport/transport.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t/tap.h"

static uid_t nobody_uid;
static gid_t nobody_gid;

/* run fn as nobody in a child; its exit status */
static int as_nobody(int (*fn)(const char *), const char *name)
{
	pid_t p = fork();
	int st;
	if (p == 0) {
		if (setgid(nobody_gid) || setuid(nobody_uid))
			_exit(100);
		_exit(fn(name));
	}
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int precreate(const char *name)
{
	int fd;
	umask(0);
	fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0666);
	if (fd < 0 || ftruncate(fd, 4096))
		return 1;
	return 0;
}

/* 0: could not open it in either mode (what must happen) */
static int snoop(const char *name)
{
	int w = shm_open(name, O_RDWR, 0), r = shm_open(name, O_RDONLY, 0);
	return (w >= 0) * 1 + (r >= 0) * 2 + ((w < 0 && errno != EACCES) ? 4 : 0);
}

int main(void)
{
	struct passwd *pw;
	char name[64];
	int fd, rc;
	plan(NO_PLAN);
	if (geteuid() != 0)
		skip_all("needs root, to act as user nobody");
	pw = getpwnam("nobody");
	if (!pw)
		skip_all("no user nobody");
	nobody_uid = pw->pw_uid;
	nobody_gid = pw->pw_gid;
	snprintf(name, sizeof name, "/loom-test-owner-%d", (int)getpid());

	/* 1. another user's name first */
	shm_unlink(name);
	ok(as_nobody(precreate, name) == 0, "nobody pre-creates %s with mode 0666", name);
	fd = loom_shm_segment_create(name, 8192);
	ok(fd < 0, "the local leader refuses to use a name that already exists (O_EXCL)");
	fd = loom_shm_segment_open(name, 4096, loom_now() + 2);
	ok(fd < 0, "a local rank refuses to open nobody's segment (owner check)");
	shm_unlink(name);

	/* 2. our own segment, wrong mode */
	fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	ok(fd >= 0 && fchmod(fd, 0644) == 0 && ftruncate(fd, 4096) == 0, "a 0644 segment of this user");
	if (fd >= 0)
		close(fd);
	ok(loom_shm_segment_open(name, 4096, loom_now() + 2) < 0, "a segment with mode 0644 is refused");
	shm_unlink(name);

	/* 3. the leader's segment is unreadable for the other user */
	fd = loom_shm_segment_create(name, 4096);
	ok(fd >= 0, "the leader creates the segment");
	if (fd >= 0) {
		char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED) {
			memcpy(m, "tensor data", 12);
			munmap(m, 4096);
		}
		close(fd);
	}
	rc = as_nobody(snoop, name);
	is_int(rc, 0, "nobody cannot open it for writing nor for reading (EACCES)");
	fd = loom_shm_segment_open(name, 4096, loom_now() + 2);
	ok(fd >= 0, "a local rank of this user opens it");
	if (fd >= 0) {
		char *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
		ok(m != MAP_FAILED && !strcmp(m, "tensor data"), "and sees the leader's bytes");
		if (m != MAP_FAILED)
			munmap(m, 4096);
		close(fd);
	}
	/* 4. bigger than this communicator makes: refused; smaller: waited for */
	ok(loom_shm_segment_open(name, 1024, loom_now() + 2) < 0, "a segment larger than expected is refused");
	{
		double t = loom_now();
		ok(loom_shm_segment_open(name, 8192, t + 0.3) < 0, "one that never reaches its size is given up at the deadline");
	}
	shm_unlink(name);
	ok(loom_shm_segment_open(name, 4096, loom_now() + 0.3) < 0, "no segment at all: given up at the deadline, none created");
	fd = shm_open(name, O_RDONLY, 0);
	ok(fd < 0 && errno == ENOENT, "the open never created the name");
	if (fd >= 0)
		close(fd);
	done_testing();
	return exit_status();
}
