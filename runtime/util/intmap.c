/* runtime/util/intmap.c: open addressing with linear probing, grown at half
 * full; entries are never removed (a peer's state lives until finalize). */
#include "util/intmap.h"

#include <stdint.h>
#include <stdlib.h>

static size_t slot_of(int key, size_t cap)
{
	uint32_t h = (uint32_t)key * 0x9e3779b1u;  /* Fibonacci hashing */
	return (size_t)(h ^ (h >> 15)) & (cap - 1);
}

void *loom_intmap_get(const struct loom_intmap *m, int key)
{
	size_t i;
	if (!m->cap)
		return NULL;
	for (i = slot_of(key, m->cap); m->keys[i] != -1; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return m->vals[i];
	return NULL;
}

static void insert(int *keys, void **vals, size_t cap, int key, void *val)
{
	size_t i = slot_of(key, cap);
	while (keys[i] != -1 && keys[i] != key)
		i = (i + 1) & (cap - 1);
	keys[i] = key;
	vals[i] = val;
}

int loom_intmap_put(struct loom_intmap *m, int key, void *val)
{
	if (2 * (m->count + 1) > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16, i;
		int *keys = malloc(cap * sizeof *keys);
		void **vals = malloc(cap * sizeof *vals);
		if (!keys || !vals) {
			free(keys);
			free(vals);
			return -1;
		}
		for (i = 0; i < cap; i++)
			keys[i] = -1;
		for (i = 0; i < m->cap; i++)
			if (m->keys[i] != -1)
				insert(keys, vals, cap, m->keys[i], m->vals[i]);
		free(m->keys);
		free(m->vals);
		m->keys = keys;
		m->vals = vals;
		m->cap = cap;
	}
	if (!loom_intmap_get(m, key))
		m->count++;
	insert(m->keys, m->vals, m->cap, key, val);
	return 0;
}

void loom_intmap_each(const struct loom_intmap *m, void (*fn)(void *val, void *arg), void *arg)
{
	size_t i;
	for (i = 0; i < m->cap; i++)
		if (m->keys[i] != -1)
			fn(m->vals[i], arg);
}

void loom_intmap_clear(struct loom_intmap *m)
{
	free(m->keys);
	free(m->vals);
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->count = 0;
}
