/* runtime/util/intmap.h: a hash map from non-negative ints (world or
 * communicator ranks) to pointers, for the state a rank keeps only for the
 * few peers it talks to (the TCP engine's peers, point-to-point sequence
 * numbers), so that it grows with those peers and not with the world. */
#ifndef LOOM_UTIL_INTMAP_H
#define LOOM_UTIL_INTMAP_H

#include <stddef.h>

struct loom_intmap {
	size_t cap, count;  /* cap: 0 or a power of two */
	int *keys;          /* -1: empty */
	void **vals;
};

void *loom_intmap_get(const struct loom_intmap *m, int key);
/* set key's value (key >= 0, val not NULL): 0, or -1 without memory */
int loom_intmap_put(struct loom_intmap *m, int key, void *val);
/* every value, for freeing; then loom_intmap_clear */
void loom_intmap_each(const struct loom_intmap *m, void (*fn)(void *val, void *arg), void *arg);
void loom_intmap_clear(struct loom_intmap *m);

#endif
