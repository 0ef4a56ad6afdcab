/* runtime/transport/transport_shm.c: the shared-memory transport between the ranks
 * of one communicator on one node. One POSIX shm segment per communicator
 * and node holds one bell (futex word) per local rank, the fast boxes,
 * and a ready word per ordered pair of local ranks. The single-producer/
 * single-consumer ring of NSLOT slots from one rank to another is a
 * segment of its own, made by the sender on its first send to that peer
 * and mapped by the receiver once the pair's ready word says so: a rank
 * maps only the rings its algorithms use (a few per rank, not the L(L-1)
 * MiB of every pair; docs/scale.md). A sender copies a chunk into a free
 * slot and rings the receiver's bell; a receiver copies the chunk out, or reduces straight
 * from the slot into its buffer (no extra copy), frees the slot and rings
 * the sender's bell. Both ranks of a ring step work at once, so both cores
 * reduce. Waiting is done by the caller (xfer.c): spin briefly, then
 * sleep on the bell.
 *
 * Beside the rings, each local rank owns a fast box per operation parity
 * (LOOM_FBOX_BYTES of data after its sequence number, in the same cache
 * line for the first bytes): small collectives of a communicator that
 * lies in one node post their data there and read each other's
 * (coll_fbox.c), one cache-line transfer and no system call per
 * peer. A box is rewritten only once every peer has marked the operation
 * that last used it done (its done word). Posts of up to 8 bytes (and a
 * barrier's none) take 16-byte entries of a ring instead, four to a
 * cache line.
 * Sleepers announce themselves in the header: a poster rings the bells
 * only when someone sleeps.
 *
 * Only the job's user can reach a segment (docs/security.md): its name is
 * an HMAC of the communicator context and the node under random bits from
 * rank 0 (shared over the authenticated bootstrap), so nobody else can
 * guess the next one; the local leader creates it with O_EXCL, mode 0600,
 * and the other local ranks open it only once it exists, after checking
 * with fstat that it is a 0600 file of their own user of the right size.
 * It is unlinked as soon as every local rank has mapped it, and no rank
 * goes on before then (loom_shm_attach waits). A ring's
 * segment is named the same way with its pair added, made by its sender
 * alike (O_EXCL, 0600), checked alike by its receiver, and unlinked by
 * the receiver once it has mapped it, or at its detach if it never did.
 * The sender leaves the name alone even when it detaches first (what it
 * sent may still be read after it freed the communicator), unless the
 * receiver's process is gone. */
#include "transport/transport.h"
#include "util/rankmap.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define NSLOT 16
#define SLOT LOOM_SHM_SLOT_BYTES
#define CL 64

struct slot_hdr { uint32_t tag, len; };

/* a ring's ready word: made by its sender, then mapped by its receiver */
enum { RING_MADE = 1, RING_MAPPED = 2 };

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
	_Atomic uint32_t asleep;  /* in its bell's futex wait: descheduled */
	_Atomic int32_t cpu;      /* where it last posted or began a wait (-1: not yet) */
	char pad[CL - sizeof(struct loom_bell) - 12];
};

struct seg_hdr {
	uint64_t magic;
	_Atomic uint32_t attached;
	_Atomic uint32_t sleepers;  /* ranks in (or about to enter) a bell wait */
	char pad[CL - 16];
};

/* the first 48 data bytes share the sequence number's cache line */
struct fbox {
	_Atomic uint64_t seq;   /* the operation posted here; 0: none yet */
	uint32_t len, kind;     /* checked by readers: ranks out of step */
	char data[LOOM_FBOX_BYTES];
} __attribute__((aligned(CL)));

/* A rank's boxes, used in turn (seq % FBOX_DEPTH): a rank waits to
 * reuse one only when FBOX_DEPTH operations have gone by and a peer has
 * not read the oldest yet, so a broadcast root runs up to FBOX_DEPTH - 1
 * operations ahead of its readers instead of waiting for each. 16, not
 * 8: the node part of a broadcast across nodes, whose readers are often
 * descheduled while their leader waits for TCP, had to wait for them
 * twice as often (docs/algorithms.md, "Fast boxes"). 66 KiB a rank. */
