/* runtime/coll/coll_staged.c: large allreduce, allgather and alltoall
 * inside one node through the shared-memory ring slots, used in place (no
 * copy into a message and out again), chunk by chunk, every rank at once,
 * the results written with streaming stores (LOOM_ALG_STAGED, plan.c).
 *
 * Allreduce:
 * Rank r reduces block r (loom_blk_*) of the result. In round j each rank
 *   a. copies chunk j of its input's block p into a slot to each peer p;
 *   b. reduces chunk j of its own block from its input and the peers'
 *      slots, in the order r, r+1, ..., r-1, into a slot to peer r+1;
 *   c. posts that slot, copies it to the other peers' slots and into its
 *      own result;
 *   d. copies each peer's reduced chunk j from its slot into its result.
 * Each direction's ring thus carries input j, result j, input j+1, ...;
 * every rank takes them in that order, and a rank waits only for a
 * message of its round or for a slot a peer of the same round or later
 * frees, so no cycle of waits can form. Block r is reduced by rank r
 * alone in a fixed order: results are bit-identical on every rank.
 *
 * Against direct reads (coll_direct.c) every byte here is moved by user
 * code that the hardware prefetches, with no page pinning in the kernel,
 * and a result leaves cache once, for the rank whose result it is. With 2
 * ranks and 64 MiB, memory traffic is what bounds it: each rank's result
 * goes out with streaming stores, which save the read of every line
 * before it is overwritten (docs/algorithms.md has the figures).
 *
 * In place (s == r), every result line this rank writes in a round is
 * one of its input lines it read in that round (a or b), still in its
 * cache and owned: there a cached store reads nothing either, and it
 * leaves the line in cache, where a streaming store would evict it and
 * send it to memory, to be read back from there by the caller's next use.
 *
 * Where the ranks' cores share no cache (near.c decides), every slot is
 * written with streaming stores too, and b reduces into a scratch chunk
 * of this core's own, streamed out in c: the reader then takes each line
 * from memory rather than from a far core's cache. */
#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>

struct stage {
	struct loom_xctx x;
	struct loom_comm *c;
	uint32_t tag;
	int lidx, rc;
	int stream;  /* the cores are far apart: write every slot past the caches */
	size_t len;
	void *slot;
};

static int slot_free(void *a)
{
	struct stage *g = a;
	g->slot = loom_shm_slot_to(g->c->shm, g->lidx, &g->rc);
	return g->slot || g->rc;
}

static int slot_full(void *a)
{
	struct stage *g = a;
	g->slot = (void *)loom_shm_slot_from(g->c->shm, g->lidx, g->tag, g->len, &g->rc);
	return g->slot || g->rc;
}

/* the slot for the next message to rank p, or to take the next one
 * from p (len bytes: checked): waits, NULL with *rc on failure */
static void *slot(struct stage *g, int p, int from, size_t len, int *rc)
{
	int (*ready)(void *) = from ? slot_full : slot_free;
	g->lidx = loom_comm_local_idx(g->c, p);
	g->len = len;
	g->rc = 0;
	if (!ready(g) && (*rc = loom_x_wait_shm(&g->x, p, ready, g)))
		return NULL;
	*rc = g->rc;
	return *rc ? NULL : g->slot;
}

static void stage_begin(struct stage *g, struct loom_comm *c, struct loom_opctx *o)
{
	memset(g, 0, sizeof *g);
	g->c = c;
	g->tag = loom_x_shm_tag(o->seq);
	g->stream = c->coll && c->coll->near_far;  /* near.c set it, asked first */
	loom_x_begin_o(&g->x, c, o, o->seq);
}

/* into a slot: the peer reads it from this core's cache when the two
 * share one, from memory when they are far apart (near.c), since a
 * line taken from a far core's cache costs several times one from
 * memory (docs/algorithms.md) */
static void put(const struct stage *g, void *to, const void *from, size_t len)
{
	if (g->stream)
		loom_copy_stream(to, from, len);
	else
		memcpy(to, from, len);
}

