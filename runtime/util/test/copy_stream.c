/* unit test: loom_copy_stream copies exactly what memcpy would, whatever
 * the alignment of either side and the length (the streaming stores cover
 * whole cache lines; the head and tail around them are copied apart) */
#include "config.h"
#include "util/util.h"
#include "../../../t/tap.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
	size_t lens[] = { 0, 1, 63, 64, 255, 256, 257, 319, 4096, 65536 + 17, 1u << 20 };
	size_t cap = (1u << 20) + 256, i, k;
	unsigned char *src = malloc(cap), *dst = malloc(cap), *want = malloc(cap);
	int bad = 0, cases = 0;
	plan(NO_PLAN);
	if (!src || !dst || !want)
		bail_out("no memory");
	for (i = 0; i < cap; i++)
		src[i] = (unsigned char)(i * 131 + 7);
	for (k = 0; k < sizeof lens / sizeof lens[0]; k++)
		for (size_t so = 0; so < 3; so++)
			for (size_t doff = 0; doff < 70; doff += 23) {
				size_t n = lens[k];
				memset(dst, 0xa5, cap);
				memcpy(want, dst, cap);
				memcpy(want + doff, src + so, n);
				loom_copy_stream(dst + doff, src + so, n);
				cases++;
				if (memcmp(dst, want, cap)) {
					diag("len %zu, source offset %zu, destination offset %zu: differs", n, so, doff);
					bad++;
				}
			}
	ok(bad == 0, "%d copies of 0 B to 1 MiB at every alignment: the bytes memcpy gives, nothing past the end", cases);
	free(src);
	free(dst);
	free(want);
	done_testing();
	return 0;
}