#define FBOX_DEPTH 16
#define FBOX_SLOT(seq) ((seq) & (FBOX_DEPTH - 1))

/* Posts of up to FBOX_SMALL bytes (a scalar's allreduce or broadcast)
 * take an entry of a ring instead of a box: four entries to a cache
 * line, one after another, so a reader following a poster that runs
 * ahead misses once every four operations, not at every one (Open MPI's
 * vader packs its small messages so). A rank reuses an entry once every
 * peer is done with the operation that last used it, as for the boxes:
 * a broadcast root runs up to FBOX_SMALL_DEPTH - 1 operations ahead. */
#define FBOX_SMALL 8
#define FBOX_SMALL_DEPTH 64
#define FBOX_SMALL_SLOT(seq) ((seq) & (FBOX_SMALL_DEPTH - 1))
struct fbox_entry {
	_Atomic uint32_t seq;  /* the low half of the operation's number */
	uint32_t sig;          /* the operation's kind, its length in the top bits */
	char data[FBOX_SMALL];
};

struct fbox_rank {
	struct fbox box[FBOX_DEPTH];
	struct fbox_entry small[FBOX_SMALL_DEPTH] __attribute__((aligned(CL)));
	_Atomic uint64_t done __attribute__((aligned(CL)));  /* last operation read */
	char pad[CL - 8];
};

static int is_small(size_t len)
{
	return len <= FBOX_SMALL;
}

/* a small entry's signature: the kind (whose root field stays below
 * 2^16 in one node) with the length in the top 4 bits */
static uint32_t small_sig(uint32_t kind, size_t len)
{
	return kind ^ ((uint32_t)len << 28);
}

struct loom_shm {
	void *base;
	size_t size;
	int nlocal;
	char name[96];
	struct seg_hdr *hdr;
	struct slot_bell *bells;
	struct fbox_rank *fbox;
	_Atomic uint32_t *ready;  /* [from * nlocal + to]: 0, RING_MADE, RING_MAPPED */
	struct ring **out, **in;  /* the rings I send on / receive on, mapped on first use */
	uint64_t fbox_last[FBOX_DEPTH];  /* the operation that last wrote each of my boxes */
	uint64_t small_last[FBOX_SMALL_DEPTH];  /* ... each of my small entries */
	uint64_t fbox_seen_all; /* an operation every peer had posted: all done before it */
	uint64_t *done_seen;    /* each peer's done when last read */
	uint64_t fbox_seq;      /* fast-box uses so far: the same count on every rank */
	int direct;             /* peers' memory readable (process_vm_readv): 0 unknown, 1, -1 */
	struct loom_shm_group g;  /* the communicator's, copied at attach */
};

/* the communicator's segment (from = to = -1) or the ring from -> to */
static void segment_name(const struct loom_shm *s, int32_t from, int32_t to, char out[6 + 32 + 1])
{
	/* bytes laid out by hand: a struct's padding would differ per rank */
	uint8_t in[20], key[LOOM_KEY_LEN], mac[LOOM_MAC_LEN];
	int32_t node = s->g.node;
	memcpy(in, &s->g.ctx, 8);
	memcpy(in + 8, &node, 4);
	memcpy(in + 12, &from, 4);
	memcpy(in + 16, &to, 4);
	memcpy(key, s->g.key, 16);
	memcpy(key + 16, s->g.key, 16);
	loom_hmac(key, in, sizeof in, mac);
	memcpy(out, "/loom-", 6);
	loom_hex_encode(mac, 16, out + 6);
}

/* 0 when fd is a segment this rank may use: ours, 0600, size bytes (1:
 * not grown to its size yet); else -1 with the error logged */
