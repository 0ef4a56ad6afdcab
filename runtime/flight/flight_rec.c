/* runtime/flight/flight_rec.c: this rank's record file. Made at the first
 * recorded operation under LOOM_FLIGHT_DIR (the directory is made, 0700,
 * when missing; an existing one must be a directory of ours, not a link),
 * sized once, mapped shared, never unlinked by the runtime: what it holds
 * outlives the process however it ends. The directory may be one that
 * others can write (the user's choice), so the file is made under an
 * unguessable name (util/files.c) and renamed into place: a link or FIFO
 * planted at its name is replaced, never followed or opened. */
#include "flight/flight.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct loom_flight_hdr) == 256, "flight header is 256 bytes");
_Static_assert(sizeof(struct loom_flight_op) == 64, "flight op is 64 bytes");
_Static_assert(sizeof(struct loom_flight_slot) == 256, "flight slot is 256 bytes");

uint32_t loom_flight_mask;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int state;                 /* 0 not tried, 1 on, -1 off */
static struct loom_flight_hdr *hdr;
static size_t slot_bytes;
static char dir[400];

const char *loom_flight_dir(void) { return state == 1 ? dir : NULL; }

/* LOOM_FLIGHT_OPS rounded up to a power of two; 0 off */
static unsigned nops_wanted(void)
{
	const char *e = getenv("LOOM_FLIGHT_OPS");
	char *end;
	unsigned long v = 256, p = 1;
	if (e && *e) {
		errno = 0;
		v = strtoul(e, &end, 10);
		if (errno || *end || v > LOOM_FLIGHT_MAX_OPS) {
			LOOM_WARN("LOOM_FLIGHT_OPS=%s: expected 0 (off) to %d; using 256", e,
				  LOOM_FLIGHT_MAX_OPS);
			v = 256;
		}
	}
	if (!v)
		return 0;
	while (p < v)
		p <<= 1;
	return (unsigned)p;
}

/* dir exists as a real directory we own, or is made 0700 (mkdirat and
 * fstatat through its parent, opened without following a link): a
 * descriptor of it, or -errno */