static void post(struct stage *g, int p, size_t len)
{
	loom_shm_slot_post(g->c->shm, loom_comm_local_idx(g->c, p), g->tag, len);
}

static void release(struct stage *g, int p)
{
	loom_shm_slot_release(g->c->shm, loom_comm_local_idx(g->c, p));
}

/* a slot's worth of this core's own, kept with the communicator */
static char *stage_tmp(struct loom_comm *c)
{
	struct loom_coll_state *st = loom_coll_state_of(c);
	if (!st)
		return NULL;
	if (!st->stage_tmp)
		st->stage_tmp = aligned_alloc(64, LOOM_SHM_SLOT_BYTES);
	return st->stage_tmp;
}

/* into this rank's result: streamed past the caches out of place, where
 * a cached store would first read the line; cached in place, where the
 * line is in cache already (read from s this round) */
static void put_result(int in_place, void *to, const void *from, size_t len)
{
	if (in_place)
		memcpy(to, from, len);
	else
		loom_copy_stream(to, from, len);
}

/* elements of chunk j of block b (0 past its end) */
static size_t chunk_cnt(size_t n, int N, int b, size_t j, size_t step)
{
	size_t cnt = loom_blk_cnt(n, N, b);
	return j * step >= cnt ? 0 : cnt - j * step < step ? cnt - j * step : step;
}

int loom_staged_allreduce(struct loom_comm *c, const char *s, char *r, size_t n,
			  loom_dtype_t dt, loom_op_t op, struct loom_opctx *o)
{
	size_t es = loom_dtype_size(dt), step = LOOM_SHM_SLOT_BYTES / es, j, nch;
	int N = c->size, me = c->rank, k, rc = 0;
	struct stage g;
	char *tmp = NULL;
	stage_begin(&g, c, o);
	/* no scratch: cached stores, slower far apart but the same bytes,
	 * and the peers read the slots alike either way */
	if (g.stream && !(tmp = stage_tmp(c)))
		g.stream = 0;
	nch = (loom_blk_cnt(n, N, 0) + step - 1) / step;  /* block 0 is the largest */
	for (j = 0; j < nch && !rc; j++) {
		size_t m = chunk_cnt(n, N, me, j, step), at = loom_blk_off(n, N, me) + j * step;
		char *acc, *to;
		/* a. my input for each peer's block */
		for (k = 1; k < N && !rc; k++) {
			int p = (me + k) % N;
			size_t mp = chunk_cnt(n, N, p, j, step);
			if ((to = slot(&g, p, 0, 0, &rc))) {
				put(&g, to, s + (loom_blk_off(n, N, p) + j * step) * es, mp * es);
				post(&g, p, mp * es);
			}
		}
		/* b. my block, reduced into the slot to the next rank; far
		 * apart, into this core's scratch first, streamed out in c */
		if (rc)
			break;
		acc = g.stream ? tmp : slot(&g, (me + 1) % N, 0, 0, &rc);
		if (!acc)
			break;
		for (k = 1; k < N && !rc; k++) {
			int p = (me + k) % N;
			const char *in = slot(&g, p, 1, m * es, &rc);
			if (in) {
				loom_reduce_into(acc, k == 1 ? s + at * es : acc, in, m, dt, op);
				release(&g, p);
			}
		}
		if (rc)
			break;
		/* c. to every peer and into my result; the posted slot is only
		 * read by its peer, and written again by me alone */
		if (g.stream) {
			if (!(to = slot(&g, (me + 1) % N, 0, 0, &rc)))
				break;
			loom_copy_stream(to, acc, m * es);
		}
		post(&g, (me + 1) % N, m * es);
		for (k = 2; k < N && !rc; k++) {
			int p = (me + k) % N;
			if ((to = slot(&g, p, 0, 0, &rc))) {
				put(&g, to, acc, m * es);
				post(&g, p, m * es);
			}
		}
		put_result(s == r, r + at * es, acc, m * es);
		/* d. the peers' reduced chunks */
		for (k = 1; k < N && !rc; k++) {
			int p = (me + k) % N;
			size_t mp = chunk_cnt(n, N, p, j, step);
			const char *in = slot(&g, p, 1, mp * es, &rc);
			if (in) {
				put_result(s == r, r + (loom_blk_off(n, N, p) + j * step) * es, in,
					   mp * es);
				release(&g, p);
			}
		}
	}
	loom_x_abandon(&g.x);
	return rc;
}

