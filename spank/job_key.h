/* spank/job_key.h: the job key, and each step's LOOM_JOB_SECRET derived
 * from it (docs/security.md). loom.so computes them as root in
 * slurmstepd, where the munge key is readable:
 *   K_job  = HMAC-SHA256(munge key, "loom job" 0 || job id || restarts)
 *   secret = HMAC-SHA256(K_job, "loom step" 0 || step id), 128 bits in hex
 * (ids little-endian 32 bits). Every node of the job computes the same,
 * no process without the munge key can, another job (or the same job
 * after a requeue) gets another, and a --loom-join step gets the secret
 * of the step whose world it joins. */
#ifndef LOOM_SPANK_JOB_KEY_H
#define LOOM_SPANK_JOB_KEY_H

#include <stddef.h>
#include <stdint.h>

#define LOOM_JOB_KEY_LEN 32
#define LOOM_MUNGE_KEY_MAX (1 << 20)    /* larger is not a munge key */

/* K_job from the key file at path. 0, or -1 with err naming the file,
 * why, and what to do. */
int loom_job_key_derive(const char *path, uint32_t job, uint32_t restarts,
			unsigned char key[LOOM_JOB_KEY_LEN], char *err, size_t errlen);
/* step's secret, the first 128 bits of its HMAC, as 32 hex digits and
 * a NUL into hex (33 bytes: the length of srun's random ones) */
void loom_job_key_step_secret(const unsigned char key[LOOM_JOB_KEY_LEN], uint32_t step, char hex[33]);

#endif
