/* runtime/coll/near.c: whether a one-node communicator's large
 * collectives go through the ring slots (coll_staged.c) or by direct reads
 * (coll_direct.c), from how fast its ranks' cores hand a cache line over.
 *
 * The staged path moves every byte from one rank's cache into another's:
 * fast between cores that share a cache, several times slower between
 * cores that do not, and slowest of all when two ranks share one core
 * (every 64 KiB hand-off then waits for a context switch). Direct reads
 * copy from memory in the kernel and do not care where the reader runs.
 * On the 2-core test VM the host moves the two virtual CPUs between
 * placements every few minutes, and 2 ranks bound to them run a 1 MiB
 * allreduce by the slots in 0.07-0.12 ms or 0.5-0.6 ms, 64 MiB in 7.3-9.5
 * or 33-36 ms, where direct reads take 0.1-0.15 and 14-19 ms in either.
 * The fastest batch of 8 fast-box allreduces then takes 73-196 ns or
 * 282-441 ns (145 runs, 2026-12-06): LOOM_NEAR_NS lies between.
 *
 * Two ranks on one CPU are another matter: there each hand-off stays in
 * that CPU's cache, and the slots beat direct reads by half (2 ranks
 * bound to one CPU: 16 MiB 3.4-4.7 against 7.4-9.2 ms; 3 ranks on the 2
 * CPUs, 16 MiB 4.4 against 8.4-9.2 ms), though every fast-box allreduce
 * then waits for a context switch (1.6-1.7 µs).
 *
 * So the ranks look, together, at the first such call and at every
 * LOOM_NEAR_EVERY-th one after (the same calls on every rank, as every
 * rank makes the same plan): one fast-box allreduce to meet, then
 * LOOM_NEAR_BATCHES timed batches of LOOM_NEAR_ROUNDS, each rank keeping
 * its fastest batch's mean and the CPU it runs on, shared by a fast-box
 * allgather, so that every rank takes the same decision. When no two
 * ranks share a CPU and the slowest rank's mean is above LOOM_NEAR_NS,
 * the communicator takes direct reads until the next look.
 * Either way block r of an allreduce is reduced by rank r in the order r,
 * r+1, ..., r-1: the results do not depend on the choice (t2008 checks).
 * LOOM_STAGED=1 keeps the slots and 0 direct reads, with no measuring;
 * so does LOOM_DIRECT_READS=0 (the slots). */
#include "coll/coll.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

int loom_staged_mode_parse(const char *v)
{
	if (!v || !*v || !strcmp(v, "auto"))
		return LOOM_STAGED_AUTO;
	if (!strcmp(v, "1"))
		return LOOM_STAGED_ALWAYS;
	if (!strcmp(v, "0"))
		return LOOM_STAGED_NEVER;
	return -1;
}

int loom_cpus_shared(const int32_t *cpu, int n)
{
	int i, j;
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (cpu[i] >= 0 && cpu[i] == cpu[j])
				return 1;
	return 0;
}

int loom_slots_chosen(uint64_t worst_ns, int cpus_shared)
{
	return cpus_shared || worst_ns <= LOOM_NEAR_NS;
}

static int mode(struct loom_comm *c)
{
	static _Atomic int warned;  /* once a process, not once a communicator */
	if (!c->staged_mode) {
		const char *v = getenv("LOOM_STAGED");
		int m = loom_staged_mode_parse(v);
		if (m < 0) {
			if (!warned++)
				LOOM_WARN("LOOM_STAGED=%s: not auto, 1 or 0; taking auto", v);
			m = LOOM_STAGED_AUTO;
		}
		/* the user turned direct reads off: the slots beat the rings
		 * that would take their place, with no look */
		if (m == LOOM_STAGED_AUTO && !loom_shm_direct_allowed())
			m = LOOM_STAGED_ALWAYS;
		c->staged_mode = m;
	}
	return c->staged_mode;
}

struct look {
	int64_t ns;   /* the mean fast-box allreduce of this rank's fastest batch */
	int32_t cpu;  /* where it ran right after (sched_getcpu), -1 unknown */
	int32_t pad;
};

/* every rank's look, through the fast boxes: each rank keeps its fastest
 * batch, since a placement lasts and a single late wake-up (a CPU the
 * host had parked) does not */
static int measure(struct loom_comm *c, struct loom_opctx *o, struct look *all)
{
	int32_t v[2] = { 1, 1 };
	struct look mine = { INT64_MAX, -1, 0 };
	const char *tv;
	int b, i, rc;
	if ((rc = loom_fbox_allreduce(c, (char *)v, 2, LOOM_INT32, LOOM_SUM, o)))
		return rc;
	for (b = 0; b < LOOM_NEAR_BATCHES; b++) {
		double t0 = loom_now();
		for (i = 0; i < LOOM_NEAR_ROUNDS; i++)
			if ((rc = loom_fbox_allreduce(c, (char *)v, 2, LOOM_INT32, LOOM_SUM, o)))
				return rc;
		int64_t t = (int64_t)((loom_now() - t0) * 1e9 / LOOM_NEAR_ROUNDS);
		if (t < mine.ns)
			mine.ns = t < 0 ? 0 : t;
	}
	mine.cpu = sched_getcpu();
	if ((tv = getenv("LOOM_TEST_NEAR_NS")))  /* t2008: a placement on demand */
		mine.ns = strtoll(tv, NULL, 10);
	return loom_fbox_allgather(c, (const char *)&mine, (char *)all, sizeof mine, o);
}

/* what every rank concludes alike from the same looks */
static int look_again(struct loom_comm *c, struct loom_opctx *o)
{
	struct look *all = calloc((size_t)c->size, sizeof *all);
	int32_t *cpu = calloc((size_t)c->size, sizeof *cpu);
	uint64_t worst = 0;
	int i, rc = all && cpu ? measure(c, o, all) : LOOM_ERR_NOMEM, shared, far;
	if (!rc) {
		for (i = 0; i < c->size; i++) {
			cpu[i] = all[i].cpu;
			if ((uint64_t)all[i].ns > worst)
				worst = (uint64_t)all[i].ns;
		}
		shared = loom_cpus_shared(cpu, c->size);
		far = !loom_slots_chosen(worst, shared);
		if (far != c->near_far || c->near_calls == 1)
			LOOM_INFO("comm %s: a fast-box allreduce takes %llu ns (limit %u)%s: large collectives in the node by %s",
				  c->name, (unsigned long long)worst, LOOM_NEAR_NS,
				  shared ? ", ranks share a CPU" : "",
				  far ? "direct reads" : "the ring slots");
		c->near_far = far;
	}
	free(all);
	free(cpu);
	return rc;
}

int loom_staged_wanted(struct loom_comm *c, struct loom_opctx *o, int *rc)
{
	int m = mode(c);
	*rc = LOOM_SUCCESS;
	if (m != LOOM_STAGED_AUTO)
		return m == LOOM_STAGED_ALWAYS;
	/* the kernel refused direct reads at a first try: the slots */
	if (*loom_shm_direct(c) < 0)
		return 1;
	if (c->near_calls++ % LOOM_NEAR_EVERY == 0 && (*rc = look_again(c, o)))
		return 0;
	return !c->near_far;
}
