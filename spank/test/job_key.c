/* spank/test/job_key.c: the job key and the step secrets (job_key.h):
 * the same inputs give the same secret, any other job, restart count,
 * step or munge key another; an unreadable key file is named. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../job_key.h"
#include "../../t/tap.h"

static char dir[] = "/tmp/loom-jobkey-XXXXXX";

static void write_key(const char *path, const char *bytes)
{
	FILE *f = fopen(path, "w");
	fputs(bytes, f);
	fclose(f);
}

static void secret(const char *path, uint32_t job, uint32_t restarts, uint32_t step, char hex[33])
{
	unsigned char k[LOOM_JOB_KEY_LEN];
	char err[600];
	hex[0] = 0;
	if (loom_job_key_derive(path, job, restarts, k, err, sizeof err) == 0)
		loom_job_key_step_secret(k, step, hex);
}

int main(void)
{
	char a[600], b[600], ref[33], s[33], err[600];
	unsigned char k[LOOM_JOB_KEY_LEN];
	plan(NO_PLAN);
	if (!mkdtemp(dir))
		return 1;
	snprintf(a, sizeof a, "%s/munge.key", dir);
	snprintf(b, sizeof b, "%s/other.key", dir);
	write_key(a, "a munge key of this realm");
	write_key(b, "a munge key of another realm");
	secret(a, 1000, 0, 0, ref);
	is_int((int)strlen(ref), 32, "32 hex digits");
	secret(a, 1000, 0, 0, s);
	is_str(s, ref, "the same job, restart count and step: the same secret (every node)");
	secret(a, 1001, 0, 0, s);
	ok(strcmp(s, ref) != 0, "another job: another secret");
	secret(a, 1000, 1, 0, s);
	ok(strcmp(s, ref) != 0, "the same job after a requeue: another secret");
	secret(a, 1000, 0, 1, s);
	ok(strcmp(s, ref) != 0, "another step: another secret");
	secret(b, 1000, 0, 0, s);
	ok(strcmp(s, ref) != 0, "another munge key: another secret");
	snprintf(b, sizeof b, "%s/missing.key", dir);
	is_int(loom_job_key_derive(b, 1000, 0, k, err, sizeof err), -1, "a missing key file fails");
	like(err, "cannot read the munge key", "says what");
	like(err, "missing.key", "names the file");
	like(err, "munge_key=PATH", "and what to do");
	unlink(a);
	snprintf(b, sizeof b, "%s/other.key", dir);
	unlink(b);
	rmdir(dir);
	done_testing();
	return exit_status();
}
