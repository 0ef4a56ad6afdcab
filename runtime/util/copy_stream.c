/* runtime/util/copy_stream.c: a copy whose stores bypass the caches. */
#include "util/util.h"

#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

void loom_copy_stream(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
	char *d = dst;
	const char *s = src;
	size_t head = (size_t)(-(uintptr_t)d & 63);
	if (n < 256 + head) {
		memcpy(d, s, n);
		return;
	}
	/* up to the destination's first whole cache line, with cached stores */
	memcpy(d, s, head);
	d += head, s += head, n -= head;
	for (; n >= 64; d += 64, s += 64, n -= 64) {
		__m128i x0 = _mm_loadu_si128((const __m128i *)s),
			x1 = _mm_loadu_si128((const __m128i *)(s + 16)),
			x2 = _mm_loadu_si128((const __m128i *)(s + 32)),
			x3 = _mm_loadu_si128((const __m128i *)(s + 48));
		_mm_stream_si128((__m128i *)d, x0);
		_mm_stream_si128((__m128i *)(d + 16), x1);
		_mm_stream_si128((__m128i *)(d + 32), x2);
		_mm_stream_si128((__m128i *)(d + 48), x3);
	}
	memcpy(d, s, n);
	/* streaming stores are weakly ordered: they must be visible before
	 * whatever the caller publishes next (a flag, a barrier's post) */
	_mm_sfence();
#else
	memcpy(dst, src, n);
#endif
}
