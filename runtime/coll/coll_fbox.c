/* runtime/coll/coll_fbox.c: the small collectives of a communicator that
 * lies in one node, through the fast boxes of its shared memory
 * (transport_shm.c): each rank posts its whole contribution in its own
 * box (one cache line for the first 48 bytes), the ranks that need them
 * read the others' boxes and compute the result locally. No ring slots,
 * no system calls while the peers run. Reductions combine the boxes in
 * rank order 0, 1, ..., N-1 on every rank, so results are bit-identical
 * across ranks and reruns. plan.c decides when these apply. The boxes
 * are numbered by their own count of uses (the same on every rank, as
 * every rank makes the same choices), so the direct-read collectives
 * (coll_direct.c) also synchronise through them. */
#include "coll/coll.h"

#include <string.h>

struct fb {
	struct loom_xctx x;
	struct loom_comm *c;
	uint64_t seq;
	uint32_t kind;
	size_t len;        /* what every rank posts (bcast: the root only) */
	int lidx, mismatch;
	const void *got;
};

/* the op's signature in a box, so ranks out of step are told so */
static uint32_t sig(int kind, loom_dtype_t dt, loom_op_t op, int root)
{
	return (uint32_t)kind | (uint32_t)dt << 4 | (uint32_t)op << 8 | (uint32_t)root << 12;
}

static void fb_begin(struct fb *f, struct loom_comm *c, struct loom_opctx *o, uint32_t kind,
		     size_t len)
{
	loom_x_begin_o(&f->x, c, o, o->seq);
	f->c = c;
	f->seq = loom_shm_fbox_next(c->shm);
	f->kind = kind;
	f->len = len;
	f->mismatch = 0;
}

static int writable(void *a)
{
	struct fb *f = a;
	return loom_shm_fbox_writable(f->c->shm, f->seq, f->len, f->lidx, 1);
}

static int posted(void *a)
{
	struct fb *f = a;
	f->got = loom_shm_fbox_peek(f->c->shm, f->lidx, f->seq, f->kind, f->len, &f->mismatch);
	return f->got != NULL || f->mismatch;
}

/* copy my contribution into my box once every peer is done with it, post it */
static int fb_post(struct fb *f, const void *data)
{
	struct loom_comm *c = f->c;
	int i, rc;
	if (!loom_shm_fbox_writable(c->shm, f->seq, f->len, -1, 0))
		for (i = 0; i < c->size; i++) {
			if (i == c->rank)
				continue;
			f->lidx = loom_comm_local_idx(c, i);
			if ((rc = loom_x_wait_shm_space(&f->x, i, writable, f)))
				return rc;
		}
	if (f->len)
		memcpy(loom_shm_fbox_mine(c->shm, f->seq, f->len), data, f->len);
	loom_shm_fbox_post(c->shm, f->seq, f->kind, f->len);
	return LOOM_SUCCESS;
}

/* rank's posted data (mine from my own box) */
static const void *fb_get(struct fb *f, int rank, int *rc)
{
	f->lidx = loom_comm_local_idx(f->c, rank);
	if (rank == f->c->rank)
		return loom_shm_fbox_mine(f->c->shm, f->seq, f->len);
	if ((*rc = loom_x_wait_shm(&f->x, rank, posted, f)))
		return NULL;
	if (f->mismatch) {
		*rc = LOOM_ERR_MISMATCH;
		return NULL;
	}
	return f->got;
}

static int fb_end(struct fb *f, int rc, int saw_all)
{
	if (!rc)
		loom_shm_fbox_done(f->c->shm, f->seq, saw_all);
	loom_x_abandon(&f->x);
	return rc;
}

/* out = data[0] op data[1] op ... op data[N-1], block at byte offset off */
static int fb_reduce_all(struct fb *f, char *out, size_t off, size_t n, loom_dtype_t dt,
			 loom_op_t op)
{
	size_t bytes = n * loom_dtype_size(dt);
	int i, rc = 0;
	for (i = 0; i < f->c->size; i++) {
		const char *d = fb_get(f, i, &rc);
		if (!d)
			return rc;
		if (i == 0)
			memcpy(out, d + off, bytes);
		else
			loom_reduce_local(out, d + off, n, dt, op);
	}
	return LOOM_SUCCESS;
}

