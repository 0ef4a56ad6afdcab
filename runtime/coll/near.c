/* runtime/coll/near.c: how a one-node communicator's large collectives
 * write the ring slots (coll_staged.c): with cached stores, or with
 * streaming stores that send each line to memory, from how fast its
 * ranks' cores hand a cache line over.
 *
 * The staged path moves every byte through a slot: written by one rank,
 * read by another. Between cores that share a cache the reader finds the
 * line there, the fastest way. Between cores that do not (other sockets,
 * other core complexes), it takes the line from the writer's cache,
 * several times slower than from memory: there streamed slots beat both
 * cached ones and direct reads (coll_direct.c), and near they lose to
 * cached ones. A host may move a virtual machine's CPUs between the two
 * placements as it runs, so the ranks look again now and then.
 *
 * Two ranks on one CPU keep cached stores: each hand-off stays in that
 * CPU's cache, though every fast-box allreduce then waits for a context
 * switch.
 *
 * So the ranks look, together, at the first such call and again once
 * LOOM_NEAR_EVERY calls or LOOM_NEAR_BYTES of results have gone by (the
 * same calls on every rank, as every rank makes the same plan): one
 * fast-box allreduce to meet, then LOOM_NEAR_BATCHES timed batches of
 * LOOM_NEAR_ROUNDS, each rank keeping its fastest batch's mean and the
 * CPU it runs on, shared by a fast-box allgather, so that every rank
 * takes the same decision. When no two ranks share a CPU and the slowest
 * rank's mean is above LOOM_NEAR_NS (between the slowest near hand-off
 * and the fastest far one measured: docs/algorithms.md), the slots are
 * streamed until the next look. A mean above LOOM_NEAR_UNSURE_NS on CPUs
 * of their own says that a rank was kept off its CPU meanwhile, not
 * where the cores are: the ranks keep their way and look again at the
 * next call, up to LOOM_NEAR_UNSURE_TRIES times in a row. Either way
 * block r of an allreduce is reduced by rank r in the order r, r+1, ...,
 * r-1: the results do not depend on the choice (t2008 checks).
 * LOOM_STAGED=1 keeps cached stores and =stream streaming ones, with no
 * measuring; =0 takes direct reads. */
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
	if (!strcmp(v, "stream"))
		return LOOM_STAGED_STREAM;
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

int loom_cached_slots(uint64_t worst_ns, int cpus_shared)
{
	return cpus_shared || worst_ns <= LOOM_NEAR_NS;
}

int loom_look_unsure(uint64_t worst_ns, int cpus_shared, int tries)
{
	return !cpus_shared && worst_ns > LOOM_NEAR_UNSURE_NS && tries < LOOM_NEAR_UNSURE_TRIES;
}

int loom_near_due(uint64_t calls, uint64_t bytes)
{
	return calls == 0 || calls >= LOOM_NEAR_EVERY || bytes >= LOOM_NEAR_BYTES;
}

static int mode(struct loom_comm *c, struct loom_coll_state *st)
{
	static _Atomic int warned;  /* once a process, not once a communicator */
	if (!st->staged_mode) {
		const char *v = getenv("LOOM_STAGED");
		int m = loom_staged_mode_parse(v);
		if (m < 0) {
			if (!warned++)
				LOOM_WARN("LOOM_STAGED=%s: not auto, 1, stream or 0; taking auto", v);
			m = LOOM_STAGED_AUTO;
		}
		st->staged_mode = m;
		st->near_far = m == LOOM_STAGED_STREAM;
		if (m != LOOM_STAGED_AUTO)
			LOOM_INFO("comm %s: LOOM_STAGED=%s: large collectives in the node by %s", c->name,
				  v, m == LOOM_STAGED_NEVER ? "direct reads"
				     : m == LOOM_STAGED_STREAM ? "streamed slots" : "the ring slots");
	}
	return st->staged_mode;
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
static int look_again(struct loom_comm *c, struct loom_coll_state *st, struct loom_opctx *o)
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
		if (loom_look_unsure(worst, shared, st->near_unsure)) {
			/* a rank was kept off its CPU: keep the way, look at the next call */
			LOOM_INFO("comm %s: a fast-box allreduce takes %llu ns, a rank kept off its CPU: looking again at the next call",
				  c->name, (unsigned long long)worst);
			st->near_unsure++;
			goto out;
		}
		st->near_unsure = 0;
		far = !loom_cached_slots(worst, shared);
		if (far != st->near_far || !st->near_looked)
			LOOM_INFO("comm %s: a fast-box allreduce takes %llu ns (limit %u)%s: large collectives in the node by %s",
				  c->name, (unsigned long long)worst, LOOM_NEAR_NS,
				  shared ? ", ranks share a CPU" : "",
				  far ? "streamed slots" : "the ring slots");
		st->near_far = far;
		st->near_looked = 1;
	}
out:
	free(all);
	free(cpu);
	return rc;
}

int loom_staged_wanted(struct loom_comm *c, size_t bytes, struct loom_opctx *o, int *rc)
{
	struct loom_coll_state *st = loom_coll_state_of(c);
	int m;
	if (!st) {
		*rc = LOOM_ERR_NOMEM;
		return 0;
	}
	m = mode(c, st);
	*rc = LOOM_SUCCESS;
	if (m == LOOM_STAGED_NEVER)
		return 0;
	if (m == LOOM_STAGED_AUTO) {
		if (st->near_unsure || loom_near_due(st->near_calls, st->near_bytes)) {
			st->near_calls = st->near_bytes = 0;
			if ((*rc = look_again(c, st, o)))
				return 0;
		}
		st->near_calls++;
		st->near_bytes += bytes;
	}
	return 1;
}
