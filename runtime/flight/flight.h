/* runtime/flight/flight.h: the flight recorder. Each rank keeps, in a
 * file-backed shared mapping under LOOM_FLIGHT_DIR, a ring of the last
 * LOOM_FLIGHT_OPS collectives of each of its communicators (and its last
 * point-to-point), written with plain stores: the file is readable while
 * the rank hangs and after it is killed. The reader side (flight_read.c,
 * flight_verdict.c) serves loom-doctor and the runtime's timeout lines.
 * The format is docs/flight-format.md. Knows no communicator object. */
#ifndef LOOM_FLIGHT_FLIGHT_H
#define LOOM_FLIGHT_FLIGHT_H

#include "util/util.h"

#include <stdio.h>

#define LOOM_FLIGHT_MAGIC "LOOMFLT"     /* 8 bytes with its NUL */
#define LOOM_FLIGHT_VERSION 1
#define LOOM_FLIGHT_SLOTS 32            /* communicators per rank file */
#define LOOM_FLIGHT_MAX_OPS 65536
#define LOOM_FLIGHT_MAX_RANKS (1 << 20)

/* kinds: the collectives keep comm.h's LOOM_OP_* numbers (1..7) */
enum { LOOM_FLIGHT_SEND = 8, LOOM_FLIGHT_RECV = 9, LOOM_FLIGHT_NKINDS };
enum { LOOM_FLIGHT_POSTED = 1, LOOM_FLIGHT_DONE, LOOM_FLIGHT_FAILED };

struct loom_flight_hdr {          /* 256 bytes at offset 0 */
	char magic[8];
	uint32_t version, hdr_size, slot_size, op_size;
	uint32_t nslots, nops;        /* nops: a power of two */
	uint64_t file_size;
	int32_t rank, size, pid;      /* world rank and size */
	_Atomic uint32_t finalized;   /* 1 in loom_finalize, 2 done */
	double real_minus_mono;       /* add to a time below for the epoch */
	double started;               /* monotonic */
	_Atomic uint32_t nslots_used;
	uint32_t pad0;
	char node[64], host[64];      /* Slurm node name, gethostname */
	char job[24], step[24];
};

struct loom_flight_op {           /* 64 bytes */
	_Atomic uint64_t seq;         /* written last on post */
	uint32_t kind;
	_Atomic uint32_t state;
	uint64_t count;
	int32_t dtype, op, root, status;
	double t_post, t_end;
	uint64_t pad;
};

struct loom_flight_slot {         /* 256 bytes, then nops ops */
	_Atomic uint32_t used;        /* 1 once the fields below are set */
	_Atomic uint32_t freed;
	int32_t rank, size;           /* in the communicator */
	int32_t first_wrank;          /* world rank of its rank 0 */
	uint32_t pad0;
	uint64_t ctx;
	char name[64];
	_Atomic uint64_t posted, done;  /* last collective seq posted, finished */
	/* point to point: counts, and the last one posted */
	_Atomic uint64_t p2p_posted, p2p_done;
	struct loom_flight_op p2p_last;
	char pad[256 - 128 - sizeof(struct loom_flight_op)];
};

/* ---- the writer (flight_rec.c) ---- */
/* Open this rank's record (once per process; LOOM_FLIGHT_DIR unset or
 * LOOM_FLIGHT_OPS=0: recording off). Then a slot per communicator, NULL
 * when off or when the slots are spent. */
struct loom_flight_slot *loom_flight_slot_new(int wrank, int wsize, const char *name, uint64_t ctx,
					      int rank, int size, int first_wrank);
void loom_flight_slot_rename(struct loom_flight_slot *s, const char *name);
void loom_flight_slot_free(struct loom_flight_slot *s);
/* 1: in loom_finalize, 2: finalized */
void loom_flight_finalized(int how);
/* the directory records go to, NULL when recording is off */
const char *loom_flight_dir(void);

/* A collective posted at monotonic time t: its seq (1, 2, ...) */
static inline uint64_t loom_flight_post(struct loom_flight_slot *s, int kind, uint64_t count,
					int dtype, int op, int root, double t)
{
	extern uint32_t loom_flight_mask;
	uint64_t seq = atomic_load_explicit(&s->posted, memory_order_relaxed) + 1;
	struct loom_flight_op *o = (struct loom_flight_op *)(s + 1) + (seq & loom_flight_mask);
	atomic_store_explicit(&o->seq, 0, memory_order_relaxed);
	atomic_store_explicit(&o->state, LOOM_FLIGHT_POSTED, memory_order_relaxed);
	o->kind = (uint32_t)kind;
	o->count = count;
	o->dtype = dtype;
	o->op = op;
	o->root = root;
	o->status = 0;
	o->t_post = t;
	o->t_end = 0;
	atomic_store_explicit(&o->seq, seq, memory_order_release);
	atomic_store_explicit(&s->posted, seq, memory_order_release);
	return seq;
}

