/* fuzz-style test: flight records, valid ones (one from the real writer,
 * the others built here to docs/flight-format.md, and the builder checked
 * against the writer byte for byte) mutated at random: random bytes at
 * random offsets, header, slot and operation fields set to extreme values
 * (slot and operation counts, sizes, kinds, sequence numbers, times),
 * names without a NUL or full of control bytes, files truncated, extended
 * and made sparse and huge, and a FIFO, a link and a directory among
 * them. Each file against the reader's contract (flight.h): accepted
 * within the documented bounds (the writer's slot count, at most
 * LOOM_FLIGHT_KEEP_OPS operations kept and they are the file's newest,
 * names terminated and printable), or rejected with a non-empty one-line
 * message naming it; loom_flight_read_dir within its budget; then the
 * hang and the lateness analyses on what was read: they return, bounded
 * in time (an alarm per iteration), and their text holds no raw control
 * byte. The run must both accept and reject files. Under valgrind
 * (t/t7113-flight-fuzz.t) or ASan: no leak or overrun either.
 * Arguments: iterations (default 300), seed. */
#include "config.h"
#include "flight/flight.h"
#include "flight/flight_slow.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../../../t/tap.h"

#define HDR sizeof(struct loom_flight_hdr)
#define SLOT sizeof(struct loom_flight_slot)
#define OP sizeof(struct loom_flight_op)
/* the reader's own limit on a file (flight_read.c) */
#define MAX_FILE ((uint64_t)256 << 20)

static unsigned long long rs = 0x2545f4914f6cdd1dULL;
static uint64_t rnd64(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}
static unsigned rnd(void) { return (unsigned)(rnd64() >> 32); }
static unsigned below(unsigned n) { return rnd() % n; }

static char top[] = "/tmp/loom-flight-fuzz.XXXXXX", wdir[600], idir[600];
static unsigned char *wimg;       /* the real writer's record */
static size_t wlen;
static char here[64];             /* this host, as the records name it */
static int iter;
static char desc[2048];           /* what this iteration did, for a failure */

/* append to desc */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	size_t l = strlen(desc);
	va_list ap;
	if (l + 1 >= sizeof desc)
		return;
	va_start(ap, fmt);
	vsnprintf(desc + l, sizeof desc - l, fmt, ap);
	va_end(ap);
}

static void on_alarm(int sig)
{
	static const char m[] = "not ok - an iteration ran past its alarm (a hang): ";
	(void)sig;
	if (write(1, m, sizeof m - 1) < 0 || write(1, desc, strlen(desc)) < 0 ||
	    write(1, "\n", 1) < 0)
		_exit(2);
	_exit(1);
}

/* ---- records built by hand (docs/flight-format.md) ---- */

/* One job: its records' world and communicators, and what each rank did */
struct plan {
	int wsize;                /* world size the records claim */
	int nranks;               /* records written: world ranks 0 .. nranks - 1 */
	uint32_t nops;            /* each record's ring */
	int ncomm;                /* 1-3: world, tp (pairs), one named with escapes */
	uint64_t posted;          /* collectives posted on each communicator */
	int behind;               /* this rank is one behind on world (-1 none) */
	int stuck;                /* the newest collective is not finished */
	int late;                 /* the straggler (-1 none) */
	int odd;                  /* this rank calls a broadcast at odd_seq (-1 none) */
	uint64_t odd_seq;
	struct loom_flight_hdr like;  /* pid, times, node, host, job, step */
};

static const char *const comm_name[3] = { "world", "tp", "\x1b]0;owned\x07\x1b[2Jx\r\n" };

static void comm_of(const struct plan *p, int c, int wrank, int *rank, int *size, int *first)
{
	*rank = wrank;
	*size = p->wsize;
	*first = 0;
	if (c == 1) {
		*rank = wrank & 1;
		*size = 2;
		*first = wrank & ~1;
	}
}

static uint64_t posted_of(const struct plan *p, int c, int wrank)
{
	return c == 0 && wrank == p->behind && p->posted ? p->posted - 1 : p->posted;
}

static uint64_t done_of(const struct plan *p, int c, int wrank)
{
	uint64_t n = posted_of(p, c, wrank);
	return p->stuck && n ? n - 1 : n;
}

/* operation seq of rank wrank on communicator c, as the writer would record it */
static void op_of(const struct plan *p, int c, int wrank, uint64_t seq, struct loom_flight_op *o)
{
	double off = 1000.0 * wrank + c;
	memset(o, 0, sizeof *o);
	o->seq = seq;
	o->kind = seq % 5 == 0 ? 7 : 1;
	if (wrank == p->odd && seq == p->odd_seq && c == 0)
		o->kind = 2;
	o->count = 8 * seq;
	o->dtype = 4;
	o->t_post = off + 0.1 * (double)seq + (wrank == p->late ? 0.05 : 0);
	if (seq <= done_of(p, c, wrank)) {
		o->state = LOOM_FLIGHT_DONE;
		o->t_end = off + 0.1 * (double)seq + 0.06;
	} else {
		o->state = LOOM_FLIGHT_POSTED;
	}
}

