/* runtime/ckpt/test/capture.h: the library's log lines (stderr) captured into
 * a file under a test's directory, for checking what it said. */
#ifndef LOOM_TEST_CAPTURE_H
#define LOOM_TEST_CAPTURE_H

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

static char cap_path[300], cap_text[8192];
static int cap_saved = -1;

/* from now on stderr goes to DIR/stderr.txt */
static inline void cap_begin_in(const char *dir)
{
	fflush(stderr);
	snprintf(cap_path, sizeof cap_path, "%s/stderr.txt", dir);
	int fd = open(cap_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cap_saved = dup(2);
	dup2(fd, 2);
	close(fd);
}

/* stderr back; what was written since cap_begin_in */
static inline const char *cap_end(void)
{
	fflush(stderr);
	dup2(cap_saved, 2);
	close(cap_saved);
	FILE *f = fopen(cap_path, "r");
	size_t n = f ? fread(cap_text, 1, sizeof cap_text - 1, f) : 0;
	cap_text[n] = 0;
	if (f)
		fclose(f);
	return cap_text;
}

#endif
