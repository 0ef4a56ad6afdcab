/* runtime/coll/coll_state.h: what coll/ keeps of a communicator from one
 * operation to the next. struct loom_comm holds only a pointer to it
 * (comm/ is below coll/ and never looks inside): made at its first use
 * by loom_coll_state_of, freed with the communicator by the destructor
 * that leaves in c->coll_free. One operation at a time runs on a
 * communicator (its exec lock; a sub-communicator inside its parent's
 * operation), so nothing here is locked. */
#ifndef LOOM_COLL_COLL_STATE_H
#define LOOM_COLL_COLL_STATE_H

#include "comm/comm.h"

struct loom_coll_state {
	/* xfer.c: where the TCP receive-reduces of an operation land, kept */
	char *scratch;
	size_t scratch_len;
	int scratch_busy;
	int sleepy;        /* xfer.c: waits in a row that ended asleep */
	char *direct_tmp;  /* coll_direct.c: two chunks, kept (a fresh 256 KiB a
			    * call is an mmap and 64 page faults) */
	char *stage_tmp;   /* coll_staged.c: a chunk reduced before it is
			    * streamed out (cores far apart) */
	char *reduce_out;  /* coll_hier.c: a non-root's copy of a large reduce
			    * by allreduce, kept up to 64 MiB */
	size_t reduce_out_len;
	/* near.c: LOOM_STAGED (0: not read yet), the calls that took the
	 * slots and their bytes since the last look, whether the ranks
	 * looked yet, looks set aside in a row, and whether the slots are
	 * streamed (cores far apart) */
	int staged_mode;
	uint64_t near_calls, near_bytes;
	int near_looked, near_unsure;
	int near_far;
};

/* c's state, made now if it has none; NULL: no memory */
struct loom_coll_state *loom_coll_state_make(struct loom_comm *c);
static inline struct loom_coll_state *loom_coll_state_of(struct loom_comm *c)
{
	return c->coll ? c->coll : loom_coll_state_make(c);
}

#endif