int loom_fbox_allreduce(struct loom_comm *c, char *buf, size_t n, loom_dtype_t dt, loom_op_t op,
			struct loom_opctx *o)
{
	struct fb f;
	int rc;
	fb_begin(&f, c, o, sig(LOOM_OP_ALLREDUCE, dt, op, 0), n * loom_dtype_size(dt));
	rc = fb_post(&f, buf);
	if (!rc)
		rc = fb_reduce_all(&f, buf, 0, n, dt, op);
	return fb_end(&f, rc, 1);
}

int loom_fbox_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
		     loom_op_t op, int root, struct loom_opctx *o)
{
	struct fb f;
	int rc;
	fb_begin(&f, c, o, sig(LOOM_OP_REDUCE, dt, op, root), n * loom_dtype_size(dt));
	rc = fb_post(&f, s);
	if (!rc && c->rank == root)
		rc = fb_reduce_all(&f, r, 0, n, dt, op);
	return fb_end(&f, rc, c->rank == root);
}

int loom_fbox_bcast(struct loom_comm *c, char *buf, size_t bytes, int root, struct loom_opctx *o)
{
	struct fb f;
	int rc = 0;
	fb_begin(&f, c, o, sig(LOOM_OP_BCAST, 0, 0, root), bytes);
	if (c->rank == root) {
		rc = fb_post(&f, buf);
	} else {
		const void *d = fb_get(&f, root, &rc);
		if (d && bytes)
			memcpy(buf, d, bytes);
	}
	return fb_end(&f, rc, 0);
}

int loom_fbox_allgather(struct loom_comm *c, const char *s, char *r, size_t bytes,
			struct loom_opctx *o)
{
	struct fb f;
	int rc, i;
	fb_begin(&f, c, o, sig(LOOM_OP_ALLGATHER, 0, 0, 0), bytes);
	rc = fb_post(&f, s);
	for (i = 0; !rc && i < c->size; i++) {
		const void *d = fb_get(&f, i, &rc);
		if (d && bytes)
			memcpy(r + (size_t)i * bytes, d, bytes);
	}
	return fb_end(&f, rc, 1);
}

int loom_fbox_reduce_scatter(struct loom_comm *c, const char *s, char *r, size_t n,
			     loom_dtype_t dt, loom_op_t op, struct loom_opctx *o)
{
	struct fb f;
	size_t bb = n * loom_dtype_size(dt);
	int rc;
	fb_begin(&f, c, o, sig(LOOM_OP_REDUCE_SCATTER, dt, op, 0), (size_t)c->size * bb);
	rc = fb_post(&f, s);
	if (!rc)
		rc = fb_reduce_all(&f, r, (size_t)c->rank * bb, n, dt, op);
	return fb_end(&f, rc, 1);
}

int loom_fbox_alltoall(struct loom_comm *c, const char *s, char *r, size_t bytes,
		       struct loom_opctx *o)
{
	struct fb f;
	int rc, i;
	fb_begin(&f, c, o, sig(LOOM_OP_ALLTOALL, 0, 0, 0), (size_t)c->size * bytes);
	rc = fb_post(&f, s);
	for (i = 0; !rc && i < c->size; i++) {
		const char *d = fb_get(&f, i, &rc);
		if (d && bytes)
			memcpy(r + (size_t)i * bytes, d + (size_t)c->rank * bytes, bytes);
	}
	return fb_end(&f, rc, 1);
}

int loom_fbox_barrier(struct loom_comm *c, struct loom_opctx *o)
{
	struct fb f;
	int rc, i;
	fb_begin(&f, c, o, sig(LOOM_OP_BARRIER, 0, 0, 0), 0);
	rc = fb_post(&f, NULL);
	for (i = 0; !rc && i < c->size; i++)
		fb_get(&f, i, &rc);
	return fb_end(&f, rc, 1);
}
