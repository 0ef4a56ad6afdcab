/* runtime/coll/coll_bcast.c: the flat broadcasts, in place on buf: by
 * binomial tree (small) or pipelined chain (large: each rank forwards a
 * segment while it receives the next). */
#include "coll/coll.h"

#include <string.h>

#define CHAIN_SEG (256u * 1024)

int loom_tree_bcast(struct loom_comm *c, char *buf, size_t bytes, int root, struct loom_opctx *o)
{
	int N = c->size, vr = loom_mod(c->rank - root, N), mask = 1, rc = 0;
	struct loom_xctx x;
	loom_x_begin_o(&x, c, o, o->seq);
	while (mask < N) {
		if (vr & mask) {
			loom_x_recv(&x, loom_mod(vr - mask + root, N), buf, bytes);
			rc = loom_x_wait(&x, -1);
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0 && !rc; mask >>= 1)
		if (vr + mask < N)
			loom_x_send(&x, loom_mod(vr + mask + root, N), buf, bytes);
	if (rc) {
		loom_x_abandon(&x);
		return rc;
	}
	return loom_x_end(&x);
}

int loom_chain_bcast(struct loom_comm *c, char *buf, size_t bytes, int root, struct loom_opctx *o)
{
	int N = c->size, vr = loom_mod(c->rank - root, N), rc = 0;
	int prev = loom_mod(vr - 1 + root, N), next = loom_mod(vr + 1 + root, N);
	size_t off;
	struct loom_xctx x;
	loom_x_begin_o(&x, c, o, o->seq);
	for (off = 0; off < bytes && !rc; off += CHAIN_SEG) {
		size_t l = bytes - off < CHAIN_SEG ? bytes - off : CHAIN_SEG;
		if (vr > 0) {
			int h = loom_x_recv(&x, prev, buf + off, l);
			if (h < 0 || (rc = loom_x_wait(&x, h)))
				break;
		}
		if (vr < N - 1)
			loom_x_send(&x, next, buf + off, l);
	}
	if (rc || x.status) {
		loom_x_abandon(&x);
		return rc ? rc : x.status;
	}
	return loom_x_end(&x);
}
