/* spank/strbuf.h: building strings into fixed buffers without ever
 * writing past them, and making text from users safe for a log line.
 * A builder that does not fit says so (-1) instead of cutting the value
 * silently: the caller turns that into an error naming what did not fit. */
#ifndef LOOM_SPANK_STRBUF_H
#define LOOM_SPANK_STRBUF_H

#include <stddef.h>

struct loom_sb {
	char *buf;
	size_t cap, len;
	int full;               /* an append did not fit: the rest are refused */
};

/* buf[0..cap) becomes the empty string */
void loom_sb_init(struct loom_sb *b, char *buf, size_t cap);
/* Append; 0, or -1 when it does not fit (or an earlier one did not): the
 * buffer then keeps what it had before this call, always terminated. */
int loom_sb_add(struct loom_sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* SRC as it may appear in a log line: at most MAX characters of it, each
 * control or non-ASCII byte as '?', "..." when cut; into dst[0..dstlen). */
void loom_str_clean(char *dst, size_t dstlen, const char *src, size_t max);
/* in place, without a length limit: control characters as '?' (UTF-8
 * stays, for paths); for messages that echo what a user typed */
void loom_log_clean(char *s);

#endif