static int segment_ok(int fd, const char *name, size_t size)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		LOOM_ERR("shared memory %s: fstat: %s", name, strerror(errno));
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & 07777) != 0600 || !S_ISREG(st.st_mode)) {
		LOOM_ERR("shared memory %s belongs to uid %u with mode %04o, not to this job's user (uid %u, 0600): "
			 "refusing it; another user may be interfering (LOOM_TRANSPORT=tcp avoids shared memory)",
			 name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
		return -1;
	}
	if ((size_t)st.st_size > size) {
		LOOM_ERR("shared memory %s has %lld bytes, more than the %zu this communicator makes: refusing it",
			 name, (long long)st.st_size, size);
		return -1;
	}
	return (size_t)st.st_size == size ? 0 : 1;
}

/* the local leader makes the segment; O_EXCL: a name that exists is not ours */
int loom_shm_segment_create(const char *name, size_t size)
{
	int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
	if (fd < 0) {
		LOOM_ERR("shared memory %s: cannot create it: %s%s; LOOM_TRANSPORT=tcp avoids it", name,
			 strerror(errno), errno == EEXIST ? " (someone else made that name first)" : "");
		return -1;
	}
	if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0) {
		LOOM_ERR("shared memory %s (%zu bytes): %s; LOOM_TRANSPORT=tcp avoids it", name, size,
			 strerror(errno));
		close(fd);
		shm_unlink(name);
		return -1;
	}
	return fd;
}

/* a waiter's look at its local peers, at most every 0.1 s: a status
 * (LOOM_ERR_PEER_LOST) once one is known gone, else 0 */
static int watch_peers(const struct loom_shm_group *g, double *next)
{
	double now;
	if (!g || !g->lost || (now = loom_now()) < *next)
		return 0;
	*next = now + 0.1;
	return g->lost(g->lost_arg);
}

/* the others wait for the leader's segment (never creating one), or
 * give up when g (if any) says a local peer is gone */
static int segment_wait(const char *name, size_t size, double deadline,
			const struct loom_shm_group *g, int *lost)
{
	useconds_t nap = 100;
	double next = 0;
	for (;;) {
		int fd = shm_open(name, O_RDWR, 0), ok;
		if (fd < 0 && errno != ENOENT) {
			LOOM_ERR("shared memory %s: %s; LOOM_TRANSPORT=tcp avoids it", name, strerror(errno));
			return -1;
		}
		if (fd >= 0) {
			ok = segment_ok(fd, name, size);
			if (ok == 0)
				return fd;
			close(fd);
			if (ok < 0)
				return -1;
		}
		if (loom_now() > deadline) {
			LOOM_ERR("shared memory %s: the node's first rank did not create it in time", name);
			return -1;
		}
		if ((*lost = watch_peers(g, &next))) {
			LOOM_ERR("shared memory %s: given up before it was made: %s (a rank of this node "
				 "is gone, or the communicator it is made for failed)", name, loom_strerror(*lost));
			return -1;
		}
		/* a growing pause, 0.1 to 6.4 ms: many ranks of a node may wait
		 * here while the first is still starting on the same cores */
		usleep(nap);
		if (nap < 6400)
			nap *= 2;
	}
}

int loom_shm_segment_open(const char *name, size_t size, double deadline)
{
	int lost = 0;
	return segment_wait(name, size, deadline, NULL, &lost);
}

static void shm_free(struct loom_shm *s)
{
	free(s->out);
	free(s->in);
	free(s->done_seen);
	free(s);
}

/* 0 once every local rank has mapped the segment, -1 at the deadline.
 * A futex on the count itself, woken by the last rank to map it: up to
 * 127 ranks of a node wait here while the slowest is still starting
 * (oversubscribed, as under srun -O), and a waiter that polled would
 * take the core from the very ranks it waits for. */
static int wait_attached(struct loom_shm *s, double deadline)
{
	double next = 0;
	int lost;
	for (;;) {
		uint32_t n = atomic_load(&s->hdr->attached);
		double left = deadline - loom_now();
		if (n >= (uint32_t)s->nlocal)
			return 0;
		if (left <= 0)
			return LOOM_ERR_TIMEOUT;
		if ((lost = watch_peers(&s->g, &next)))
			return lost;
		loom_futex_wait(&s->hdr->attached, n, left < 0.1 ? left : 0.1);
	}
}

