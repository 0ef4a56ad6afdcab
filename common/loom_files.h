/* common/loom_files.h: the files libloom leaves in LOOM_CKPT_DIR for the
 * SPANK plugin (loom.so) to read. Both sides include this header (macros
 * only: the plugin never links libloom), so that a name or format line
 * changed on one side changes on the other.
 *
 * .loom-requeue: a stop-triggered checkpoint's request that the job be
 * requeued (docs/environment.md, "Requeue after a checkpoint").
 *
 * .loom-save-times: "loom-save-times 1", then one line per committed save,
 * oldest first: "step=N seconds=S bytes=N" (docs/checkpoint-format.md,
 * "Save times"); read for --loom-ckpt-signal=SIG@auto. A larger file than
 * LOOM_SAVE_TIMES_MAX is not one. */
#ifndef LOOM_COMMON_FILES_H
#define LOOM_COMMON_FILES_H

#define LOOM_REQUEUE_FILE ".loom-requeue"

#define LOOM_SAVE_TIMES_FILE ".loom-save-times"
#define LOOM_SAVE_TIMES_HEADER "loom-save-times 1"
#define LOOM_SAVE_TIMES_MAX 2048

#endif
