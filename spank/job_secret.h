/* spank/job_secret.h: the per-step secret that lets libloom's ranks prove
 * to each other that they belong to the same step (docs/security.md). */
#ifndef LOOM_SPANK_JOB_SECRET_H
#define LOOM_SPANK_JOB_SECRET_H

#include <stddef.h>

#define LOOM_JOB_SECRET_VAR "LOOM_JOB_SECRET"
#define LOOM_JOB_SECRET_HEX 32   /* 128 random bits */
/* who made LOOM_JOB_SECRET: "srun" (loom.so's random one, which
 * slurmstepd replaces by one from the job key, job_key.h), "job-key"
 * (that one); unset: the user's own, kept */
#define LOOM_JOB_SECRET_BY_VAR "LOOM_JOB_SECRET_BY"

/* out (at least LOOM_JOB_SECRET_HEX + 1 bytes): fresh random hex digits.
 * -1 with err filled when the kernel gives no random bytes. */
int loom_job_secret_make(char *out, size_t outlen, char *err, size_t errlen);
/* out (2 n + 1 bytes): raw's n bytes as lowercase hex digits, the
 * secret's form */
void loom_job_secret_hex(const unsigned char *raw, size_t n, char *out);

/* In srun: give the step a secret in srun's own environment, which Slurm
 * copies to every task (and which only the user and root can read),
 * marked LOOM_JOB_SECRET_BY=srun. An existing value (the user's own
 * launcher, an enclosing step) is kept.
 * 1 when one was made, 0 when kept, -1 on error. */
int loom_job_secret_export(char *err, size_t errlen);

#endif
