/* spank/ckpt_dir.h: the --loom-ckpt directory, checked as the job's user. */
#ifndef LOOM_SPANK_CKPT_DIR_H
#define LOOM_SPANK_CKPT_DIR_H

#include <stddef.h>

/* DIR must be a directory the calling (effective) user can write, or one
 * it can create: missing components are created with mkdir(2) as the
 * caller, so nothing is made that the user could not make itself. With
 * CREATE 0 a missing directory is accepted unchecked. 0, or -1 with a
 * one-line reason in err. */
int loom_ckpt_prepare(const char *dir, int create, char *err, size_t errlen);

/* DIR with %j replaced by the job id and %% by %; any other % sequence
 * is an error (err names it). 0 or -1. */
int loom_ckpt_expand(const char *in, unsigned long job, char *out, size_t len, char *err,
		     size_t errlen);

#endif
