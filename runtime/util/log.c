/* runtime/util/log.c: LOOM_DEBUG=info|trace logging to stderr, one line per
 * call, prefixed with the rank: "loom[1/4 n1]: ...". Errors and warnings
 * are always printed. */
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int loom_log_level_v = LOOM_LOG_WARN;
static char loom_log_prefix[128] = "loom";

void loom_log_init(void)
{
	const char *d = getenv("LOOM_DEBUG");
	loom_log_level_v = LOOM_LOG_WARN;
	if (!d || !*d)
		return;
	if (!strcmp(d, "info") || !strcmp(d, "1"))
		loom_log_level_v = LOOM_LOG_INFO;
	else if (!strcmp(d, "trace") || !strcmp(d, "2"))
		loom_log_level_v = LOOM_LOG_TRACE;
	else if (!strcmp(d, "warn") || !strcmp(d, "0"))
		loom_log_level_v = LOOM_LOG_WARN;
	else if (!strcmp(d, "error"))
		loom_log_level_v = LOOM_LOG_ERROR;
	else
		fprintf(stderr, "loom: LOOM_DEBUG=%s not understood (info|trace)\n", d);
}

void loom_log_identity(int rank, int size, const char *node)
{
	snprintf(loom_log_prefix, sizeof loom_log_prefix, "loom[%d/%d %s]", rank, size,
		 node ? node : "?");
}

void loom_log(int level, const char *fmt, ...)
{
	static const char *what[] = { "error: ", "warning: ", "", "trace: " };
	char line[1024];
	int n;
	va_list ap;
	if (level > loom_log_level_v)
		return;
	n = snprintf(line, sizeof line, "%s: %s", loom_log_prefix, what[level & 3]);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof line)
		vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
	va_end(ap);
	/* one write, so that lines of concurrent ranks do not interleave */
	fprintf(stderr, "%s\n", line);
}
