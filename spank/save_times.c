/* spank/save_times.c: the save history of --loom-ckpt-signal=SIG@auto
 * and the lead time taken from it (see save_times.h). */
#include "config.h"
#include "save_times.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

/* "KEY=VALUE" at *p, VALUE up to a space or the end of the line */
static int field(const char **p, const char *key, char *val, size_t len)
{
	size_t k = strlen(key), n;
	if (strncmp(*p, key, k) || (*p)[k] != '=')
		return -1;
	*p += k + 1;
	n = strcspn(*p, " \n");
	if (n == 0 || n >= len)
		return -1;
	memcpy(val, *p, n);
	val[n] = '\0';
	*p += n;
	if (**p == ' ')
		(*p)++;
	return 0;
}

static int whole(const char *v, unsigned long long max, unsigned long long *out)
{
	char *end;
	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return errno || *end || *out > max ? -1 : 0;
}

/* seconds: digits, one optional point, digits; at most a million */
static int seconds(const char *v, double *out)
{
	char *end;
	if (*v < '0' || *v > '9' || strspn(v, "0123456789.") != strlen(v))
		return -1;
	errno = 0;
	*out = strtod(v, &end);
	return errno || *end || !(*out >= 0 && *out <= 1e6) ? -1 : 0;
}

static int record(const char *line, struct loom_save_times *t)
{
	char step[24], secs[24], bytes[24];
	unsigned long long s, b;
	double d;
	const char *p = line;
	if (field(&p, "step", step, sizeof step) || field(&p, "seconds", secs, sizeof secs) ||
	    field(&p, "bytes", bytes, sizeof bytes) || *p ||
	    whole(step, (unsigned long long)1 << 62, &s) || seconds(secs, &d) ||
	    whole(bytes, (unsigned long long)1 << 62, &b))
		return -1;
	if (t->n == 0 || d > t->slowest_s) {
		t->slowest_s = d;
		t->slowest_bytes = b;
		t->slowest_step = (long long)s;
	}
	t->n++;
	return 0;
}

int loom_save_times_parse(const char *text, struct loom_save_times *t, char *err, size_t errlen)
{
	const char *p = text;
	int lines = 0;
	char shown[64];
	memset(t, 0, sizeof *t);
	while (*p) {
		char line[128];
		size_t n = strcspn(p, "\n");
		if (n >= sizeof line) {
			snprintf(err, errlen, "line %d is longer than %zu characters", lines + 1,
				 sizeof line - 1);
			return -1;
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p += n + (p[n] == '\n');
		lines++;
		loom_str_clean(shown, sizeof shown, line, 40);
		if (lines == 1) {
			if (strcmp(line, LOOM_SAVE_TIMES_HEADER)) {
				snprintf(err, errlen, "the first line '%s' is not '%s'", shown,
					 LOOM_SAVE_TIMES_HEADER);
				return -1;
			}
			continue;
		}
		if (t->n == LOOM_SAVE_TIMES_RECORDS) {
			snprintf(err, errlen, "more than %d records", LOOM_SAVE_TIMES_RECORDS);
			return -1;
		}
		if (record(line, t) < 0) {
			snprintf(err, errlen, "line %d '%s' is not 'step=N seconds=S bytes=N'", lines,
				 shown);
			return -1;
		}
	}
	if (lines == 0) {
		snprintf(err, errlen, "empty (no '%s' line)", LOOM_SAVE_TIMES_HEADER);
		return -1;
	}
	return 0;
}

int loom_auto_lead(const struct loom_save_times *t)
{
	double l = LOOM_AUTO_FACTOR * t->slowest_s + LOOM_AUTO_MARGIN_S;
	int up;
	if (l >= LOOM_AUTO_MAX_S)
		return LOOM_AUTO_MAX_S;
	up = (int)l;
	if (up < l)
		up++;           /* ceil, without libm in the plugin */
	return up < LOOM_AUTO_FLOOR_S ? LOOM_AUTO_FLOOR_S : up;
}