static int pwrite_all(int fd, const void *b, size_t n, uint64_t off)
{
	return pwrite(fd, b, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

/* world rank wrank's record of p into path */
static int build(const char *path, const struct plan *p, int wrank)
{
	struct loom_flight_hdr h = p->like;
	uint64_t slot = SLOT + (uint64_t)p->nops * OP, fsize = HDR + LOOM_FLIGHT_SLOTS * slot;
	/* small rings are written whole; of a large one, the newest 64 */
	size_t cap = p->nops <= 2048 ? p->nops : 64;
	char *buf = calloc(1, p->nops <= 2048 ? slot : SLOT);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), c, rc = -1;
	if (fd < 0 || !buf)
		goto out;
	memcpy(h.magic, LOOM_FLIGHT_MAGIC, sizeof h.magic);
	h.version = LOOM_FLIGHT_VERSION;
	h.hdr_size = HDR;
	h.slot_size = SLOT;
	h.op_size = OP;
	h.nslots = LOOM_FLIGHT_SLOTS;
	h.nops = p->nops;
	h.file_size = fsize;
	h.rank = wrank;
	h.size = p->wsize;
	h.nslots_used = (uint32_t)p->ncomm;
	if (ftruncate(fd, (off_t)fsize) || pwrite_all(fd, &h, sizeof h, 0))
		goto out;
	for (c = 0; c < p->ncomm; c++) {
		struct loom_flight_slot *s = (void *)buf;
		struct loom_flight_op *ring = (void *)(s + 1), o;
		uint64_t seq, n = posted_of(p, c, wrank), off = HDR + c * slot;
		size_t k = 0;
		memset(buf, 0, p->nops <= 2048 ? slot : SLOT);
		s->used = 1;
		comm_of(p, c, wrank, &s->rank, &s->size, &s->first_wrank);
		s->ctx = (uint64_t)c + 1;
		snprintf(s->name, sizeof s->name, "%s", comm_name[c]);
		s->posted = n;
		s->done = done_of(p, c, wrank);
		for (seq = n; seq > 0 && k < cap; seq--, k++) {
			op_of(p, c, wrank, seq, &o);
			if (p->nops <= 2048)
				ring[seq & (p->nops - 1)] = o;
			else if (pwrite_all(fd, &o, sizeof o, off + SLOT + (seq & (p->nops - 1)) * OP))
				goto out;
		}
		if (pwrite_all(fd, buf, p->nops <= 2048 ? slot : SLOT, off))
			goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

/* the job the real writer records at the start (rank 0 of 2) */
static void writer_plan(struct plan *p)
{
	memset(p, 0, sizeof *p);
	p->wsize = 2;
	p->nranks = 2;
	p->nops = 8;
	p->ncomm = 2;
	p->posted = 20;
	p->behind = p->odd = -1;
	p->late = 1;
}

static void random_plan(struct plan *p)
{
	static const uint32_t nops[] = { 1, 2, 4, 8, 16, 64, 1024, 2048, 65536 };
	memset(p, 0, sizeof *p);
	p->nranks = 1 + (int)below(4);
	p->wsize = p->nranks + (below(4) ? 0 : (int)below(3));
	if (!below(16))
		p->wsize = below(2) ? LOOM_FLIGHT_MAX_RANKS : 1 << 16;
	p->nops = nops[below(16) ? below(8) : 8];
	p->ncomm = 1 + (int)below(3);
	if (p->wsize < 2 && p->ncomm == 2)
		p->ncomm = 1;
	p->posted = below(4) ? below(3 * p->nops + 5) : rnd64() >> below(64);
	p->behind = below(3) ? -1 : (int)below((unsigned)p->nranks);
	p->stuck = !below(3);
	p->late = below(2) ? (int)below((unsigned)p->nranks) : -1;
	p->odd = below(4) ? -1 : (int)below((unsigned)p->nranks);
	p->odd_seq = p->posted ? p->posted - below(p->posted < 4 ? (unsigned)p->posted : 4) : 0;
	p->like.pid = below(2) ? (int32_t)getpid() : (int32_t)rnd();
	p->like.finalized = below(3);
	p->like.real_minus_mono = 1.7e9;
	p->like.started = 100;
	snprintf(p->like.node, sizeof p->like.node, "n%u", below(4));
	snprintf(p->like.host, sizeof p->like.host, "%s", below(2) ? here : "elsewhere");
	snprintf(p->like.job, sizeof p->like.job, "7");
	snprintf(p->like.step, sizeof p->like.step, "0");
}

static int slurp(const char *path, unsigned char **img, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;
	if (fd < 0)
		return -1;
	if (!fstat(fd, &st) && (*img = malloc((size_t)st.st_size)) &&
	    pread(fd, *img, (size_t)st.st_size, 0) == st.st_size) {
		*len = (size_t)st.st_size;
		rc = 0;
	}
	close(fd);
	return rc;
}

/* the real writer's record of writer_plan, and the builder's of the same
 * job: the same bytes (the header's pid, times and names taken over) */
static void make_writer_record(void)
{
	struct plan p;
	struct loom_flight_slot *s[2];
	struct loom_flight_op o;
	char path[700], bpath[700];
	unsigned char *bimg = NULL;
	size_t blen = 0;
	uint64_t seq;
	int c;
	writer_plan(&p);
	setenv("LOOM_FLIGHT_DIR", wdir, 1);
	setenv("LOOM_FLIGHT_OPS", "8", 1);
	setenv("SLURM_STEP_ID", "0", 1);
	setenv("SLURM_JOB_ID", "7", 1);
	setenv("SLURMD_NODENAME", "n0", 1);
	for (c = 0; c < 2; c++) {
		int rank, size, first;
		comm_of(&p, c, 0, &rank, &size, &first);
		s[c] = loom_flight_slot_new(0, 2, comm_name[c], (uint64_t)c + 1, rank, size, first);
		if (!s[c])
			bail_out("the writer made no record in %s", wdir);
		for (seq = 1; seq <= p.posted; seq++) {
			op_of(&p, c, 0, seq, &o);
			if (loom_flight_post(s[c], (int)o.kind, o.count, o.dtype, o.op, o.root,
					     o.t_post) != seq)
				bail_out("the writer numbered a collective other than %llu",
					 (unsigned long long)seq);
			if (o.state == LOOM_FLIGHT_DONE)
				loom_flight_end(s[c], seq, 0, o.t_end);
		}
	}
	snprintf(path, sizeof path, "%s/step0-rank0.flight", wdir);
	if (slurp(path, &wimg, &wlen) || wlen < HDR)
		bail_out("cannot read the writer's record %s", path);
	memcpy(&p.like, wimg, HDR);
	snprintf(bpath, sizeof bpath, "%s/built", wdir);
	ok(!build(bpath, &p, 0) && !slurp(bpath, &bimg, &blen) && blen == wlen &&
	   !memcmp(bimg, wimg, wlen), "the builder makes the writer's bytes for the same job");
	free(bimg);
}

/* ---- mutations ---- */

static uint32_t x32(void)
{
	static const uint32_t v[] = { 0, 1, 2, 3, 31, 32, 33, 63, 64, 255, 256, 257, 1023, 1024,
				      1025, 65535, 65536, 65537, 1u << 20, (1u << 20) + 1,
				      0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff };
	return below(8) ? v[below(sizeof v / sizeof v[0])] : rnd();
}

static uint64_t x64(void)
{
	static const uint64_t v[] = { 0, 1, 2, 1023, 1024, 1025, 65536, (uint64_t)1 << 32,
				      (uint64_t)1 << 63, ((uint64_t)1 << 63) - 1, UINT64_MAX - 1,
				      UINT64_MAX };
	return below(8) ? v[below(sizeof v / sizeof v[0])] : rnd64() >> below(64);
}

static double xdbl(void)
{
	static const double v[] = { 0, -0.0, 1, -1, 1e9, -1e9, 1e308, -1e308, 5e-324 };
	switch (below(4)) {
	case 0: return NAN;
	case 1: return below(2) ? INFINITY : -INFINITY;
	default: return v[below(sizeof v / sizeof v[0])];
	}
}

/* a field of width w (4, 8, or 'd' a double) at off set to an extreme */
static void set_field(int fd, uint64_t off, int w, const char *what)
{
	uint32_t a;
	uint64_t b;
	double d;
	if (w == 4) {
		a = x32();
		say(" %s=%u", what, a);
		pwrite_all(fd, &a, 4, off);
	} else if (w == 8) {
		b = x64();
		say(" %s=%llu", what, (unsigned long long)b);
		pwrite_all(fd, &b, 8, off);
	} else {
		d = xdbl();
		say(" %s=%g", what, d);
		pwrite_all(fd, &d, 8, off);
	}
}

struct field {
	const char *name;
	size_t off;
	int w;
};
#define F(t, m, w) { #m, offsetof(t, m), w }
static const struct field hfields[] = {
	F(struct loom_flight_hdr, version, 4), F(struct loom_flight_hdr, hdr_size, 4),
	F(struct loom_flight_hdr, slot_size, 4), F(struct loom_flight_hdr, op_size, 4),
	F(struct loom_flight_hdr, nslots, 4), F(struct loom_flight_hdr, nops, 4),
	F(struct loom_flight_hdr, file_size, 8), F(struct loom_flight_hdr, rank, 4),
	F(struct loom_flight_hdr, size, 4), F(struct loom_flight_hdr, pid, 4),
	F(struct loom_flight_hdr, finalized, 4), F(struct loom_flight_hdr, real_minus_mono, 'd'),
	F(struct loom_flight_hdr, started, 'd'), F(struct loom_flight_hdr, nslots_used, 4),
};
static const struct field sfields[] = {
	F(struct loom_flight_slot, used, 4), F(struct loom_flight_slot, freed, 4),
	F(struct loom_flight_slot, rank, 4), F(struct loom_flight_slot, size, 4),
	F(struct loom_flight_slot, first_wrank, 4), F(struct loom_flight_slot, ctx, 8),
	F(struct loom_flight_slot, posted, 8), F(struct loom_flight_slot, done, 8),
	F(struct loom_flight_slot, p2p_posted, 8), F(struct loom_flight_slot, p2p_done, 8),
	F(struct loom_flight_slot, p2p_last.kind, 4), F(struct loom_flight_slot, p2p_last.root, 4),
	F(struct loom_flight_slot, p2p_last.seq, 8), F(struct loom_flight_slot, p2p_last.state, 4),
};
static const struct field ofields[] = {
	F(struct loom_flight_op, seq, 8), F(struct loom_flight_op, kind, 4),
	F(struct loom_flight_op, state, 4), F(struct loom_flight_op, count, 8),
	F(struct loom_flight_op, dtype, 4), F(struct loom_flight_op, op, 4),
	F(struct loom_flight_op, root, 4), F(struct loom_flight_op, status, 4),
	F(struct loom_flight_op, t_post, 'd'), F(struct loom_flight_op, t_end, 'd'),
};
#define NF(a) (sizeof a / sizeof a[0])

/* a string field of n bytes at off: no NUL in it, or control bytes and
 * escape sequences */
static void set_name(int fd, uint64_t off, size_t n, const char *what)
{
	static const char *const evil[] = { "\x1b[31mred\x1b[0m", "a\nverdict: forged", "\r\x7f\x9b",
					    "\x1b]52;c;cm0gLXJmIH4=\x07" };
	char b[64];
	size_t i;
	if (below(2)) {
		for (i = 0; i < n; i++)
			b[i] = (char)(below(4) ? 1 + below(255) : 'A' + below(26));
		say(" %s unterminated", what);
	} else {
		memset(b, 0, sizeof b);
		snprintf(b, n, "%s", evil[below(NF(evil))]);
		say(" %s escapes", what);
	}
	pwrite_all(fd, b, n, off);
}

/* one change to the record in fd */
static void mutate(int fd)
{
	static const uint64_t huge[] = { MAX_FILE, MAX_FILE + 1, (uint64_t)1 << 34 };
	static const struct field names[] = {
		F(struct loom_flight_hdr, node, 64), F(struct loom_flight_hdr, host, 64),
		F(struct loom_flight_hdr, job, 24), F(struct loom_flight_hdr, step, 24),
	};
	struct loom_flight_hdr h;
	struct stat st;
	uint64_t size, slot, off, v;
	uint32_t nops, i, k;
	const struct field *f;
	unsigned char b;
	memset(&h, 0, sizeof h);
	if (fstat(fd, &st) || pread(fd, &h, sizeof h, 0) < 0)
		return;
	size = (uint64_t)st.st_size;
	nops = h.nops && h.nops <= LOOM_FLIGHT_MAX_OPS && !(h.nops & (h.nops - 1)) ? h.nops : 8;
	slot = SLOT + (uint64_t)nops * OP;
	i = below(4) ? below(h.nslots_used < 4 ? 4 : 8) : below(LOOM_FLIGHT_SLOTS + 2);
	switch (below(11)) {
	case 0:         /* random bytes at random offsets, most in the header and slots */
		for (k = 1 + below(8); k; k--) {
			switch (below(4)) {
			case 0: case 1: off = below(HDR); break;
			case 2: off = HDR + i * slot + below(SLOT); break;
			default: off = size ? rnd64() % size : 0;
			}
			b = (unsigned char)rnd();
			pwrite_all(fd, &b, 1, off);
		}
		say(" random bytes");
		break;
	case 1:         /* a header field */
		f = &hfields[below(NF(hfields))];
		set_field(fd, f->off, f->w, f->name);
		break;
	case 2:         /* a ring of another size, the file size to match, the file as large (sparse) */
		nops = below(2) ? x32() : 1u << below(18);
		v = HDR + LOOM_FLIGHT_SLOTS * (SLOT + (uint64_t)nops * OP);
		pwrite_all(fd, &nops, 4, offsetof(struct loom_flight_hdr, nops));
		pwrite_all(fd, &v, 8, offsetof(struct loom_flight_hdr, file_size));
		if (below(2) && v < ((uint64_t)1 << 40) && ftruncate(fd, (off_t)v))
			say(" (ftruncate failed)");
		say(" nops=%u file_size=%llu", nops, (unsigned long long)v);
		break;
	case 3: case 4: /* a slot field */
		f = &sfields[below(NF(sfields))];
		say(" slot %u", i);
		set_field(fd, HDR + i * slot + f->off, f->w, f->name);
		break;
	case 5:         /* an operation field: the newest's or any */
		if (pread(fd, &v, 8, HDR + i * slot + offsetof(struct loom_flight_slot, posted)) != 8)
			v = 0;
		k = below(2) ? (uint32_t)(v & (nops - 1)) : below(nops);
		f = &ofields[below(NF(ofields))];
		say(" slot %u op %u", i, k);
		set_field(fd, HDR + i * slot + SLOT + (uint64_t)k * OP + f->off, f->w, f->name);
		break;
	case 6:         /* a name */
		if (below(2)) {
			say(" slot %u", i);
			set_name(fd, HDR + i * slot + offsetof(struct loom_flight_slot, name), 64,
				 "name");
		} else {
			f = &names[below(NF(names))];
			set_name(fd, f->off, (size_t)f->w, f->name);
		}
		break;
	case 7:         /* truncated */
		v = below(4) ? rnd64() % (size + 1) : below(2) ? HDR - 1 : HDR;
		say(" truncated to %llu", (unsigned long long)v);
		if (ftruncate(fd, (off_t)v))
			say(" (failed)");
		break;
	case 8:         /* extended, a little or to a sparse giant */
		v = below(2) ? size + 1 + below(1 << 16) : huge[below(NF(huge))];
		say(" extended to %llu", (unsigned long long)v);
		if (ftruncate(fd, (off_t)v))
			say(" (failed)");
		break;
	case 9:         /* sequence numbers at an extreme, consistent: the ring holds the newest */
		v = x64();
		if (!v)
			v = 1;
		off = HDR + i * slot;
		pwrite_all(fd, &v, 8, off + offsetof(struct loom_flight_slot, posted));
		pwrite_all(fd, &v, 8, off + offsetof(struct loom_flight_slot, done));
		pwrite_all(fd, &v, 8, off + SLOT + (v & (nops - 1)) * OP);
		say(" slot %u posted=done=%llu", i, (unsigned long long)v);
		break;
	default:        /* a kind out of range at the newest operation */
		if (pread(fd, &v, 8, HDR + i * slot + offsetof(struct loom_flight_slot, posted)) != 8)
			v = 0;
		k = below(2) ? x32() : below(LOOM_FLIGHT_NKINDS + 1);
		pwrite_all(fd, &k, 4, HDR + i * slot + SLOT + (v & (nops - 1)) * OP +
			   offsetof(struct loom_flight_op, kind));
		say(" slot %u newest kind=%u", i, k);
	}
}

/* ---- the contract ---- */

static int nacc, nrej, nbad, nstuck, nnamed, nmismatch, nbudget;

static void violated(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violated(const char *fmt, ...)
{
	va_list ap;
	if (nbad++ >= 5)
		return;
	va_start(ap, fmt);
	tap_vdiag(fmt, ap);
	va_end(ap);
	diag("  iteration %d:%s", iter, desc);
}

/* text for a terminal: printable ASCII, and newlines where nl */
static int clean_text(const char *t, size_t n, int nl)
{
	size_t i;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)t[i];
		if ((c < 0x20 || c >= 0x7f) && !(c == '\n' && nl))
			return 0;
	}
	return 1;
}

/* a string field: terminated within n and printable */
static int field_ok(const char *f, size_t n)
{
	const char *z = memchr(f, 0, n);
	return z && clean_text(f, (size_t)(z - f), 0);
}

/* 0, 1, 2, then about doubling, and n - 1 last */
static uint32_t next_sample(uint32_t t, uint32_t n)
{
	if (t < 2 || t + 1 == n)
		return t + 1;
	t = t * 2 + below(3);
	return t < n ? t : n - 1;
}

/* an accepted record against the header's rules and the file itself */
static void check_rec(const struct loom_flight_rec *r, int fd, uint64_t fsize)
{
	const struct loom_flight_hdr *h = &r->h;
	uint64_t fslot = SLOT + (uint64_t)h->nops * OP, seq, want;
	uint32_t i, t;
	want = h->nslots_used < h->nslots ? h->nslots_used : h->nslots;
	if (memcmp(h->magic, LOOM_FLIGHT_MAGIC, 8) || h->version != LOOM_FLIGHT_VERSION ||
	    h->hdr_size != HDR || h->slot_size != SLOT || h->op_size != OP ||
	    h->nslots != LOOM_FLIGHT_SLOTS || !h->nops || h->nops > LOOM_FLIGHT_MAX_OPS ||
	    (h->nops & (h->nops - 1)) || h->file_size != HDR + h->nslots * fslot ||
	    fsize < h->file_size) {
		violated("%s: accepted with sizes %u/%u/%u, %u slots of %u ops, %llu bytes of %llu",
			 r->path, h->hdr_size, h->slot_size, h->op_size, h->nslots, h->nops,
			 (unsigned long long)h->file_size, (unsigned long long)fsize);
		return;
	}
	if (h->size < 1 || h->size > LOOM_FLIGHT_MAX_RANKS || h->rank < 0 || h->rank >= h->size) {
		violated("%s: accepted as rank %d of %d", r->path, h->rank, h->size);
		return;
	}
	if (r->nslots != want || r->nops > LOOM_FLIGHT_KEEP_OPS ||
	    r->nops != (h->nops < LOOM_FLIGHT_KEEP_OPS ? h->nops : LOOM_FLIGHT_KEEP_OPS) ||
	    r->slot_bytes != SLOT + (size_t)r->nops * OP || (r->nslots && !r->slots)) {
		violated("%s: kept %u slots of %u ops (%zu bytes each)", r->path, r->nslots,
			 r->nops, r->slot_bytes);
		return;
	}
	if (!field_ok(h->node, sizeof h->node) || !field_ok(h->host, sizeof h->host) ||
	    !field_ok(h->job, sizeof h->job) || !field_ok(h->step, sizeof h->step)) {
		violated("%s: a header name unterminated or with a control byte", r->path);
		return;
	}
	for (i = 0; i < r->nslots; i++) {
		const struct loom_flight_slot *s = (const void *)((const char *)r->slots +
								  i * r->slot_bytes);
		const struct loom_flight_op *ops = loom_flight_ops(r, s);
		struct loom_flight_op o;
		if (!s->used)
			continue;
		if (s->used != 1 || !field_ok(s->name, sizeof s->name) || s->size < 1 ||
		    s->size > h->size || s->rank < 0 || s->rank >= s->size || s->first_wrank < 0 ||
		    s->first_wrank >= h->size || s->done > s->posted) {
			violated("%s: slot %u accepted as rank %d of %d, first %d, done %llu of %llu",
				 r->path, i, s->rank, s->size, s->first_wrank,
				 (unsigned long long)s->done, (unsigned long long)s->posted);
			return;
		}
		/* the newest r->nops operations are the file's, at seq & (nops - 1):
		 * a sample of them, the oldest kept included */
		for (t = 0; t < r->nops; t = next_sample(t, r->nops)) {
			seq = s->posted - t;
			if (pread(fd, &o, sizeof o, (off_t)(HDR + i * fslot + SLOT +
							    (seq & (h->nops - 1)) * OP)) != sizeof o)
				memset(&o, 0, sizeof o);      /* a hole past the end */
			if (memcmp(&o, &ops[seq & (r->nops - 1)], sizeof o)) {
				violated("%s: slot %u: operation %llu kept is not the file's",
					 r->path, i, (unsigned long long)seq);
				return;
			}
		}
	}
}

static void check_file(const char *path)
{
	struct loom_flight_rec r;
	struct stat st;
	char err[700];
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), rc;
	err[0] = 0;
	rc = loom_flight_read(path, &r, err, sizeof err);
	if (!rc) {
		nacc++;
		if (fd < 0 || fstat(fd, &st))
			violated("%s: accepted, but not here", path);
		else
			check_rec(&r, fd, (uint64_t)st.st_size);
		loom_flight_rec_clear(&r);
	} else {
		nrej++;
		if (!err[0] || strncmp(err, path, strlen(path)) || !clean_text(err, strlen(err), 0))
			violated("%s: rejected with message '%s' (empty, not naming it, more than "
				 "a line, or a control byte)", path, err);
		if (r.slots)
			violated("%s: rejected, its slots kept", path);
	}
	if (fd >= 0)
		close(fd);
}

struct seen {
	int bad;
};

static void on_bad(const char *msg, void *arg)
{
	struct seen *s = arg;
	s->bad++;
	if (!msg[0] || !clean_text(msg, strlen(msg), 0))
		violated("read_dir: a bad file's message '%s'", msg);
}

static const char *const types[] = { "waiting", "behind", "missing", "mismatch" };

static void sink_finding(void *arg, const char *comm, const char *job, const char *step,
			 const char *type, const char *text)
{
	size_t k;
	for (k = 0; k < NF(types) && strcmp(type, types[k]); k++)
		;
	if (k == NF(types) || !clean_text(comm, strlen(comm), 0) ||
	    !clean_text(text, strlen(text), 0) || !clean_text(job, strlen(job), 0) ||
	    !clean_text(step, strlen(step), 0))
		violated("hang analysis: finding '%s' of type %s", text, type);
	if (k == 3)
		nmismatch++;
}

static void sink_comm(void *arg, const char *comm, const char *name, int size,
		      uint64_t last_posted, int stuck, const int *world_ranks, int n)
{
	int i;
	if (n < 0 || n > size || size < 1 || size > LOOM_FLIGHT_MAX_RANKS ||
	    !clean_text(comm, strlen(comm), 0) || !clean_text(name, strlen(name), 0))
		violated("hang analysis: communicator of %d ranks, %d recorded", size, n);
	for (i = 0; i < n; i++)
		if (world_ranks[i] < 0 || world_ranks[i] >= LOOM_FLIGHT_MAX_RANKS) {
			violated("hang analysis: world rank %d", world_ranks[i]);
			break;
		}
}

static double epoch(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the directory through read_dir within a budget, then both analyses */
static void analyse_dir(void)
{
	static const struct loom_flight_sink sink = { sink_finding, sink_comm };
	struct loom_flight_budget b;
	struct loom_flight_rec *recs;
	struct seen seen = { 0 };
	char err[700], v[1200], *text = NULL;
	size_t len = 0;
	double now = below(8) ? epoch() : xdbl();
	uint64_t last = below(4) ? LOOM_FLIGHT_SLOW_LAST : x64(), until = below(2) ? 0 : x64();
	int n, i, rc, skipped;
	FILE *f;
	memset(&b, 0, sizeof b);
	if (!below(4))
		b.max_bytes = (size_t)below(4) << 16;
	if (!below(8))
		b.max_files = 1 + below(3);
	n = loom_flight_read_dir(idir, &recs, err, sizeof err, on_bad, &seen, &b);
	if (n < 0) {
		violated("read_dir: %s", err);
		return;
	}
	nbudget += b.skipped_files + b.skipped_bytes > 0;
	if (b.bytes > (b.max_bytes ? b.max_bytes : LOOM_FLIGHT_READ_BYTES) ||
	    b.files > (b.max_files ? b.max_files : LOOM_FLIGHT_READ_FILES) ||
	    (size_t)n + (size_t)seen.bad + b.skipped_bytes != b.files)
		violated("read_dir: %d read, %d bad, %zu/%zu files, %zu bytes of %zu, %zu skipped",
			 n, seen.bad, b.files, b.skipped_files, b.bytes, b.max_bytes,
			 b.skipped_bytes);
	for (i = 1; i < n; i++)
		if (strcmp(recs[i - 1].path, recs[i].path) >= 0)
			violated("read_dir: records not sorted");
	say(" now=%g last=%llu until=%llu", now, (unsigned long long)last,
	    (unsigned long long)until);
	rc = loom_flight_analyse(recs, n, now, &sink, NULL, v, sizeof v, &skipped);
	if (rc < 0 || rc > 1 || !v[0] || !clean_text(v, strlen(v), 0) || skipped < 0)
		violated("hang analysis: returned %d, verdict '%s'", rc, v);
	nstuck += rc == 1;
	if (!(f = open_memstream(&text, &len)))
		bail_out("open_memstream failed");
	rc = loom_flight_report(f, recs, n, now);
	i = loom_flight_slow_report(f, recs, n, last, until);
	fclose(f);
	if (rc < 0 || rc > 1 || i < 0 || i > 1 || !len || text[len - 1] != '\n' ||
	    !clean_text(text, len, 1) || !strstr(text, "verdict: "))
		violated("reports: returned %d and %d, text '%.300s'", rc, i, text ? text : "");
	nnamed += i == 1;
	free(text);
	for (i = 0; i < n; i++)
		loom_flight_rec_clear(&recs[i]);
	free(recs);
}

/* ---- one iteration ---- */

/* the records of ranks 0 .. n - 1 against the contract, the directory
 * through both analyses, bounded in time; then emptied */
static void check_dir(int n)
{
	char path[800];
	int r;
	alarm(60);
	for (r = 0; r < n; r++) {
		snprintf(path, sizeof path, "%s/step0-rank%d.flight", idir, r);
		check_file(path);
	}
	analyse_dir();
	alarm(0);
	for (r = 0; r < n; r++) {
		snprintf(path, sizeof path, "%s/step0-rank%d.flight", idir, r);
		unlink(path);
	}
	snprintf(path, sizeof path, "%s/fifo.flight", idir);
	unlink(path);
	snprintf(path, sizeof path, "%s/link.flight", idir);
	unlink(path);
	snprintf(path, sizeof path, "%s/dir.flight", idir);
	rmdir(path);
}

static void one(void)
{
	struct plan p;
	char path[800], name[64];
	int r, fd, writer = !below(4);
	desc[0] = 0;
	if (writer)
		writer_plan(&p);
	else
		random_plan(&p);
	if (writer) {
		memcpy(&p.like, wimg, HDR);
		snprintf(p.like.host, sizeof p.like.host, "elsewhere");
	}
	say(" %d of %d ranks, %u ops, %d comms, %llu posted%s%s", p.nranks, p.wsize, p.nops,
	    p.ncomm, (unsigned long long)p.posted, writer ? ", the writer's" : "",
	    p.stuck ? ", stuck" : "");
	for (r = 0; r < p.nranks; r++) {
		snprintf(path, sizeof path, "%s/step0-rank%d.flight", idir, r);
		if (writer && r == 0) {
			fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			if (fd < 0 || pwrite_all(fd, wimg, wlen, 0))
				bail_out("cannot write %s", path);
			close(fd);
		} else if (build(path, &p, r)) {
			bail_out("cannot write %s: %s", path, strerror(errno));
		}
		if (below(4)) {
			int k;
			if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
				bail_out("cannot open %s", path);
			say(";%d:", r);
			for (k = 1 + (int)below(3); k; k--)
				mutate(fd);
			close(fd);
		}
	}
	/* now and then something that is no record at all */
	switch (below(16)) {
	case 0:
		snprintf(path, sizeof path, "%s/fifo.flight", idir);
		if (mkfifo(path, 0600))
			bail_out("mkfifo %s: %s", path, strerror(errno));
		say("; a FIFO");
		break;
	case 1:
		snprintf(path, sizeof path, "%s/link.flight", idir);
		snprintf(name, sizeof name, "step0-rank0.flight");
		if (symlink(name, path))
			bail_out("symlink %s: %s", path, strerror(errno));
		say("; a link");
		break;
	case 2:
		snprintf(path, sizeof path, "%s/dir.flight", idir);
		if (mkdir(path, 0700))
			bail_out("mkdir %s: %s", path, strerror(errno));
		say("; a directory");
		break;
	}
	check_dir(p.nranks);
}

/* Cases a random run once found, made every time */
static void regressions(void)
{
	struct plan p;
	char path[800];
	uint64_t v = UINT64_MAX, off = HDR;
	struct loom_flight_op o;
	int r, fd, before = nbad;
	/* a communicator at posted = done = UINT64_MAX, the ring holding
	 * it: the hang analysis's walk up to the newest number wrapped past
	 * it to 0 and never ended */
	writer_plan(&p);
	memcpy(&p.like, wimg, HDR);
	desc[0] = 0;
	say(" regression: world at posted = done = UINT64_MAX");
	for (r = 0; r < p.nranks; r++) {
		snprintf(path, sizeof path, "%s/step0-rank%d.flight", idir, r);
		op_of(&p, 0, r, 5, &o);
		o.seq = v;
		if (build(path, &p, r) || (fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
			bail_out("cannot write %s", path);
		if (pwrite_all(fd, &v, 8, off + offsetof(struct loom_flight_slot, posted)) ||
		    pwrite_all(fd, &v, 8, off + offsetof(struct loom_flight_slot, done)) ||
		    pwrite_all(fd, &o, sizeof o, off + SLOT + (v & (p.nops - 1)) * OP))
			bail_out("cannot write %s", path);
		close(fd);
	}
	r = nacc;
	check_dir(p.nranks);
	ok(nbad == before && nacc == r + p.nranks,
	   "a communicator at operation UINT64_MAX: accepted, both analyses return");
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 300;
	unsigned long long seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	char cmd[700];
	plan(NO_PLAN);
	signal(SIGALRM, on_alarm);
	rs ^= seed * 0x9e3779b97f4a7c15ULL;
	if (!rs)
		rs = 1;
	if (gethostname(here, sizeof here - 1))
		here[0] = 0;
	if (!mkdtemp(top))
		bail_out("mkdtemp failed");
	snprintf(wdir, sizeof wdir, "%s/w", top);
	snprintf(idir, sizeof idir, "%s/i", top);
	if (mkdir(idir, 0700))
		bail_out("mkdir %s failed", idir);
	make_writer_record();
	regressions();
	for (iter = 0; iter < iters; iter++)
		one();
	diag("%d iterations (seed %llu): %d files accepted, %d rejected; %d hangs and %d "
	     "stragglers named, %d mismatches found, %d directories past a budget", iters, seed,
	     nacc, nrej, nstuck, nnamed, nmismatch, nbudget);
	ok(nbad == 0, "every file accepted within the bounds or rejected with a one-line "
	   "message, the analyses' text clean (%d violations)", nbad);
	ok(nacc > 0 && nrej > 0, "the reader both accepted and rejected files");
	if (iters >= 100)
		ok(nstuck > 0 && nnamed > 0 && nmismatch > 0 && nbudget > 0,
		   "the analyses found hangs, stragglers and mismatches; a budget left files out");
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
	if (system(cmd))
		diag("could not remove %s", top);
	free(wimg);
	done_testing();
	return exit_status();
}
