/* runtime/coll/coll_direct.c: the large collectives of a communicator that
 * lies in one node, by reading the peers' buffers directly
 * (process_vm_readv, transport_shm.c) instead of copying every byte into
 * ring slots and out again. Each rank reduces its own block of the result
 * straight from its peers' inputs, and copies the blocks it lacks from the
 * rank that holds them. The ranks meet through the fast boxes: buffer
 * addresses posted (every rank inside the operation), blocks ready, and a
 * last barrier so that no buffer is given back to its caller while a peer
 * still reads it. The first use asks every rank whether it can read each
 * peer (the kernel may forbid it: Yama's ptrace_scope, a non-dumpable
 * process) and so may the user (LOOM_DIRECT_READS=0); if any cannot, the
 * communicator keeps its rings for good (the callers' fallback). Block r is reduced by rank r alone, in the order
 * r, r+1, ..., r-1, and copied from there: bit-identical everywhere and
 * on every rerun. */
#include "coll/coll.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (256u * 1024)  /* a peer's piece read at once: stays in cache */

struct post {
	uint64_t addr;
	uint64_t out;   /* allreduce: where the result goes */
	int32_t ok;
	int32_t pad;
};

/* every rank's post (addresses, flag), through the fast boxes */
static int meet2(struct loom_comm *c, struct loom_opctx *o, const void *addr, const void *out,
		 int ok, struct post *all)
{
	struct post mine;
	memset(&mine, 0, sizeof mine);
	mine.addr = (uint64_t)(uintptr_t)addr;
	mine.out = (uint64_t)(uintptr_t)out;
	mine.ok = ok;
	return loom_fbox_allgather(c, (const char *)&mine, (char *)all, sizeof mine, o);
}

static int meet(struct loom_comm *c, struct loom_opctx *o, const void *addr, int ok,
		struct post *all)
{
	return meet2(c, o, addr, NULL, ok, all);
}

/* A peer read or write that failed. When the peer's buffer is gone,
 * the peer left the operation, which it does only on a failure (a rank
 * lost elsewhere, an abort, a timeout) that reaches this rank too, a
 * moment later: report that cause, as the rings would, not the failed
 * system call (t3004, peer-lost). */
static int peer_io_failed(struct loom_comm *c, struct loom_opctx *o, int peer, int rc,
			  const char *what)
{
	if (rc == LOOM_ERR_SYSTEM) {
		double until = loom_now() + 2.0;
		int f;
		while (!(f = loom_x_comm_failed(c)) && loom_now() < until)
			usleep(1000);
		if (f)
			return f;
	}
	LOOM_ERR("comm %s: %s seq %llu: %s rank %d's buffer failed: %s", c->name, o->name,
		 (unsigned long long)o->seq, what, peer, loom_strerror(rc));
	return rc;
}

static int read_peer(struct loom_comm *c, struct loom_opctx *o, int peer, void *dst,
		     uint64_t src, size_t len)
{
	int rc = loom_shm_peer_read(c->shm, loom_comm_local_idx(c, peer), dst, src, len);
	return rc ? peer_io_failed(c, o, peer, rc, "reading") : LOOM_SUCCESS;
}

static int write_peer(struct loom_comm *c, struct loom_opctx *o, int peer, uint64_t dst,
		      const void *src, size_t len)
{
	int rc = loom_shm_peer_write(c->shm, loom_comm_local_idx(c, peer), dst, src, len);
	return rc ? peer_io_failed(c, o, peer, rc, "writing into") : LOOM_SUCCESS;
}

/* Can every rank read every peer here? Asked once per communicator (all
 * ranks at the same operation, as they all plan alike). 1 yes, 0 no, <0
 * an error. */
