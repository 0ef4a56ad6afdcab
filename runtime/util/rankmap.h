/* runtime/util/rankmap.h: a map from 0..n-1 to integers (a communicator's
 * rank -> world rank, rank -> node position, a node's members, the world's
 * rank -> node), kept as a rule where the values follow one. The world and
 * the regular communicators (a node's members, the node leaders, the lanes,
 * splits by r % k or r / k, block and cyclic placements) then cost a few
 * words, not 4 bytes a rank (docs/scale.md "Memory per process"):
 *
 *   rule:   v(i) = base + step * (((i + shift) / blk) % period)
 *           (period 0: no wrap; shift: a short first block)
 *   pieces: affine pieces v(i) = val + step * (i - start), found left to
 *           right (uneven blocks, a split that keeps a few ranges)
 *   array:  one int each, when neither is smaller. */
#ifndef LOOM_COMM_RANKMAP_H
#define LOOM_COMM_RANKMAP_H

#include <stddef.h>

enum { LOOM_RM_RULE = 0, LOOM_RM_PIECES, LOOM_RM_ARRAY };

struct loom_rankmap {
	int n, kind;
	int base, step, blk, period, shift;  /* rule */
	int npieces;
	int *pieces;                  /* 3 ints a piece: start, value, step */
	int *v;                       /* array */
};

/* Keep the n values of v (read, not kept) in the smallest of the three
 * forms. 0, or -1 without memory (m is then empty). */
int loom_rankmap_set(struct loom_rankmap *m, int n, const int *v);
void loom_rankmap_free(struct loom_rankmap *m);
int loom_rankmap_piece_get(const struct loom_rankmap *m, int i);
/* Where value sits in a map whose values increase with i; -1: nowhere */
int loom_rankmap_find(const struct loom_rankmap *m, int value);
/* heap bytes the map holds (its own struct not counted) */
size_t loom_rankmap_bytes(const struct loom_rankmap *m);

static inline int loom_rankmap_get(const struct loom_rankmap *m, int i)
{
	if (m->kind == LOOM_RM_RULE) {
		int q = m->blk == 1 ? i : (i + m->shift) / m->blk;
		if (m->period)
			q %= m->period;
		return m->base + m->step * q;
	}
	if (m->kind == LOOM_RM_ARRAY)
		return m->v[i];
	return loom_rankmap_piece_get(m, i);
}

#endif
