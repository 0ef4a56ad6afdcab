/* spank/job_secret.c: make the step's LOOM_JOB_SECRET in srun. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "job_secret.h"

void loom_job_secret_hex(const unsigned char *raw, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;
	for (i = 0; i < n; i++) {
		out[2 * i] = digits[raw[i] >> 4];
		out[2 * i + 1] = digits[raw[i] & 15];
	}
	out[2 * n] = 0;
}

int loom_job_secret_make(char *out, size_t outlen, char *err, size_t errlen)
{
	unsigned char raw[LOOM_JOB_SECRET_HEX / 2];
	size_t got = 0;
	if (outlen < LOOM_JOB_SECRET_HEX + 1) {
		snprintf(err, errlen, "internal: secret buffer of %zu bytes", outlen);
		return -1;
	}
	while (got < sizeof raw) {
		ssize_t r = getrandom(raw + got, sizeof raw - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "cannot make %s: getrandom: %s", LOOM_JOB_SECRET_VAR, strerror(errno));
			return -1;
		}
		got += (size_t)r;
	}
	loom_job_secret_hex(raw, sizeof raw, out);
	memset(raw, 0, sizeof raw);
	return 0;
}

int loom_job_secret_export(char *err, size_t errlen)
{
	char hex[LOOM_JOB_SECRET_HEX + 1];
	const char *have = getenv(LOOM_JOB_SECRET_VAR);
	if (have && *have)
		return 0;
	if (loom_job_secret_make(hex, sizeof hex, err, errlen) < 0)
		return -1;
	if (setenv(LOOM_JOB_SECRET_VAR, hex, 1) != 0 || setenv(LOOM_JOB_SECRET_BY_VAR, "srun", 1) != 0) {
		snprintf(err, errlen, "cannot set %s: %s", LOOM_JOB_SECRET_VAR, strerror(errno));
		return -1;
	}
	memset(hex, 0, sizeof hex);
	return 1;
}