static int usable(struct loom_comm *c, struct loom_opctx *o, struct post *all)
{
	int *direct = loom_shm_direct(c->shm), ok = loom_shm_direct_allowed(), i, rc;
	char probe = 1, byte;
	if (*direct)
		return *direct > 0;
	if ((rc = meet(c, o, &probe, 1, all)))
		return rc;
	for (i = 0; ok && i < c->size; i++)
		if (i != c->rank &&
		    loom_shm_peer_read(c->shm, loom_comm_local_idx(c, i), &byte, all[i].addr, 1) != LOOM_SUCCESS)
			ok = 0;
	if ((rc = meet(c, o, NULL, ok, all)))  /* probe stays alive until here */
		return rc;
	for (i = 0; i < c->size; i++)
		ok &= all[i].ok;
	if (!ok)
		LOOM_INFO("comm %s: no direct reads of the peers' memory (LOOM_DIRECT_READS=0, or the kernel refuses process_vm_readv): large collectives in the node keep the shared-memory rings",
			  c->name);
	*direct = ok ? 1 : -1;
	return ok;
}

/* chunk k (0 or 1) of the communicator's kept scratch; NULL: no memory.
 * One operation at a time runs on a communicator, so one is enough. */
static char *scratch(struct loom_comm *c, int k)
{
	struct loom_coll_state *st = loom_coll_state_of(c);
	if (!st)
		return NULL;
	if (!st->direct_tmp)
		st->direct_tmp = malloc(2 * (size_t)CHUNK);
	return st->direct_tmp ? st->direct_tmp + (size_t)k * CHUNK : NULL;
}

/* out[0..cnt) = the peers' inputs at element off reduced in the order
 * me, me+1, ..., me-1 (mine is in + off; out may be it). to >= 0: out is
 * a CHUNK of scratch, and each reduced chunk is written to rank to's
 * memory at to_addr instead (a reduce's block into the root's buffer).
 * to == TO_ALL: each reduced chunk is also written, while in cache, into
 * every peer's result (its post's out) at the same offset (allreduce). */
#define TO_ALL (-2)
static int reduce_mine_to(struct loom_comm *c, struct loom_opctx *o, const struct post *all,
			  const char *in, char *out, size_t off, size_t cnt, loom_dtype_t dt,
			  loom_op_t op, int to, uint64_t to_addr)
{
	size_t es = loom_dtype_size(dt), step = CHUNK / es, d;
	int N = c->size, k, rc = 0;
	char *tmp = scratch(c, 0);
	if (!tmp)
		return LOOM_ERR_NOMEM;
	for (d = 0; d < cnt && !rc; d += step) {
		size_t m = cnt - d < step ? cnt - d : step;
		char *o_ = to >= 0 ? out : out + d * es;
		/* chunk by chunk: the peers' parts are added while it is in cache;
		 * the first one with mine, into out (no copy of mine first) */
		for (k = 1; k < N && !rc; k++) {
			int p = (c->rank + k) % N;
			rc = read_peer(c, o, p, tmp, all[p].addr + (off + d) * es, m * es);
			if (!rc)
				loom_reduce_into(o_, k == 1 ? in + (off + d) * es : o_, tmp, m, dt, op);
		}
		if (!rc && to >= 0)
			rc = write_peer(c, o, to, to_addr + d * es, o_, m * es);
		for (k = 1; k < N && !rc && to == TO_ALL; k++) {
			int p = (c->rank + k) % N;
			rc = write_peer(c, o, p, all[p].out + (off + d) * es, o_, m * es);
		}
	}
	return rc;
}

static int reduce_mine(struct loom_comm *c, struct loom_opctx *o, const struct post *all,
		       const char *in, char *out, size_t off, size_t cnt, loom_dtype_t dt,
		       loom_op_t op)
{
	return reduce_mine_to(c, o, all, in, out, off, cnt, dt, op, -1, 0);
}

/* the pieces the others hold: piece p (bytes at boff(p), blen(p)) from
 * rank p's posted address + soff(p), into dst + boff(p) */
#define FETCH_ALL(c, o, all, dst, boff, blen, soff, rc)                                   \
	do {                                                                              \
		int k_;                                                                   \
		for (k_ = 1; k_ < (c)->size && !(rc); k_++) {                             \
			int p = ((c)->rank + k_) % (c)->size;                             \
			(rc) = read_peer((c), (o), p, (dst) + (boff), (all)[p].addr + (soff), \
					 (blen));                                         \
		}                                                                         \
	} while (0)