int loom_shm_attach(const struct loom_shm_group *g, struct loom_shm **out)
{
	struct loom_shm *s = calloc(1, sizeof *s);
	int fd, nl = g->local_size, me = g->local_rank, lost = 0, rc;
	uint32_t n;
	/* the local ranks may reach a communicator's making as far apart as
	 * they may reach a collective (the node's communicators are made in
	 * the first operation that needs them) */
	double wait = g->timeout;
	if (!s)
		return LOOM_ERR_NOMEM;
	s->g = *g;
	s->nlocal = nl;
	s->size = sizeof(struct seg_hdr) + (size_t)nl * sizeof(struct slot_bell) +
		  (size_t)nl * sizeof(struct fbox_rank) + (size_t)nl * (size_t)nl * sizeof(uint32_t);
	s->out = calloc((size_t)nl, sizeof *s->out);
	s->in = calloc((size_t)nl, sizeof *s->in);
	s->done_seen = calloc((size_t)nl, sizeof *s->done_seen);
	segment_name(s, -1, -1, s->name);
	fd = !s->out || !s->in || !s->done_seen ? -2
	     : me == 0 ? loom_shm_segment_create(s->name, s->size)
		       : segment_wait(s->name, s->size, loom_now() + wait, g, &lost);
	if (fd < 0) {
		shm_free(s);
		return lost ? lost : fd == -2 ? LOOM_ERR_NOMEM : LOOM_ERR_SYSTEM;
	}
	s->base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s->base == MAP_FAILED) {
		LOOM_ERR("mmap of %s: %s", s->name, strerror(errno));
		if (me == 0)
			shm_unlink(s->name);
		shm_free(s);
		return LOOM_ERR_SYSTEM;
	}
	s->hdr = s->base;
	s->bells = (struct slot_bell *)(s->hdr + 1);
	s->fbox = (struct fbox_rank *)(s->bells + nl);
	s->ready = (_Atomic uint32_t *)(s->fbox + nl);
	s->bells[me].pid = (int32_t)getpid();
	atomic_store(&s->bells[me].cpu, -1);
	n = atomic_fetch_add(&s->hdr->attached, 1) + 1;
	if (n == (uint32_t)nl) {
		shm_unlink(s->name);
		loom_futex_wake_all(&s->hdr->attached);
	}
	/* Every local rank waits until all have it mapped: one that went on
	 * and freed the communicator at once (a broadcast root's sends are
	 * eager) would otherwise unlink the name under a peer still to open
	 * it. The ranks are all here (a communicator is made collectively). */
	else if ((rc = wait_attached(s, loom_now() + wait))) {
		if (rc == LOOM_ERR_TIMEOUT)
			LOOM_ERR("comm %s: shared memory %s: %u of %d local ranks mapped it within %.0f s (LOOM_TIMEOUT); "
				 "a rank of this node did not come (LOOM_TRANSPORT=tcp avoids shared memory)",
				 g->name, s->name, (unsigned)atomic_load(&s->hdr->attached), nl, wait);
		else
			LOOM_ERR("comm %s: shared memory %s: given up before every local rank mapped it: %s "
				 "(a rank of this node is gone, or the communicator it is made for failed)",
				 g->name, s->name, loom_strerror(rc));
		shm_unlink(s->name);
		munmap(s->base, s->size);
		shm_free(s);
		return rc;
	}
	s->g.lost = NULL;   /* the watch lives for the attach only */
	*out = s;
	LOOM_TRACE("comm %s: shm segment %s, %d local ranks", g->name, s->name, nl);
	return LOOM_SUCCESS;
}