/* Each rank sends piece p (bytes at s + p * stride) to every peer p, and
 * the piece from peer p lands at r + p * bytes; its own piece (s + me *
 * stride) is copied to r + me * bytes unless already there. Round j moves
 * chunk j of every piece: into a slot to each peer, then each peer's out
 * of its slot, so each ring carries chunk 0, 1, ... in order and a rank
 * waits only for a peer's chunk of its round or a slot a peer frees. */
static int staged_exchange(struct loom_comm *c, const char *s, size_t stride, char *r,
			   size_t bytes, struct loom_opctx *o)
{
	size_t step = LOOM_SHM_SLOT_BYTES, j, nch = (bytes + step - 1) / step;
	int N = c->size, me = c->rank, k, rc = 0;
	const char *mine = s + (size_t)me * stride;
	char *at = r + (size_t)me * bytes;
	struct stage g;
	stage_begin(&g, c, o);
	for (j = 0; j < nch && !rc; j++) {
		size_t off = j * step, len = bytes - off < step ? bytes - off : step;
		char *to;
		for (k = 1; k < N && !rc; k++) {
			int p = (me + k) % N;
			if ((to = slot(&g, p, 0, 0, &rc))) {
				put(&g, to, s + (size_t)p * stride + off, len);
				post(&g, p, len);
			}
		}
		if (!rc && mine != at)
			loom_copy_stream(at + off, mine + off, len);
		for (k = 1; k < N && !rc; k++) {
			int p = (me + N - k) % N;
			const char *in = slot(&g, p, 1, len, &rc);
			if (in) {
				loom_copy_stream(r + (size_t)p * bytes + off, in, len);
				release(&g, p);
			}
		}
	}
	loom_x_abandon(&g.x);
	return rc;
}

int loom_staged_allgather(struct loom_comm *c, const char *mine, char *r, size_t bytes,
			  struct loom_opctx *o)
{
	/* every peer gets the same piece: stride 0 from mine, which the
	 * exchange then reads as its own piece too */
	return staged_exchange(c, mine, 0, r, bytes, o);
}

int loom_staged_alltoall(struct loom_comm *c, const char *s, char *r, size_t bytes,
			 struct loom_opctx *o)
{
	return staged_exchange(c, s, bytes, r, bytes, o);
}

/* A reduce of what the root can take in one slot from each peer (plan.c):
 * every other rank copies its input into a slot to the root and returns
 * at once, as an eager send would; the root reduces them straight from the
 * slots into its result, in the order root, root+1, ..., root-1. No
 * meeting, no system call, no barrier at the end. */
int loom_slots_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
		      loom_op_t op, int root, struct loom_opctx *o)
{
	size_t bytes = n * loom_dtype_size(dt);
	int N = c->size, k, rc = 0;
	struct stage g;
	char *to;
	stage_begin(&g, c, o);
	if (c->rank != root) {
		if ((to = slot(&g, root, 0, 0, &rc))) {
			memcpy(to, s, bytes);
			post(&g, root, bytes);
		}
	} else {
		for (k = 1; k < N && !rc; k++) {
			int p = (root + k) % N;
			const char *in = slot(&g, p, 1, bytes, &rc);
			if (in) {
				loom_reduce_into(r, k == 1 ? s : r, in, n, dt, op);
				release(&g, p);
			}
		}
	}
	loom_x_abandon(&g.x);
	return rc;
}