#define BEGIN(c, o, all, rc, fallback)                                       \
	do {                                                                 \
		int u_;                                                      \
		(all) = malloc((size_t)(c)->size * sizeof *(all));           \
		if (!(all))                                                  \
			return LOOM_ERR_NOMEM;                               \
		u_ = usable((c), (o), (all));                                \
		if (u_ <= 0) {                                               \
			free(all);                                           \
			*(fallback) = u_ == 0;                               \
			return u_ < 0 ? u_ : LOOM_SUCCESS;                   \
		}                                                            \
		*(fallback) = 0;                                             \
		(rc) = 0;                                                    \
	} while (0)

int loom_direct_allreduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
			  loom_op_t op, struct loom_opctx *o, int *fallback)
{
	size_t es = loom_dtype_size(dt);
	struct post *all;
	int rc, N = c->size;
	BEGIN(c, o, all, rc, fallback);
	/* Out of place, the inputs are read where they are (no copy of s
	 * into r first: a read and a write of every byte more). Each reduced
	 * chunk goes from cache into every peer's result at once, rather
	 * than each peer reading the finished block back from memory
	 * afterwards (one more read of every result byte). In place is safe too: the block written into a peer's
	 * buffer is the one only this rank reads there, chunk by chunk after
	 * reading it. The barrier says every write has landed. */
	if (!(rc = meet2(c, o, s, r, 1, all)))
		rc = reduce_mine_to(c, o, all, s, r + loom_blk_off(n, N, c->rank) * es,
				    loom_blk_off(n, N, c->rank), loom_blk_cnt(n, N, c->rank), dt, op,
				    TO_ALL, 0);
	if (!rc)
		rc = loom_fbox_barrier(c, o);
	free(all);
	return rc;
}

/* the halves of allreduce, for the lanes (coll_allreduce.c): afterwards
 * rank r holds block r (loom_blk_*) of the node's reduction in buf, read
 * from the peers' inputs at s (s may be buf: in place; out of place, buf's
 * other blocks are left as they were, for the allgather to fill: no copy of
 * s into buf first); then every rank gets every block from its holder */
int loom_direct_rs(struct loom_comm *c, const char *s, char *buf, size_t n, loom_dtype_t dt,
		   loom_op_t op, struct loom_opctx *o, int *fallback)
{
	size_t es = loom_dtype_size(dt);
	struct post *all;
	int rc, N = c->size;
	BEGIN(c, o, all, rc, fallback);
	/* no barrier after: nobody writes a peer's block before the allgather
	 * meets, and the inputs are the callers' until their operation ends */
	if (!(rc = meet(c, o, s, 1, all)))
		rc = reduce_mine(c, o, all, s, buf + loom_blk_off(n, N, c->rank) * es,
				 loom_blk_off(n, N, c->rank), loom_blk_cnt(n, N, c->rank), dt, op);
	free(all);
	return rc;
}

int loom_direct_ag(struct loom_comm *c, char *buf, size_t n, size_t es, struct loom_opctx *o,
		   int *fallback)
{
	struct post *all;
	int rc, N = c->size;
	BEGIN(c, o, all, rc, fallback);
	if (!(rc = meet(c, o, buf, 1, all)))
		FETCH_ALL(c, o, all, buf, loom_blk_off(n, N, p) * es, loom_blk_cnt(n, N, p) * es,
			  loom_blk_off(n, N, p) * es, rc);
	if (!rc)
		rc = loom_fbox_barrier(c, o);
	free(all);
	return rc;
}

int loom_direct_reduce_scatter(struct loom_comm *c, const char *s, char *r, size_t n,
			       loom_dtype_t dt, loom_op_t op, struct loom_opctx *o, int *fallback)
{
	struct post *all;
	int rc;
	BEGIN(c, o, all, rc, fallback);
	if (!(rc = meet(c, o, s, 1, all)))
		rc = reduce_mine(c, o, all, s, r, (size_t)c->rank * n, n, dt, op);
	if (!rc)
		rc = loom_fbox_barrier(c, o);
	free(all);
	return rc;
}