void loom_shm_detach(struct loom_shm *s)
{
	int i, me;
	if (!s)
		return;
	me = s->g.local_rank;
	shm_unlink(s->name); /* ENOENT: the last rank to map it unlinked it */
	for (i = 0; i < s->nlocal; i++) {
		char name[96];
		if (s->out[i]) {
			/* what I sent may not be read yet (a receive posted after
			 * this rank freed the communicator): the ring's name stays
			 * for its receiver, who unlinks it, unless that process is
			 * gone */
			if (atomic_load(&s->ready[me * s->nlocal + i]) != RING_MAPPED && loom_shm_peer_gone(s, i)) {
				segment_name(s, me, i, name);
				shm_unlink(name);
			}
			munmap(s->out[i], sizeof(struct ring));
		}
		if (s->in[i]) {
			munmap(s->in[i], sizeof(struct ring));
		} else if (atomic_load(&s->ready[i * s->nlocal + me]) == RING_MADE) {
			segment_name(s, i, me, name);  /* made for me, never mapped */
			shm_unlink(name);
		}
	}
	munmap(s->base, s->size);
	shm_free(s);
}

/* The ring from -> to, mapped here: made (mine = 1, I am its sender) or
 * opened once its ready word is set (mine = 0). NULL with *rc = 0: not
 * made yet (the sender rings my bell when it is); *rc < 0: an error. */
static struct ring *ring_map(struct loom_shm *s, int from, int to, int mine, int *rc)
{
	struct ring **slot = mine ? &s->out[to] : &s->in[from];
	_Atomic uint32_t *ready = &s->ready[from * s->nlocal + to];
	char name[96];
	void *p;
	int fd;
	*rc = 0;
	if (*slot)
		return *slot;
	if (!mine && !atomic_load_explicit(ready, memory_order_acquire))
		return NULL;
	segment_name(s, from, to, name);
	fd = mine ? loom_shm_segment_create(name, sizeof(struct ring))
		  : loom_shm_segment_open(name, sizeof(struct ring), 0);
	if (fd < 0) {
		*rc = LOOM_ERR_SYSTEM;
		return NULL;
	}
	p = mmap(NULL, sizeof(struct ring), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		LOOM_ERR("mmap of %s (ring %d -> %d of comm %s): %s", name, from, to, s->g.name,
			 strerror(errno));
		if (mine)
			shm_unlink(name);
		*rc = LOOM_ERR_SYSTEM;
		return NULL;
	}
	if (mine) {
		atomic_store_explicit(ready, RING_MADE, memory_order_release);
		loom_bell_ring(&s->bells[to].bell);
	} else {
		atomic_store_explicit(ready, RING_MAPPED, memory_order_release);
		shm_unlink(name);  /* both ends hold it now */
	}
	*slot = p;
	return p;
}

struct loom_bell *loom_shm_bell(struct loom_shm *s)
{
	return &s->bells[s->g.local_rank].bell;
}

