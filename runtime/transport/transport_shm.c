/* runtime/transport/transport_shm.c: the shared-memory transport between the ranks
 * of one communicator on one node. One POSIX shm segment per communicator
 * and node; in it a single-producer/single-consumer ring of NSLOT slots
 * for each ordered pair of local ranks, and one bell (futex word) per
 * local rank. A sender copies a chunk into a free slot and rings the
 * receiver's bell; a receiver copies the chunk out, or reduces straight
 * from the slot into its buffer (no extra copy), frees the slot and rings
 * the sender's bell. Both ranks of a ring step work at once, so both cores
 * reduce. Waiting is done by the caller (xfer.c): spin briefly, then
 * sleep on the bell.
 *
 * The segment name holds the world's nonce, the communicator context and
 * the node, so jobs, communicators and (on one test host) fake nodes never
 * meet; it is unlinked as soon as every local rank has mapped it. */
#include "comm/comm.h"  /* the world and communicator tables, read as data */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NSLOT 16
#define SLOT (64u * 1024)
#define CL 64

struct slot_hdr { uint32_t tag, len; };

struct ring {
	_Atomic uint64_t head;
	char pad0[CL - 8];
	_Atomic uint64_t tail;
	char pad1[CL - 8];
	struct slot_hdr sh[NSLOT];
	char pad2[CL - (NSLOT * 8) % CL];
	char data[NSLOT][SLOT];
};

struct slot_bell {
	struct loom_bell bell;
	int32_t pid;
	char pad[CL - sizeof(struct loom_bell) - 4];
};

struct seg_hdr {
	uint64_t magic;
	_Atomic uint32_t attached;
	char pad[CL - 12];
};

struct loom_shm {
	void *base;
	size_t size;
	int nlocal;
	char name[96];
	struct seg_hdr *hdr;
	struct slot_bell *bells;
	struct ring *rings;
};

static struct ring *ring_of(struct loom_shm *s, int from, int to)
{
	return &s->rings[from * s->nlocal + to];
}

int loom_shm_attach(struct loom_comm *c)
{
	struct loom_shm *s = calloc(1, sizeof *s);
	int fd, nl = c->local_size;
	uint32_t n;
	if (!s)
		return LOOM_ERR_NOMEM;
	s->nlocal = nl;
	s->size = sizeof(struct seg_hdr) + (size_t)nl * sizeof(struct slot_bell) +
		  (size_t)nl * (size_t)nl * sizeof(struct ring);
	snprintf(s->name, sizeof s->name, "/loom-%016llx-%016llx-%d",
		 (unsigned long long)c->w->nonce, (unsigned long long)c->ctx,
		 c->w->node_of[c->w->rank]);
	fd = shm_open(s->name, O_CREAT | O_RDWR, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)s->size) != 0) {
		LOOM_ERR("shared memory %s (%zu bytes): %s; LOOM_TRANSPORT=tcp avoids it",
			 s->name, s->size, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(s);
		return LOOM_ERR_SYSTEM;
	}
	s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s->base == MAP_FAILED) {
		LOOM_ERR("mmap of %s: %s", s->name, strerror(errno));
		free(s);
		return LOOM_ERR_SYSTEM;
	}
	s->hdr = s->base;
	s->bells = (struct slot_bell *)(s->hdr + 1);
	s->rings = (struct ring *)(s->bells + nl);
	s->bells[c->local_rank].pid = (int32_t)getpid();
	n = atomic_fetch_add(&s->hdr->attached, 1) + 1;
	if (n == (uint32_t)nl)
		shm_unlink(s->name);
	c->shm = s;
	LOOM_TRACE("comm %s: shm segment %s, %d local ranks", c->name, s->name, nl);
	return LOOM_SUCCESS;
}

void loom_shm_detach(struct loom_comm *c)
{
	struct loom_shm *s = c->shm;
	if (!s)
		return;
	shm_unlink(s->name); /* in case a rank never came: ENOENT otherwise */
	munmap(s->base, s->size);
	free(s);
	c->shm = NULL;
}

struct loom_bell *loom_shm_bell(struct loom_comm *c)
{
	return &c->shm->bells[c->local_rank].bell;
}

int loom_shm_peer_pid(struct loom_comm *c, int local_idx)
{
	return c->shm ? c->shm->bells[local_idx].pid : 0;
}

int loom_shm_progress(struct loom_comm *c, struct loom_xreq *x, uint32_t tag)
{
	struct loom_shm *s = c->shm;
	int me = c->local_rank, pl = c->local_idx[x->peer], moved = 0;
	if (x->kind == XSEND) {
		struct ring *r = ring_of(s, me, pl);
		while (!(x->segdone > 0 && x->off == x->len)) {
			uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
			uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
			size_t n = x->len - x->off;
			unsigned k;
			if (head - tail >= NSLOT)
				break;
			k = (unsigned)(head % NSLOT);
			if (n > SLOT)
				n = SLOT;
			if (n)
				memcpy(r->data[k], x->buf + x->off, n);
			r->sh[k].tag = tag;
			r->sh[k].len = (uint32_t)n;
			atomic_store_explicit(&r->head, head + 1, memory_order_release);
			loom_bell_ring(&s->bells[pl].bell);
			x->off += n;
			x->segdone++;
			moved = 1;
		}
	} else {
		struct ring *r = ring_of(s, pl, me);
		size_t es = x->kind == XRECV_REDUCE ? loom_dtype_size(x->dt) : 1;
		while (!(x->segdone > 0 && x->off == x->len)) {
			uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
			uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
			size_t n = x->len - x->off;
			unsigned k;
			if (tail == head)
				break;
			k = (unsigned)(tail % NSLOT);
			if (n > SLOT)
				n = SLOT;
			if (r->sh[k].tag != tag || r->sh[k].len != n) {
				LOOM_ERR("comm %s: rank %d sent %u bytes of operation tag %u where %zu bytes of tag %u were expected (ranks out of step)",
					 c->name, x->peer, r->sh[k].len, r->sh[k].tag, n, tag);
				return LOOM_ERR_MISMATCH;
			}
			if (x->kind == XRECV_REDUCE)
				loom_reduce_local(x->buf + x->off, r->data[k], n / es, x->dt, x->op);
			else if (n)
				memcpy(x->buf + x->off, r->data[k], n);
			atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
			loom_bell_ring(&s->bells[pl].bell);
			x->off += n;
			x->segdone++;
			moved = 1;
		}
	}
	if (x->segdone > 0 && x->off == x->len)
		x->done = 1;
	return moved;
}
