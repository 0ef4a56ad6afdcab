/* spank/job_key.c: the job key from the munge key, and the step secrets
 * from it (job_key.h). */
#include "config.h"
#include "job_key.h"
#include "job_secret.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* the whole file, at most LOOM_MUNGE_KEY_MAX bytes: its length, or -1 */
static long read_key(const char *path, unsigned char **out, char *err, size_t errlen)
{
	struct stat st;
	long got = 0;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	*out = NULL;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 1 ||
	    st.st_size > LOOM_MUNGE_KEY_MAX || !(*out = malloc((size_t)st.st_size))) {
		snprintf(err, errlen, "cannot read the munge key %s (%s): loom.so derives the job's key from it as "
			 "root in slurmstepd; set plugstack.conf's munge_key=PATH to the key munged uses "
			 "(its --key-file)", path, fd < 0 ? strerror(errno) : !S_ISREG(st.st_mode) ? "not a file" :
			 "empty, or over 1 MiB");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (got < st.st_size && (r = read(fd, *out + got, (size_t)(st.st_size - got))) > 0)
		got += r;
	close(fd);
	if (got != st.st_size) {
		snprintf(err, errlen, "cannot read the munge key %s: short read", path);
		OPENSSL_cleanse(*out, (size_t)st.st_size);
		free(*out);
		*out = NULL;
		return -1;
	}
	return got;
}

int loom_job_key_derive(const char *path, uint32_t job, uint32_t restarts,
			unsigned char key[LOOM_JOB_KEY_LEN], char *err, size_t errlen)
{
	unsigned char msg[9 + 8], *mk;
	unsigned int len = LOOM_JOB_KEY_LEN;
	long n = read_key(path, &mk, err, errlen);
	int ok;
	if (n < 0)
		return -1;
	memcpy(msg, "loom job", 9);     /* with its NUL */
	put32(msg + 9, job);
	put32(msg + 13, restarts);
	ok = HMAC(EVP_sha256(), mk, (int)n, msg, sizeof msg, key, &len) != NULL;
	OPENSSL_cleanse(mk, (size_t)n);
	free(mk);
	if (!ok)
		snprintf(err, errlen, "cannot derive the job's key: HMAC-SHA256 failed");
	return ok ? 0 : -1;
}

void loom_job_key_step_secret(const unsigned char key[LOOM_JOB_KEY_LEN], uint32_t step, char hex[33])
{
	unsigned char msg[10 + 4], mac[32];
	unsigned int len = sizeof mac;
	memcpy(msg, "loom step", 10);
	put32(msg + 10, step);
	HMAC(EVP_sha256(), key, LOOM_JOB_KEY_LEN, msg, sizeof msg, mac, &len);
	loom_job_secret_hex(mac, LOOM_JOB_SECRET_HEX / 2, hex);
	OPENSSL_cleanse(mac, sizeof mac);
}