int loom_shm_peer_gone(struct loom_shm *s, int local_idx)
{
	pid_t pid = s ? s->bells[local_idx].pid : 0;
	return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

/* its state in /proc/PID/stat, the letter after "(comm) " (comm may hold
 * spaces and parentheses: the last ')' ends it) */
int loom_shm_peer_stopped(struct loom_shm *s, int local_idx)
{
	pid_t pid = s ? s->bells[local_idx].pid : 0;
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;
	if (pid <= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

int loom_shm_peer_asleep(struct loom_shm *s, int local_idx)
{
	return s && atomic_load_explicit(&s->bells[local_idx].asleep, memory_order_relaxed);
}

/* sched_getcpu reads the kernel's restartable-sequence area (glibc
 * 2.35+), no system call; the CPU is stored only when it changed, so the
 * line stays in the peers' caches */
void loom_shm_here(struct loom_shm *s)
{
	_Atomic int32_t *mine = &s->bells[s->g.local_rank].cpu;
	int cpu = sched_getcpu();
	if (atomic_load_explicit(mine, memory_order_relaxed) != cpu)
		atomic_store_explicit(mine, cpu, memory_order_relaxed);
}

int loom_shm_peer_beside(struct loom_shm *s, int local_idx)
{
	int cpu = atomic_load_explicit(&s->bells[local_idx].cpu, memory_order_relaxed);
	return cpu >= 0 && cpu == sched_getcpu();
}

/* Announced before the dozer's first check (sleepers, then a full
 * fence), and kept for the whole doze, not nap by nap: a poster that
 * stores after the announcement is visible sees it and rings. */
void loom_shm_doze(struct loom_shm *s, int on)
{
	struct slot_bell *me = &s->bells[s->g.local_rank];
	if (on) {
		atomic_fetch_add(&s->hdr->sleepers, 1);
		atomic_store(&me->asleep, 1);
		atomic_thread_fence(memory_order_seq_cst);  /* the count before the checks */
	} else {
		atomic_store(&me->asleep, 0);
		atomic_fetch_sub(&s->hdr->sleepers, 1);
	}
}

void loom_shm_nap(struct loom_shm *s, double nap, int (*ready)(void *), void *arg)
{
	struct slot_bell *me = &s->bells[s->g.local_rank];
	uint32_t seen = atomic_load(&me->bell.seq);  /* before the check: a ring after it wakes us */
	if (!ready(arg))
		loom_bell_wait(&me->bell, seen, nap);
}

/* After a change a dozer may wait for: ring everyone when someone dozes.
 * The change is a plain release store, not a locked exchange: a fence
 * here waited for the cache line to come back from the reader (a third
 * of a 2-rank 8 B allreduce), where a store lets the next operation go
 * on. So this load may be served before the store is seen; a dozer
 * whose announcement crossed it sleeps its first nap, at most
 * LOOM_SHM_FIRST_NAP, and then sees the change (docs/algorithms.md). */
static void wake_sleepers(struct loom_shm *s, int me)
{
	int i;
	if (!atomic_load_explicit(&s->hdr->sleepers, memory_order_relaxed))
		return;
	for (i = 0; i < s->nlocal; i++)
		if (i != me)
			loom_bell_ring(&s->bells[i].bell);
}

uint64_t loom_shm_fbox_next(struct loom_shm *s)
{
	return ++s->fbox_seq;
}

int *loom_shm_direct(struct loom_shm *s)
{
	return &s->direct;
}

int loom_shm_direct_allowed(void)
{
	const char *v = getenv("LOOM_DIRECT_READS");
	return !v || strcmp(v, "0") != 0;
}

/* Move len bytes between local buffer mine and address theirs of local
 * rank local_idx (write: into it): one copy, by the kernel, allowed only
 * between processes of the same user (ptrace access rules). The pid is
 * the one that rank wrote in the segment, which only the job's user can
 * open. */
static int peer_copy(struct loom_shm *s, int local_idx, char *mine, uint64_t theirs, size_t len,
		     int write)
{
	pid_t pid = s->bells[local_idx].pid;
	while (len) {
		struct iovec l = { mine, len }, r = { (void *)(uintptr_t)theirs, len };
		ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
				  : process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return n < 0 && errno == ESRCH ? LOOM_ERR_PEER_LOST : LOOM_ERR_SYSTEM;
		}
		mine += n;
		theirs += (uint64_t)n;
		len -= (size_t)n;
	}
	return LOOM_SUCCESS;
}

int loom_shm_peer_read(struct loom_shm *s, int local_idx, void *dst, uint64_t src, size_t len)
{
	return peer_copy(s, local_idx, dst, src, len, 0);
}

int loom_shm_peer_write(struct loom_shm *s, int local_idx, uint64_t dst, const void *src,
			size_t len)
{
	/* process_vm_writev only reads the local iovec */
	return peer_copy(s, local_idx, (char *)(uintptr_t)src, dst, len, 1);
}

int loom_shm_fbox_writable(struct loom_shm *s, uint64_t seq, size_t len, int local_idx,
			   int more)
{
	int small = is_small(len), i;
	uint64_t last = small ? s->small_last[FBOX_SMALL_SLOT(seq)] : s->fbox_last[FBOX_SLOT(seq)],
		 need;
	if (last == 0 || s->fbox_seen_all > last)
		return 1;
	/* more: wait for a quarter of the ring at once, so that the next
	 * operations find it free in what was read now, not in the cache
	 * line the peer writes at every operation (every operation before
	 * seq is done here, so the peers can get there) */
	need = last + (more ? (small ? FBOX_SMALL_DEPTH : FBOX_DEPTH) / 4 : 0);
	if (need >= seq)
		need = seq - 1;
	for (i = 0; i < s->nlocal; i++) {
		uint64_t d;
		if (i == s->g.local_rank || (local_idx >= 0 && i != local_idx) || s->done_seen[i] >= need)
			continue;
		/* the peers' done only grows: what was read last answers
		 * until it falls short */
		d = atomic_load_explicit(&s->fbox[i].done, memory_order_acquire);
		s->done_seen[i] = d;
		if (d < need)
			return 0;
	}
	return 1;
}

void *loom_shm_fbox_mine(struct loom_shm *s, uint64_t seq, size_t len)
{
	struct fbox_rank *r = &s->fbox[s->g.local_rank];
	return is_small(len) ? r->small[FBOX_SMALL_SLOT(seq)].data : r->box[FBOX_SLOT(seq)].data;
}

void loom_shm_fbox_post(struct loom_shm *s, uint64_t seq, uint32_t kind, size_t len)
{
	if (is_small(len)) {
		struct fbox_entry *e = &s->fbox[s->g.local_rank].small[FBOX_SMALL_SLOT(seq)];
		e->sig = small_sig(kind, len);
		s->small_last[FBOX_SMALL_SLOT(seq)] = seq;
		atomic_store_explicit(&e->seq, (uint32_t)seq, memory_order_release);
	} else {
		struct fbox *b = &s->fbox[s->g.local_rank].box[FBOX_SLOT(seq)];
		b->len = (uint32_t)len;
		b->kind = kind;
		s->fbox_last[FBOX_SLOT(seq)] = seq;
		atomic_store_explicit(&b->seq, seq, memory_order_release);
	}
	wake_sleepers(s, s->g.local_rank);
	loom_shm_here(s);
}

static const void *fbox_mismatch(struct loom_shm *s, int local_idx, unsigned plen,
				 unsigned pkind, size_t len, uint32_t kind, int *mismatch)
{
	LOOM_ERR("comm %s: rank %d posted %u bytes of a kind-%u operation where %zu bytes of kind %u were expected (ranks out of step)",
		 s->g.name, loom_rankmap_get(s->g.members, local_idx), plen, pkind, len, kind);
	*mismatch = 1;
	return NULL;
}

/* the same, told from a small entry (its signature holds kind and length) */
static const void *entry_mismatch(struct loom_shm *s, int local_idx, const struct fbox_entry *e,
				  size_t len, uint32_t kind, int *mismatch)
{
	return fbox_mismatch(s, local_idx, e->sig >> 28, e->sig & 0x0fffffffu, len, kind, mismatch);
}

const void *loom_shm_fbox_peek(struct loom_shm *s, int local_idx, uint64_t seq, uint32_t kind,
			       size_t len, int *mismatch)
{
	struct fbox_rank *r = &s->fbox[local_idx];
	struct fbox *b = &r->box[FBOX_SLOT(seq)];
	struct fbox_entry *e = &r->small[FBOX_SMALL_SLOT(seq)];
	/* a peer that posted seq where the other size class goes is out of
	 * step: seen there, its operation is told, not waited for forever */
	if (is_small(len)) {
		if (atomic_load_explicit(&e->seq, memory_order_acquire) == (uint32_t)seq) {
			if (e->sig != small_sig(kind, len))
				return entry_mismatch(s, local_idx, e, len, kind, mismatch);
			return e->data;
		}
		if (atomic_load_explicit(&b->seq, memory_order_acquire) == seq)
			return fbox_mismatch(s, local_idx, b->len, b->kind, len, kind, mismatch);
		return NULL;
	}
	if (atomic_load_explicit(&b->seq, memory_order_acquire) != seq) {
		if (atomic_load_explicit(&e->seq, memory_order_acquire) == (uint32_t)seq)
			return entry_mismatch(s, local_idx, e, len, kind, mismatch);
		return NULL;
	}
	if (b->kind != kind || b->len != len)
		return fbox_mismatch(s, local_idx, b->len, b->kind, len, kind, mismatch);
	return b->data;
}

void loom_shm_fbox_done(struct loom_shm *s, uint64_t seq, int saw_all)
{
	atomic_store_explicit(&s->fbox[s->g.local_rank].done, seq, memory_order_release);
	if (saw_all)
		s->fbox_seen_all = seq;
	wake_sleepers(s, s->g.local_rank);
}

/* the message in slot k of r, from local peer pl: tag's, of n bytes? */
static int slot_check(struct loom_shm *s, struct ring *r, unsigned k, int pl, uint32_t tag,
		      size_t n)
{
	if (r->sh[k].tag == tag && r->sh[k].len == n)
		return 0;
	LOOM_ERR("comm %s: rank %d sent %u bytes of operation tag %u where %zu bytes of tag %u were expected (ranks out of step)",
		 s->g.name, loom_rankmap_get(s->g.members, pl), r->sh[k].len, r->sh[k].tag, n, tag);
	return LOOM_ERR_MISMATCH;
}

/* through the slot functions below: one copy between the caller's
 * buffer and a slot, up to SLOT bytes a message */
int loom_shm_progress(struct loom_shm *s, int pl, struct loom_xreq *x, uint32_t tag)
{
	int moved = 0, rc = 0;
	size_t es = x->kind == XRECV_REDUCE ? loom_dtype_size(x->dt) : 1;
	while (!(x->segdone > 0 && x->off == x->len)) {
		size_t n = x->len - x->off < SLOT ? x->len - x->off : SLOT;
		if (x->kind == XSEND) {
			char *d = loom_shm_slot_to(s, pl, &rc);
			if (!d)
				break;
			if (n)
				memcpy(d, x->buf + x->off, n);
			loom_shm_slot_post(s, pl, tag, n);
		} else {
			const char *d = loom_shm_slot_from(s, pl, tag, n, &rc);
			if (!d)
				break;
			if (x->kind == XRECV_REDUCE)
				loom_reduce_local(x->buf + x->off, d, n / es, x->dt, x->op);
			else if (n)
				memcpy(x->buf + x->off, d, n);
			loom_shm_slot_release(s, pl);
		}
		x->off += n;
		x->segdone++;
		moved = 1;
	}
	if (rc)
		return rc;
	if (x->segdone > 0 && x->off == x->len)
		x->done = 1;
	return moved;
}

void *loom_shm_slot_to(struct loom_shm *s, int local_idx, int *rc)
{
	struct ring *r = ring_map(s, s->g.local_rank, local_idx, 1, rc);
	uint64_t head, tail;
	if (!r)
		return NULL;
	head = atomic_load_explicit(&r->head, memory_order_relaxed);
	tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	return head - tail < NSLOT ? r->data[head % NSLOT] : NULL;
}

void loom_shm_slot_post(struct loom_shm *s, int local_idx, uint32_t tag, size_t len)
{
	struct ring *r = s->out[local_idx];  /* mapped by loom_shm_slot_to */
	uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	unsigned k = (unsigned)(head % NSLOT);
	r->sh[k].tag = tag;
	r->sh[k].len = (uint32_t)len;
	atomic_store_explicit(&r->head, head + 1, memory_order_release);
	loom_bell_ring(&s->bells[local_idx].bell);
}

const void *loom_shm_slot_from(struct loom_shm *s, int local_idx, uint32_t tag, size_t len,
			       int *rc)
{
	struct ring *r = ring_map(s, local_idx, s->g.local_rank, 0, rc);
	uint64_t head, tail;
	unsigned k;
	if (!r)
		return NULL;
	tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	head = atomic_load_explicit(&r->head, memory_order_acquire);
	if (tail == head)
		return NULL;
	k = (unsigned)(tail % NSLOT);
	if ((*rc = slot_check(s, r, k, local_idx, tag, len)))
		return NULL;
	return r->data[k];
}

void loom_shm_slot_release(struct loom_shm *s, int local_idx)
{
	struct ring *r = s->in[local_idx];  /* mapped by loom_shm_slot_from */
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
	loom_bell_ring(&s->bells[local_idx].bell);
}
