/* runtime/flight/flight_slow.h: which rank made the others wait, from the
 * flight records (loom-doctor --slow). Each rank's record holds, per
 * collective, when it posted its part and when the operation finished,
 * both on its own monotonic clock; clocks of different nodes are never
 * compared. At each operation the rank that waited least inside it
 * arrived last (it found the others there); the others' waits beyond
 * that shortest one are charged to it. The rule and its thresholds are
 * docs/flight-format.md's "Lateness". */
#ifndef LOOM_FLIGHT_FLIGHT_SLOW_H
#define LOOM_FLIGHT_FLIGHT_SLOW_H

#include "flight/flight.h"

#define LOOM_FLIGHT_SLOW_LAST 100       /* operations analysed by default */
#define LOOM_FLIGHT_SLOW_SCORE 0.5      /* a straggler's share of the waiting, at least */
#define LOOM_FLIGHT_SLOW_FAIR 1.5       /* ... and this many times a fair share (1/ranks) */
#define LOOM_FLIGHT_SLOW_MIN_S 0.001    /* ... and each other rank waited this long per op */

/* One rank of a communicator over the window analysed */
struct loom_flight_slow_rank {
	int rank;                 /* in the communicator */
	const struct loom_flight_rec *r;
	double caused;            /* the others' waiting charged to it, seconds */
	double waited;            /* its own waiting beyond each operation's shortest */
	double last;              /* operations it arrived last in (a tie shares one) */
	double span;              /* its clock's time from the first post to the last end */
	double score;             /* caused / all the waiting charged, 0-1 */
};

/* One communicator: the newest operations every recorded rank finished
 * (at most last of them, none newer than until when until is not 0) */
struct loom_flight_slow {
	int size, nr;             /* ranks in it, ranks recorded (r[] holds nr) */
	uint64_t first, end;      /* the oldest and newest sequence number analysed */
	int nops, kind;           /* operations analysed; their kind, 0 when mixed */
	double total;             /* all the waiting charged */
	struct loom_flight_slow_rank *r;  /* by caused, most first */
	int straggler;            /* 1 when r[0] passes the thresholds */
};

/* Analyse the members (m[i]: rank i's record and slot, NULL where there is
 * none) of one communicator into out (out->r allocated: free it). 0, or -1
 * when out of memory. */
int loom_flight_slow_comm(const struct loom_flight_rec *const *recs,
			  const struct loom_flight_slot *const *slots, int size, uint64_t last,
			  uint64_t until, struct loom_flight_slow *out);
/* What a report says of one communicator */
struct loom_flight_slow_view {
	const char *label;        /* "world", or "tp (world ranks 2,3)" */
	const char *name, *job, *step;
	int part;                 /* a part of the world: ranks also by world rank */
	const struct loom_flight_slow *a;
	const char *conclusion;   /* e.g. "world: rank 3 (n2) made the others wait ..." */
};
struct loom_flight_slow_sink {
	void (*comm)(void *arg, const struct loom_flight_slow_view *v);
};
/* Every communicator of recs into sink (flight_slow_report.c), the
 * verdict into verdict (size vlen), the communicator slots left out
 * (beyond LOOM_FLIGHT_MAX_MEMBERS) into *skipped. Returns 1 when a
 * straggler is named, 0 when not, -1 when out of memory. */
int loom_flight_slow_analyse(struct loom_flight_rec *recs, int n, uint64_t last, uint64_t until,
			     const struct loom_flight_slow_sink *sink, void *arg, char *verdict,
			     size_t vlen, int *skipped);
/* The same as text into f: the ranks by the waiting they caused, each
 * communicator's conclusion, then the verdict. */
int loom_flight_slow_report(FILE *f, struct loom_flight_rec *recs, int n, uint64_t last,
			    uint64_t until);
/* seconds each other rank waited per operation for r */
double loom_flight_slow_per_op(const struct loom_flight_slow *a,
			       const struct loom_flight_slow_rank *r);
/* the operations' kind, or "collectives" when mixed */
const char *loom_flight_slow_kind(const struct loom_flight_slow *a);

#endif
