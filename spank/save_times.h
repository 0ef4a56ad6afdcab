/* spank/save_times.h: --loom-ckpt-signal=SIG@auto. libloom appends each
 * committed save's duration and size to LOOM_CKPT_DIR/.loom-save-times
 * (docs/checkpoint-format.md, "Save times"); the timer reads it (as the
 * job's user) and sends the stop signal at a lead time computed from the
 * slowest recent save:
 *
 *   lead = max(LOOM_AUTO_FLOOR_S, ceil(LOOM_AUTO_FACTOR * slowest + LOOM_AUTO_MARGIN_S))
 *
 * the factor for a save slower than the ones seen (a busier file system),
 * the margin for the signal's delivery, the step in progress when it comes
 * and the agreement on it; the floor for saves too quick to measure
 * anything else. No history: the default (LOOM_CKPT_SIGNAL_DEFAULT_SECONDS). */
#ifndef LOOM_SPANK_SAVE_TIMES_H
#define LOOM_SPANK_SAVE_TIMES_H

#include "../common/loom_files.h" /* LOOM_SAVE_TIMES_FILE, _HEADER, _MAX */

#include <stddef.h>

/* libloom keeps 8 records of under 80 bytes (LOOM_SAVE_TIMES_MAX bounds
 * the file) */
#define LOOM_SAVE_TIMES_RECORDS 16
#define LOOM_AUTO_FLOOR_S 15
#define LOOM_AUTO_FACTOR 2.0
#define LOOM_AUTO_MARGIN_S 10.0
#define LOOM_AUTO_MAX_S 65535

struct loom_save_times {
	int n;                  /* records read (0: a header and no save yet) */
	double slowest_s;       /* the slowest of them */
	unsigned long long slowest_bytes;
	long long slowest_step;
};

/* The file's text: 0, or -1 with err naming what is wrong (the text shown
 * cleaned and cut, never verbatim). */
int loom_save_times_parse(const char *text, struct loom_save_times *t, char *err, size_t errlen);
/* the lead time for t (t->n > 0), by the formula above */
int loom_auto_lead(const struct loom_save_times *t);

#endif
