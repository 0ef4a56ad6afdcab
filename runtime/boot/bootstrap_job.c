/* runtime/boot/bootstrap_job.c: what every part of the env rendezvous
 * takes from the job: its integer settings from the environment, and the
 * buffer the world's bits and table arrive in. */
#include "boot/bootstrap_env.h"

#include <errno.h>
#include <stdlib.h>

int loom_rv_env_int(const char *name, long lo, long hi, int *out)
{
	const char *v = getenv(name);
	char *end;
	long l;
	if (!v || !*v) {
		LOOM_ERR("bootstrap: %s unset", name);
		return LOOM_ERR_BOOTSTRAP;
	}
	errno = 0;
	l = strtol(v, &end, 10);
	if (*end || errno || l < lo || l > hi) {
		LOOM_ERR("bootstrap: %s=%s is not a number in %ld..%ld", name, v, lo, hi);
		return LOOM_ERR_BOOTSTRAP;
	}
	*out = (int)l;
	return LOOM_SUCCESS;
}

int loom_rv_alloc_reply(struct rv_job *j)
{
	j->rlen = sizeof(struct rv_head) + (size_t)j->b->size * sizeof(struct rv_entry);
	j->reply = malloc(j->rlen);
	return j->reply ? LOOM_SUCCESS : LOOM_ERR_NOMEM;
}
