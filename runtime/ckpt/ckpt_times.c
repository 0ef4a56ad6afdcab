/* runtime/ckpt/ckpt_times.c: DIR/.loom-save-times, the duration and size
 * of the last committed saves, for loom.so's --loom-ckpt-signal=SIG@auto
 * (docs/checkpoint-format.md, "Save times"). Rank 0 appends a record
 * after each commit; the file is replaced by rename, read without
 * following a link, bounded, and started afresh (with a warning) when
 * what is there is not ours to trust. No communication. */
#include "config.h"
#include "ckpt/ckpt_nocomm.h"
#include "loom.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the records already there (text after the header), "" when none or
 * unusable */
static void read_records(const char *dir, char *out, size_t len)
{
	char buf[LOOM_SAVE_TIMES_MAX + 1];
	struct stat st;
	ssize_t got = -1;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1;
	size_t hl = strlen(LOOM_SAVE_TIMES_HEADER);
	out[0] = 0;
	if (dfd >= 0) {
		fd = openat(dfd, LOOM_SAVE_TIMES_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		close(dfd);
	}
	if (fd < 0) {
		if (errno != ENOENT)
			LOOM_WARN("ckpt: %s/%s: %s: started afresh", dir, LOOM_SAVE_TIMES_FILE,
				  errno == ELOOP ? "a symbolic link (not followed)" : strerror(errno));
		return;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= LOOM_SAVE_TIMES_MAX)
		got = read(fd, buf, LOOM_SAVE_TIMES_MAX);
	close(fd);
	if (got < 0 || (buf[got] = 0, strncmp(buf, LOOM_SAVE_TIMES_HEADER "\n", hl + 1))) {
		LOOM_WARN("ckpt: %s/%s is not a file of save times: started afresh", dir,
			  LOOM_SAVE_TIMES_FILE);
		return;
	}
	snprintf(out, len, "%s", buf + hl + 1);
}

int loom_ck_times_record(const char *dir, long long step, double seconds, unsigned long long bytes)
{
	char old[LOOM_SAVE_TIMES_MAX + 1], text[LOOM_SAVE_TIMES_MAX + 200];
	const char *keep;
	int n = 0;
	read_records(dir, old, sizeof old);
	/* the newest CKPT_TIMES_KEEP - 1 lines of old, then this save */
	for (const char *p = old; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n'))
		n++;
	keep = old;
	for (; n >= CKPT_TIMES_KEEP; n--)
		keep += strcspn(keep, "\n") + (keep[strcspn(keep, "\n")] == '\n');
	snprintf(text, sizeof text, "%s\n%s%sstep=%lld seconds=%.3f bytes=%llu\n", LOOM_SAVE_TIMES_HEADER,
		 keep, *keep && keep[strlen(keep) - 1] != '\n' ? "\n" : "", step,
		 seconds < 0 ? 0.0 : seconds, bytes);
	if (loom_ck_write_small(dir, LOOM_SAVE_TIMES_FILE, text) != LOOM_SUCCESS) {
		LOOM_WARN("ckpt: cannot write %s/%s (%s): --loom-ckpt-signal=SIG@auto will not know "
			  "this save's time", dir, LOOM_SAVE_TIMES_FILE, strerror(errno));
		return LOOM_ERR_IO;
	}
	return LOOM_SUCCESS;
}