/* The collective seq ended with status rc at time t */
static inline void loom_flight_end(struct loom_flight_slot *s, uint64_t seq, int rc, double t)
{
	extern uint32_t loom_flight_mask;
	struct loom_flight_op *o = (struct loom_flight_op *)(s + 1) + (seq & loom_flight_mask);
	if (atomic_load_explicit(&o->seq, memory_order_relaxed) == seq) {
		o->status = rc;
		o->t_end = t;
		atomic_store_explicit(&o->state, rc ? LOOM_FLIGHT_FAILED : LOOM_FLIGHT_DONE,
				      memory_order_release);
	}
	if (seq > atomic_load_explicit(&s->done, memory_order_relaxed))
		atomic_store_explicit(&s->done, seq, memory_order_release);
}

void loom_flight_p2p_post(struct loom_flight_slot *s, int is_send, uint64_t count, int dtype,
			  int peer, double t);
void loom_flight_p2p_end(struct loom_flight_slot *s, int rc, double t);

/* ---- the reader (flight_read.c) ---- */
/* What a reader takes from a file, whoever made it: the slots in use
 * (at most the writer's LOOM_FLIGHT_SLOTS), each with its newest
 * LOOM_FLIGHT_KEEP_OPS operations at most, so one record costs at most
 * 32 x (256 + 1024 x 64) bytes however large the file says it is. */
#define LOOM_FLIGHT_KEEP_OPS 1024
/* Default limits of loom_flight_read_dir: files looked at, bytes kept */
#define LOOM_FLIGHT_READ_FILES 16384
#define LOOM_FLIGHT_READ_BYTES ((size_t)512 << 20)
struct loom_flight_rec {
	char path[512];
	struct loom_flight_hdr h;         /* as in the file; the strings cleaned */
	struct loom_flight_slot *slots;   /* nslots of them, each with nops ops */
	size_t slot_bytes;
	uint32_t nslots, nops;            /* slots read (those in use), ops kept per slot */
	int gone;                         /* its pid is known dead (same host) */
};
/* Limits over one or several loom_flight_read_dir calls, and what they
 * left out (zero it; max 0: the defaults above) */
struct loom_flight_budget {
	size_t max_files, max_bytes;
	size_t files, bytes;              /* looked at, kept */
	size_t skipped_files, skipped_bytes;  /* left out by each limit */
};
const char *loom_flight_kind_name(int kind);
/* src into dst (size n) with every byte outside printable ASCII written
 * as \xNN, cut short rather than in an escape: names in record files and
 * directories are anybody's, and a terminal obeys ESC sequences. */
void loom_flight_clean(char *dst, size_t n, const char *src);
/* Read and check one record file. 0, or -1 with a message naming the file
 * in err. */
int loom_flight_read(const char *path, struct loom_flight_rec *r, char *err, size_t errlen);
void loom_flight_rec_clear(struct loom_flight_rec *r);
static inline const struct loom_flight_op *loom_flight_ops(const struct loom_flight_rec *r,
							    const struct loom_flight_slot *s)
{
	(void)r;
	return (const struct loom_flight_op *)(s + 1);
}
/* operation seq of slot s, when the reader kept it */
static inline const struct loom_flight_op *loom_flight_op_at(const struct loom_flight_rec *r,
							      const struct loom_flight_slot *s,
							      uint64_t seq)
{
	const struct loom_flight_op *o;
	if (!seq)
		return NULL;
	o = loom_flight_ops(r, s) + (seq & (r->nops - 1));
	return o->seq == seq ? o : NULL;
}
/* Every *.flight file of dir (sorted), within budget (NULL: the default
 * limits for this call alone); bad ones are reported through
 * bad(path-message) and skipped, those past a limit only counted in
 * budget. Returns the count read, -1 when dir cannot be listed (err says
 * why). */
int loom_flight_read_dir(const char *dir, struct loom_flight_rec **recs, char *err, size_t errlen,
			 void (*bad)(const char *msg, void *arg), void *arg,
			 struct loom_flight_budget *budget);

/* ---- the analysis (flight_verdict.c) ---- */
/* What the analysis finds, handed out as it goes (loom-doctor --json
 * builds its document from these; libloom itself writes no JSON) */
struct loom_flight_sink {
	/* one finding: type is "waiting", "behind", "missing" or "mismatch" */
	void (*finding)(void *arg, const char *comm, const char *job, const char *step,
			const char *type, const char *text);
	/* one communicator, after the findings: its members' world ranks */
	void (*comm)(void *arg, const char *comm, const char *name, int size,
		     uint64_t last_posted, int stuck, const int *world_ranks, int n);
};
/* The findings of the records into sink, the verdict into verdict (size
 * vlen), the communicator slots left out (beyond LOOM_FLIGHT_MAX_MEMBERS)
 * into *skipped. now: epoch seconds. Returns 1 when something is stuck,
 * 0 when not, -1 out of memory. */
#define LOOM_FLIGHT_MAX_MEMBERS ((size_t)1 << 21)
int loom_flight_analyse(struct loom_flight_rec *recs, int n, double now,
			const struct loom_flight_sink *sink, void *arg, char *verdict, size_t vlen,
			int *skipped);
/* The same as text into f: one line a finding, then the verdict. */
int loom_flight_report(FILE *f, struct loom_flight_rec *recs, int n, double now);
/* The verdict alone, for a log line (buf gets "" when there is none). */
void loom_flight_verdict(char *buf, size_t len);
/* log that verdict as an error line, when there is one (after a timeout
 * or a lost peer) */
void loom_flight_log_verdict(void);

#endif