static int own_dir(const char *d)
{
	const char *base = NULL;
	struct stat st;
	int bad, pfd = loom_open_parent(d, &base, &bad), fd;
	if (pfd < 0)
		return pfd;
	if (mkdirat(pfd, base, 0700) && errno != EEXIST) {
		int rc = -errno;
		close(pfd);
		return rc;
	}
	fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(pfd);
	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

static void set_str(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

static int open_record(int wrank, int wsize)
{
	char path[512], name[64], tmp[128];
	const char *d = getenv("LOOM_FLIGHT_DIR"), *step = getenv("SLURM_STEP_ID");
	unsigned nops = nops_wanted();
	size_t size;
	struct timespec rt;
	int fd, rc, dfd;
	void *p;
	if (!d || !*d || !nops)
		return -1;
	set_str(dir, sizeof dir, d);
	if ((dfd = own_dir(dir)) < 0) {
		LOOM_WARN("flight recorder off: LOOM_FLIGHT_DIR=%s: %s (it must be a directory "
			  "of this user, not a link)", dir, strerror(-dfd));
		return -1;
	}
	snprintf(name, sizeof name, "step%.20s-rank%d.flight", step && *step ? step : "0", wrank);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	slot_bytes = sizeof(struct loom_flight_slot) + (size_t)nops * sizeof(struct loom_flight_op);
	size = sizeof *hdr + LOOM_FLIGHT_SLOTS * slot_bytes;
	fd = loom_create_unique(dfd, name, O_RDWR, 0600, tmp, sizeof tmp);
	if (fd < 0) {
		LOOM_WARN("flight recorder off: %s: creating it: %s", path, strerror(-fd));
		close(dfd);
		return -1;
	}
	p = ftruncate(fd, (off_t)size) ? MAP_FAILED :
	    mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	rc = p == MAP_FAILED ? errno : 0;
	close(fd);
	/* renamed before the header is written: a reader takes a file
	 * without the magic for none */
	if (!rc && renameat(dfd, tmp, dfd, name))
		rc = errno;
	if (rc) {
		LOOM_WARN("flight recorder off: %s: %s", path, strerror(rc));
		if (p != MAP_FAILED)
			munmap(p, size);
		unlinkat(dfd, tmp, 0);
		close(dfd);
		return -1;
	}
	close(dfd);
	hdr = p;
	loom_flight_mask = nops - 1;
	hdr->version = LOOM_FLIGHT_VERSION;
	hdr->hdr_size = sizeof *hdr;
	hdr->slot_size = sizeof(struct loom_flight_slot);
	hdr->op_size = sizeof(struct loom_flight_op);
	hdr->nslots = LOOM_FLIGHT_SLOTS;
	hdr->nops = nops;
	hdr->file_size = size;
	hdr->rank = wrank;
	hdr->size = wsize;
	hdr->pid = (int32_t)getpid();
	clock_gettime(CLOCK_REALTIME, &rt);
	hdr->started = loom_now();
	hdr->real_minus_mono = (double)rt.tv_sec + rt.tv_nsec * 1e-9 - hdr->started;
	set_str(hdr->node, sizeof hdr->node, getenv("SLURMD_NODENAME"));
	if (gethostname(hdr->host, sizeof hdr->host - 1))
		hdr->host[0] = 0;
	if (!hdr->node[0])
		set_str(hdr->node, sizeof hdr->node, hdr->host);
	set_str(hdr->job, sizeof hdr->job, getenv("SLURM_JOB_ID"));
	set_str(hdr->step, sizeof hdr->step, step);
	/* the magic last: a reader never takes a half-made header for a record */
	memcpy(hdr->magic, LOOM_FLIGHT_MAGIC, sizeof hdr->magic);
	LOOM_TRACE("flight record %s (%u ops per communicator)", path, nops);
	return 0;
}

struct loom_flight_slot *loom_flight_slot_new(int wrank, int wsize, const char *name, uint64_t ctx,
					      int rank, int size, int first_wrank)
{
	struct loom_flight_slot *s = NULL;
	uint32_t i;
	pthread_mutex_lock(&lock);
	if (!state)
		state = open_record(wrank, wsize) ? -1 : 1;
	if (state == 1) {
		i = atomic_load(&hdr->nslots_used);
		if (i < hdr->nslots) {
			s = (struct loom_flight_slot *)((char *)(hdr + 1) + i * slot_bytes);
			s->rank = rank;
			s->size = size;
			s->first_wrank = first_wrank;
			s->ctx = ctx;
			set_str(s->name, sizeof s->name, name);
			atomic_store(&s->used, 1);
			atomic_store(&hdr->nslots_used, i + 1);
		} else if (i == hdr->nslots) {
			LOOM_WARN("flight recorder: more than %d communicators; %s and later ones "
				  "are not recorded", LOOM_FLIGHT_SLOTS, name);
			atomic_store(&hdr->nslots_used, i + 1);
		}
	}
	pthread_mutex_unlock(&lock);
	return s;
}

void loom_flight_slot_rename(struct loom_flight_slot *s, const char *name)
{
	if (s)
		set_str(s->name, sizeof s->name, name);
}

void loom_flight_slot_free(struct loom_flight_slot *s)
{
	if (s)
		atomic_store(&s->freed, 1);
}

void loom_flight_finalized(int how)
{
	if (state == 1)
		atomic_store(&hdr->finalized, (uint32_t)how);
}

void loom_flight_p2p_post(struct loom_flight_slot *s, int is_send, uint64_t count, int dtype,
			  int peer, double t)
{
	struct loom_flight_op *o = &s->p2p_last;
	uint64_t n = atomic_load_explicit(&s->p2p_posted, memory_order_relaxed) + 1;
	o->kind = is_send ? LOOM_FLIGHT_SEND : LOOM_FLIGHT_RECV;
	o->count = count;
	o->dtype = dtype;
	o->root = peer;
	o->t_post = t;
	o->t_end = 0;
	atomic_store_explicit(&o->state, LOOM_FLIGHT_POSTED, memory_order_relaxed);
	atomic_store_explicit(&o->seq, n, memory_order_release);
	atomic_store_explicit(&s->p2p_posted, n, memory_order_release);
}

void loom_flight_p2p_end(struct loom_flight_slot *s, int rc, double t)
{
	struct loom_flight_op *o = &s->p2p_last;
	uint64_t n = atomic_load_explicit(&s->p2p_done, memory_order_relaxed) + 1;
	if (n == atomic_load_explicit(&o->seq, memory_order_relaxed)) {
		o->status = rc;
		o->t_end = t;
		atomic_store_explicit(&o->state, rc ? LOOM_FLIGHT_FAILED : LOOM_FLIGHT_DONE,
				      memory_order_release);
	}
	atomic_store_explicit(&s->p2p_done, n, memory_order_release);
}
