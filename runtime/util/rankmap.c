/* runtime/util/rankmap.c: choosing the smallest form of a rank map
 * (rankmap.h) and reading the piecewise one. */
#include "util/rankmap.h"

#include <stdlib.h>
#include <string.h>

/* v fits the rule with blocks of blk values, the first one blk - shift
 * long? step: the change after the first block; period: the block at
 * which the first value comes back */
static int try_blocks(struct loom_rankmap *m, int n, const int *v, int blk, int shift)
{
	int first = blk - shift, i;
	m->kind = LOOM_RM_RULE;
	m->base = v[0], m->step = 0, m->blk = 1, m->period = 0, m->shift = 0;
	if (first >= n)  /* one value throughout */
		return 1;
	m->step = v[first] - v[0], m->blk = blk, m->shift = shift;
	for (i = first + blk; i < n; i += blk)
		if (v[i] == v[0]) {
			m->period = (i + shift) / blk;
			break;
		}
	for (i = 0; i < n; i++)  /* checked by the reader itself */
		if (v[i] != loom_rankmap_get(m, i))
			return 0;
	return 1;
}

/* blocks as long as the first run of equal values, or, when the first
 * block is short (a node with fewer ranks first), as the second */
static int try_rule(struct loom_rankmap *m, int n, const int *v)
{
	int r1 = 1, r2 = 1;
	while (r1 < n && v[r1] == v[0])
		r1++;
	if (try_blocks(m, n, v, r1, 0))
		return 1;
	while (r1 + r2 < n && v[r1 + r2] == v[r1])
		r2++;
	return r2 > r1 && try_blocks(m, n, v, r2, r2 - r1);
}

/* greedy affine pieces; how many (stops counting past limit) */
static int count_pieces(int n, const int *v, int *out, int limit)
{
	int i = 0, k = 0;
	while (i < n) {
		int st = i + 1 < n ? v[i + 1] - v[i] : 0, j = i + 1;
		while (j < n && v[j] == v[i] + st * (j - i))
			j++;
		if (k >= limit)
			return k + 1;
		if (out) {
			out[3 * k] = i;
			out[3 * k + 1] = v[i];
			out[3 * k + 2] = st;
		}
		k++;
		i = j;
	}
	return k;
}

int loom_rankmap_set(struct loom_rankmap *m, int n, const int *v)
{
	int np;
	memset(m, 0, sizeof *m);
	m->n = n;
	m->blk = 1;
	if (n <= 0 || try_rule(m, n, v)) {
		m->kind = LOOM_RM_RULE;
		return 0;
	}
	/* pieces only where they are smaller than the array */
	np = count_pieces(n, v, NULL, n / 3);
	if (np <= n / 3 - 1 && (m->pieces = malloc((size_t)np * 3 * sizeof *m->pieces))) {
		count_pieces(n, v, m->pieces, np);
		m->npieces = np;
		m->kind = LOOM_RM_PIECES;
		return 0;
	}
	if (!(m->v = malloc((size_t)n * sizeof *m->v))) {
		m->n = 0;
		m->kind = LOOM_RM_RULE;
		return -1;
	}
	memcpy(m->v, v, (size_t)n * sizeof *v);
	m->kind = LOOM_RM_ARRAY;
	return 0;
}

void loom_rankmap_free(struct loom_rankmap *m)
{
	free(m->pieces);
	free(m->v);
	memset(m, 0, sizeof *m);
}

int loom_rankmap_piece_get(const struct loom_rankmap *m, int i)
{
	int lo = 0, hi = m->npieces - 1;
	const int *p;
	while (lo < hi) {  /* the last piece starting at or before i */
		int mid = (lo + hi + 1) / 2;
		if (m->pieces[3 * mid] <= i)
			lo = mid;
		else
			hi = mid - 1;
	}
	p = m->pieces + 3 * lo;
	return p[1] + p[2] * (i - p[0]);
}

int loom_rankmap_find(const struct loom_rankmap *m, int value)
{
	int lo = 0, hi = m->n - 1;
	if (m->kind == LOOM_RM_RULE && !m->period && m->blk == 1 && m->step > 0) {
		int d = value - m->base;
		if (d < 0 || d % m->step || d / m->step >= m->n)
			return -1;
		return d / m->step;
	}
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2, x = loom_rankmap_get(m, mid);
		if (x == value)
			return mid;
		if (x < value)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

size_t loom_rankmap_bytes(const struct loom_rankmap *m)
{
	if (m->kind == LOOM_RM_ARRAY)
		return (size_t)m->n * sizeof *m->v;
	if (m->kind == LOOM_RM_PIECES)
		return (size_t)m->npieces * 3 * sizeof *m->pieces;
	return 0;
}
