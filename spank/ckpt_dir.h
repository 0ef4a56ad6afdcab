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

/* IN with %j replaced by the job id and %% by %; any other % sequence
 * is an error, and err names LABEL (e.g. "--loom-ckpt") and the sequence.
 * With LOOM_EXPAND_KEEP_NODE, %n and %% are copied as they are: libloom
 * expands such a value again on each node (%n: the node's name), so a %%
 * made % here would become a sequence there. 0 or -1. */
#define LOOM_EXPAND_KEEP_NODE 1u
int loom_ckpt_expand(const char *in, unsigned long job, unsigned flags, const char *label,
		     char *out, size_t len, char *err, size_t errlen);

#endif
