/* spank/topo_cache.c: the node topology cache (topo_cache.h): where it may
 * live (root's, reached without symbolic links), its key, and reading and
 * replacing the file. Runs in slurmstepd as root, before the job's user
 * takes over; a cache it cannot trust is never read, only reported. */
#include "config.h"
#include "topo_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define CACHE_MAX_BYTES (64L << 20)

/* the first line of a small file, without its newline; "" when unreadable */
static void first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

static int pci_devices(void)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	int n = 0;
	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int loom_topo_cache_key(char *key, size_t len)
{
	char boot[64], cpus[512], hw[32];
	struct utsname u;

	first_line("/proc/sys/kernel/random/boot_id", boot, sizeof boot);
	if (!boot[0])
		return -1;
	first_line("/sys/devices/system/cpu/online", cpus, sizeof cpus);
	loom_topo_hwloc_version(hw, sizeof hw);
	if (uname(&u) < 0)
		snprintf(u.nodename, sizeof u.nodename, "?");
	snprintf(key, len, "v1 host=%.64s boot=%s hwloc=%s cpus=%.300s pci=%d", u.nodename, boot, hw,
		 cpus[0] ? cpus : "?", pci_devices());
	return 0;
}

/* why a directory's owner or mode makes it unsafe; NULL when safe */
static const char *dir_unsafe(const struct stat *st, int last)
{
	if (!S_ISDIR(st->st_mode))
		return "is not a directory";
	if (st->st_uid != 0)
		return "is not owned by root";
	/* above the cache's directory a sticky one (/tmp) is fine: nobody
	 * else may rename or remove root's entries in it */
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && (last || !(st->st_mode & S_ISVTX)))
		return "is writable by group or others";
	return NULL;
}

/* An O_PATH descriptor of DIR (absolute), walked from / one component at
 * a time without following symbolic links, every component checked; the
 * last one is made (root's, 0755) when missing. -1 with why. */
