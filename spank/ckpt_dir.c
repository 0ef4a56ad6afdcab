/* spank/ckpt_dir.c: validate (and create) the checkpoint directory. */
#include "config.h"
#include "ckpt_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"

/* In a sticky directory others may write (/tmp/ckpt-%j), an entry at the
 * name that is not the user's is another user's squat: a link or a
 * directory of theirs would take the job's checkpoints. Refused, naming
 * its owner; a link of the user's own is the user's choice. */
static int check_squat(const char *dir, char *err, size_t errlen)
{
	char parent[LOOM_CKPT_PATH_MAX];
	const char *base = strrchr(dir, '/');
	struct stat st, pst;
	if (!base || lstat(dir, &st) < 0 || st.st_uid == geteuid() || st.st_uid == 0)
		return 0;
	snprintf(parent, sizeof parent, "%.*s", (int)(base > dir ? base - dir : 1), dir);
	if (stat(parent, &pst) < 0 || !(pst.st_mode & S_ISVTX) || !(pst.st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	snprintf(err, errlen, "--loom-ckpt=%s is a %s of uid %u in the shared directory %s: "
		 "refusing another user's entry at the name (a squatter's?); give a directory "
		 "of the job's user (uid %u)", dir, S_ISLNK(st.st_mode) ? "symbolic link" :
		 S_ISDIR(st.st_mode) ? "directory" : S_ISFIFO(st.st_mode) ? "FIFO" : "file",
		 (unsigned)st.st_uid, parent, (unsigned)geteuid());
	return -1;
}

static int check_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	if (check_squat(dir, err, errlen) < 0)
		return -1;
	if (stat(dir, &st) < 0) {
		snprintf(err, errlen, "--loom-ckpt=%s: %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "--loom-ckpt=%s exists and is not a directory", dir);
		return -1;
	}
	/* AT_EACCESS: the effective ids, which are the job user's in slurmstepd */
	if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0) {
		snprintf(err, errlen, "--loom-ckpt=%s is not writable by the job's user (uid %u): %s",
			 dir, (unsigned)geteuid(), strerror(errno));
		return -1;
	}
	return 0;
}

int loom_ckpt_prepare(const char *dir, int create, char *err, size_t errlen)
{
	char path[LOOM_CKPT_PATH_MAX];
	struct stat st;

	if (!dir || dir[0] != '/' || strlen(dir) >= sizeof path) {
		snprintf(err, errlen, "--loom-ckpt='%s' is not an absolute path", dir ? dir : "");
		return -1;
	}
	if (lstat(dir, &st) == 0)
		return check_dir(dir, err, errlen);
	if (errno != ENOENT) {
		snprintf(err, errlen, "--loom-ckpt=%s: %s", dir, strerror(errno));
		return -1;
	}
	if (!create)
		return 0;
	strcpy(path, dir);
	for (char *p = path + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (path[strlen(path) - 1] != '/' && mkdir(path, 0777) < 0 && errno != EEXIST) {
				snprintf(err, errlen, "--loom-ckpt=%s: cannot create %s as the job's user (uid %u): %s",
					 dir, path, (unsigned)geteuid(), strerror(errno));
				return -1;
			}
			*p = c;
			if (c == '\0')
				break;
		}
	}
	return check_dir(dir, err, errlen);
}

int loom_ckpt_expand(const char *in, unsigned long job, unsigned flags, const char *label,
		     char *out, size_t len, char *err, size_t errlen)
{
	int keep_node = (flags & LOOM_EXPAND_KEEP_NODE) != 0;
	size_t o = 0;
	for (const char *p = in; *p; p++) {
		char num[24];
		const char *add = num;
		if (*p != '%') {
			num[0] = *p;
			num[1] = '\0';
		} else if (p[1] == 'j') {
			snprintf(num, sizeof num, "%lu", job);
			p++;
		} else if (keep_node && (p[1] == 'n' || p[1] == '%')) {
			/* left for libloom, which expands the value again on each node */
			num[0] = '%';
			num[1] = p[1];
			num[2] = '\0';
			p++;
		} else if (p[1] == '%') {
			add = "%";
			p++;
		} else {
			snprintf(err, errlen, "%s=%s: '%%%.1s' is not understood: only %s%%j (the job "
				 "id) and %%%% are expanded (write %%%% for a literal %%)", label, in,
				 p[1] ? p + 1 : "", keep_node ? "%n (the node name), " : "");
			return -1;
		}
		if (o + strlen(add) >= len) {
			snprintf(err, errlen, "%s=%s: longer than %zu characters once expanded: "
				 "give a shorter path", label, in, len - 1);
			return -1;
		}
		strcpy(out + o, add);
		o += strlen(add);
	}
	out[o] = '\0';
	return 0;
}
