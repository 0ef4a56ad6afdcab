/* spank/strbuf.c: see strbuf.h. */
#include "config.h"
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>

void loom_sb_init(struct loom_sb *b, char *buf, size_t cap)
{
	b->buf = buf;
	b->cap = cap;
	b->len = 0;
	b->full = cap == 0;
	if (cap)
		buf[0] = '\0';
}

int loom_sb_add(struct loom_sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;
	if (b->full)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= b->cap - b->len) {
		b->buf[b->len] = '\0';  /* what fitted before, not a cut value */
		b->full = 1;
		return -1;
	}
	b->len += (size_t)n;
	return 0;
}

/* ascii: also bytes above 0x7e (file content); else UTF-8 passes */
static char shown(unsigned char c, int ascii)
{
	return c < 0x20 || c == 0x7f || (ascii && c > 0x7f) ? '?' : (char)c;
}

void loom_str_clean(char *dst, size_t dstlen, const char *src, size_t max)
{
	size_t o = 0, i = 0;
	if (dstlen == 0)
		return;
	if (max > dstlen - 4)
		max = dstlen > 4 ? dstlen - 4 : 0;
	for (; src[i] && i < max; i++)
		dst[o++] = shown((unsigned char)src[i], 1);
	if (src[i])
		for (int k = 0; k < 3 && o + 1 < dstlen; k++)
			dst[o++] = '.';
	dst[o] = '\0';
}

void loom_log_clean(char *s)
{
	for (; *s; s++)
		*s = shown((unsigned char)*s, 0);
}