static int open_safe_dir(const char *dir, char *why, size_t wl)
{
	char copy[1024], *save = NULL, *c, *next;
	char sofar[1024] = "";
	const char *bad;
	struct stat st;
	int fd, nfd;

	if (dir[0] != '/' || strlen(dir) >= sizeof copy) {
		snprintf(why, wl, "is not an absolute path");
		return -1;
	}
	strcpy(copy, dir);
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(why, wl, "/: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	c = strtok_r(copy, "/", &save);
	if ((bad = dir_unsafe(&st, c == NULL))) {
		snprintf(why, wl, "/ %s", bad);
		close(fd);
		return -1;
	}
	for (; c; c = next) {
		next = strtok_r(NULL, "/", &save);
		snprintf(sofar + strlen(sofar), sizeof sofar - strlen(sofar), "/%s", c);
		if (strcmp(c, ".") == 0 || strcmp(c, "..") == 0) {
			snprintf(why, wl, "%s: '.' and '..' are not allowed in the path", sofar);
			close(fd);
			return -1;
		}
		nfd = openat(fd, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0 && errno == ENOENT && !next && mkdirat(fd, c, 0755) == 0)
			nfd = openat(fd, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			snprintf(why, wl, "%s: %s", sofar, strerror(errno));
			close(fd);
			return -1;
		}
		close(fd);
		fd = nfd;
		if (fstat(fd, &st) < 0) {
			snprintf(why, wl, "%s: %s", sofar, strerror(errno));
			close(fd);
			return -1;
		}
		if (S_ISLNK(st.st_mode))
			bad = "is a symbolic link";
		else
			bad = dir_unsafe(&st, next == NULL);
		if (bad) {
			snprintf(why, wl, "%s %s", sofar, bad);
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* The cache file's contents (NUL-terminated, malloc()ed) when it is safe;
 * NULL with *missing set when there is none, NULL with why when unsafe. */
static char *read_cache(int dfd, const char *name, size_t *len, int *missing, char *why, size_t wl)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	*missing = 0;
	if (fd < 0) {
		if (errno == ENOENT)
			*missing = 1;
		else
			snprintf(why, wl, "%s", errno == ELOOP ? "is a symbolic link" : strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(why, wl, "cannot be examined: %s", strerror(errno));
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
	    st.st_size > CACHE_MAX_BYTES) {
		snprintf(why, wl, "%s", !S_ISREG(st.st_mode) ? "is not a regular file" :
			 st.st_uid != 0 ? "is not owned by root" :
			 st.st_size > CACHE_MAX_BYTES ? "is larger than 64 MiB" :
			 "is writable by group or others");
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		snprintf(why, wl, "out of memory");
		close(fd);
		return NULL;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*len = got;
	return buf;
}

/* A new file beside the old one, renamed over it once complete: readers
 * see the old cache or the new one, never a part. */
static int write_cache(int dfd, const char *name, const char *xml, size_t len, char *why, size_t wl)
{
	char tmp[300];
	size_t off = 0;
	int fd;

	snprintf(tmp, sizeof tmp, ".%.200s.%ld.tmp", name, (long)getpid());
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST && unlinkat(dfd, tmp, 0) == 0)   /* a dead stepd's */
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(why, wl, "cannot create %s: %s", tmp, strerror(errno));
		return -1;
	}
	while (off < len) {
		ssize_t n = write(fd, xml + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	if (off < len || fchmod(fd, 0644) < 0 || fsync(fd) < 0) {
		snprintf(why, wl, "cannot write %s: %s", tmp, off < len ? "short write" : strerror(errno));
		close(fd);
		unlinkat(dfd, tmp, 0);
		return -1;
	}
	close(fd);
	if (renameat(dfd, tmp, dfd, name) < 0) {
		snprintf(why, wl, "cannot rename %s over %s: %s", tmp, name, strerror(errno));
		unlinkat(dfd, tmp, 0);
		return -1;
	}
	return 0;
}

enum loom_topo_cache_rc loom_topo_cache_load(struct loom_topo *t, const char *path,
					     const char *nvml_lib, char *note, size_t notelen)
{
	char key[600], dir[1024], why[600], err[700], stale[700] = "";
	const char *name;
	char *buf, *xml = NULL;
	size_t len = 0;
	int dfd, missing, rc;

	if (loom_topo_cache_key(key, sizeof key) < 0) {
		snprintf(note, notelen, "topology cache %s not used: cannot read "
			 "/proc/sys/kernel/random/boot_id", path);
		return LOOM_TOPO_CACHE_REFUSED;
	}
	name = strrchr(path, '/');
	if (!name || !name[1] || (size_t)(name - path) >= sizeof dir) {
		snprintf(note, notelen, "topology cache %s not used: not an absolute path of a file", path);
		return LOOM_TOPO_CACHE_REFUSED;
	}
	snprintf(dir, sizeof dir, "%.*s", (int)(name - path), path);
	name++;
	if ((dfd = open_safe_dir(dir[0] ? dir : "/", why, sizeof why)) < 0) {
		snprintf(note, notelen, "topology cache %s refused: %s (fix it, or set topology_cache=none)",
			 path, why);
		return LOOM_TOPO_CACHE_REFUSED;
	}
	buf = read_cache(dfd, name, &len, &missing, why, sizeof why);
	if (!buf && !missing) {
		snprintf(note, notelen, "topology cache %s refused: it %s (remove it; loom.so writes a new one)",
			 path, why);
		close(dfd);
		return LOOM_TOPO_CACHE_REFUSED;
	}
	if (buf) {
		rc = loom_topo_load_xml_buffer(t, buf, len, key, nvml_lib, err, sizeof err);
		free(buf);
		if (rc == 0) {
			close(dfd);
			snprintf(note, notelen, "topology from cache %s", path);
			return LOOM_TOPO_CACHE_REUSED;
		}
		snprintf(stale, sizeof stale, rc > 0 ? "stale: %s" : "unreadable: %s", err);
	}
	rc = loom_topo_load_live_xml(t, key, nvml_lib, &xml, &len, err, sizeof err);
	if (rc < 0) {
		close(dfd);
		snprintf(note, notelen, "topology cache %s not written: %s", path, err);
		return LOOM_TOPO_CACHE_REFUSED;
	}
	if (rc > 0 || write_cache(dfd, name, xml, len, why, sizeof why) < 0) {
		close(dfd);
		free(xml);
		snprintf(note, notelen, "topology cache %s not written: %s", path, rc > 0 ? err : why);
		return LOOM_TOPO_CACHE_UNWRITTEN;
	}
	close(dfd);
	free(xml);
	snprintf(note, notelen, "topology cache %s written (%s)", path, stale[0] ? stale : "there was none");
	return LOOM_TOPO_CACHE_WRITTEN;
}
