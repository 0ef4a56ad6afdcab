/* runtime/util/files.c: files made in directories that other users may
 * write (a textfile-collector directory, /tmp, /var/tmp). Nothing found
 * there is trusted: the directory is opened without following a link,
 * a new file gets an unguessable name and O_CREAT|O_EXCL|O_NOFOLLOW|
 * O_NONBLOCK (a link or FIFO planted at a name is neither followed nor
 * waited on), is checked to be a regular file of ours, and the caller
 * renames it into place with renameat, which replaces whatever entry has
 * the final name without following it. */
#include "config.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int loom_open_parent(const char *path, const char **basep, int *bad_name)
{
	char dir[4096];
	const char *base = strrchr(path, '/');
	int dfd;
	*bad_name = 0;
	if (base) {
		size_t dl = (size_t)(base - path);
		snprintf(dir, sizeof dir, "%.*s", (int)(dl ? dl : 1), path);
		base++;
	} else {
		snprintf(dir, sizeof dir, ".");
		base = path;
	}
	if (!*base || strlen(base) > 200 || !strcmp(base, ".") || !strcmp(base, "..")) {
		*bad_name = 1;
		return -EINVAL;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	*basep = base;
	return dfd;
}

int loom_create_unique(int dfd, const char *base, int flags, unsigned mode, char *tmp, size_t len)
{
	char hex[17];
	uint8_t rnd[8];
	struct stat st;
	int fd = -1, tries;
	for (tries = 0; fd < 0 && tries < 8; tries++) {
		if (loom_random_bytes(rnd, sizeof rnd))
			return -EIO;
		loom_hex_encode(rnd, sizeof rnd, hex);
		if ((size_t)snprintf(tmp, len, "%s.tmp.%s", base, hex) >= len)
			return -ENAMETOOLONG;
		fd = openat(dfd, tmp, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
			    mode);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	/* created here (O_EXCL), so ours: checked all the same */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		unlinkat(dfd, tmp, 0);
		return -EPERM;
	}
	return fd;
}