int loom_direct_reduce(struct loom_comm *c, const char *s, char *r, size_t n, loom_dtype_t dt,
		       loom_op_t op, int root, struct loom_opctx *o, int *fallback)
{
	size_t es = loom_dtype_size(dt);
	struct post *all;
	int rc, N = c->size, me = c->rank;
	size_t off = loom_blk_off(n, N, me), cnt = loom_blk_cnt(n, N, me);
	uint64_t root_r = 0;
	char *chunk;
	BEGIN(c, o, all, rc, fallback);
	chunk = me == root ? NULL : scratch(c, 1);
	/* One meeting: every input's address, where the root's result goes,
	 * and whether each rank has its scratch (all give up alike). Every
	 * rank reduces its block; the others write theirs into the root's
	 * buffer chunk by chunk (no copy of the block, no gather after). A
	 * root reducing in place is safe: block j of its buffer is read and
	 * then written by rank j alone, chunk by chunk. The last barrier says
	 * every write has landed. */
	if (!(rc = meet2(c, o, s, me == root ? r : NULL, me == root || chunk, all))) {
		root_r = all[root].out;
		for (int i = 0; i < N; i++)
			if (!all[i].ok)
				rc = LOOM_ERR_NOMEM;
	}
	if (!rc)
		rc = me == root ? reduce_mine(c, o, all, s, r + off * es, off, cnt, dt, op)
				: reduce_mine_to(c, o, all, s, chunk, off, cnt, dt, op, root,
						 root_r + off * es);
	if (!rc)
		rc = loom_fbox_barrier(c, o);
	free(all);
	return rc;
}

/* src: the root's source when it is not buf and does not overlap it
 * (else NULL): the readers read it there while the root copies it into
 * its own buf, at once rather than one after the other (the root's copy
 * takes about as long as a peer's read) */
int loom_direct_bcast(struct loom_comm *c, const char *src, char *buf, size_t bytes, int root,
		      struct loom_opctx *o, int *fallback)
{
	struct post *all;
	int rc, me = c->rank;
	BEGIN(c, o, all, rc, fallback);
	if (!(rc = meet(c, o, me == root && src ? src : buf, 1, all))) {
		if (me != root)
			rc = read_peer(c, o, root, buf, all[root].addr, bytes);
		else if (src)
			memcpy(buf, src, bytes);
	}
	if (!rc)
		rc = loom_fbox_barrier(c, o);
	free(all);
	return rc;
}

/* src: this rank's part when it is not yet in place in r (else NULL):
 * the peers read it there while this rank copies it into r */
int loom_direct_allgather(struct loom_comm *c, const char *src, char *r, size_t bytes,
			  struct loom_opctx *o, int *fallback)
{
	struct post *all;
	int rc, k;
	BEGIN(c, o, all, rc, fallback);
	/* out: where my part is to be read (0: in r, at my place) */
	if (!(rc = meet2(c, o, r, src, 1, all))) {
		if (src)
			memcpy(r + (size_t)c->rank * bytes, src, bytes);
		for (k = 1; k < c->size && !rc; k++) {
			int p = (c->rank + k) % c->size;
			uint64_t from = all[p].out ? all[p].out : all[p].addr + (size_t)p * bytes;
			rc = read_peer(c, o, p, r + (size_t)p * bytes, from, bytes);
		}
	}
	if (!rc)
		rc = loom_fbox_barrier(c, o);
	free(all);
	return rc;
}

/* s != r: peers read my send buffer while I fill my receive buffer */
int loom_direct_alltoall(struct loom_comm *c, const char *s, char *r, size_t bytes,
			 struct loom_opctx *o, int *fallback)
{
	struct post *all;
	int rc;
	BEGIN(c, o, all, rc, fallback);
	if (!(rc = meet(c, o, s, 1, all)))
		FETCH_ALL(c, o, all, r, (size_t)p * bytes, bytes, (size_t)c->rank * bytes, rc);
	if (!rc)
		rc = loom_fbox_barrier(c, o);
	free(all);
	return rc;
}
