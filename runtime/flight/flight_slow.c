/* runtime/flight/flight_slow.c: the ranks that made the others wait
 * (loom-doctor --slow). Per communicator, over the newest operations that
 * every recorded rank finished: each rank's wait inside an operation is
 * its end minus its post, on its own clock; the rank with the shortest
 * wait arrived last, and the others' waits beyond that shortest one are
 * charged to it. Broadcast and reduce are left out: a root that arrives
 * first does not wait for the others, so the shortest wait there says
 * nothing of who came last. The cost is ranks x operations, bounded as
 * the hang verdict's walk is. */
#include "flight/flight_slow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* waits closer than this are a tie (the coarse clock makes many) */
#define TIE_S 1e-7

/* every rank's part is needed before anyone can finish */
static int symmetric(unsigned kind)
{
	return kind == 1 || (kind >= 4 && kind <= 7);
}

/* one operation: ops[i] of the i-th recorded rank; d is scratch */
static void charge(struct loom_flight_slow *o, const struct loom_flight_op *const *ops, double *d)
{
	double dmin = INFINITY, sum = 0;
	int i, ties = 0;
	for (i = 0; i < o->nr; i++) {
		d[i] = ops[i]->t_end - ops[i]->t_post;
		if (!(d[i] > 0))
			d[i] = 0;
		if (d[i] < dmin)
			dmin = d[i];
	}
	for (i = 0; i < o->nr; i++) {
		o->r[i].waited += d[i] - dmin;
		if (d[i] - dmin <= TIE_S)
			ties++;
		else
			sum += d[i] - dmin;
	}
	for (i = 0; i < o->nr; i++)
		if (d[i] - dmin <= TIE_S) {
			o->r[i].caused += sum / ties;
			o->r[i].last += 1.0 / ties;
		}
	o->total += sum;
}

/* the operations of seq on every recorded rank: 1 to analyse, 0 to skip,
 * -1 where the walk ends (a ring no longer holds it, or a mismatch: the
 * hang verdict's finding) */
static int ops_at(const struct loom_flight_slow *o, const struct loom_flight_slot *const *slots,
		  uint64_t seq, const struct loom_flight_op **ops)
{
	int i, skip = 0;
	for (i = 0; i < o->nr; i++) {
		ops[i] = loom_flight_op_at(o->r[i].r, slots[i], seq);
		if (!ops[i] || ops[i]->kind != ops[0]->kind)
			return -1;
		if (ops[i]->state != LOOM_FLIGHT_DONE)
			skip = 1;
	}
	return !skip && symmetric(ops[0]->kind);
}

static int by_caused(const void *a, const void *b)
{
	const struct loom_flight_slow_rank *x = a, *y = b;
	if (x->caused != y->caused)
		return x->caused < y->caused ? 1 : -1;
	return x->rank - y->rank;
}

/* the window [first, end] walked down from the newest operation every
 * recorded rank finished; slots holds the recorded ranks' slots; ops, d
 * and p0 are scratch of nr entries */
static void walk(struct loom_flight_slow *o, const struct loom_flight_slot *const *slots,
		 uint64_t last, uint64_t until, const struct loom_flight_op **ops, double *d,
		 double *p0)
{
	uint64_t top = UINT64_MAX, seq;
	int i, k;
	for (i = 0; i < o->nr; i++)
		if (slots[i]->done < top)
			top = slots[i]->done;
	if (until && until < top)
		top = until;
	for (seq = top; seq > 0 && (uint64_t)o->nops < last; seq--) {
		if ((k = ops_at(o, slots, seq, ops)) < 0)
			break;
		if (!k)
			continue;
		charge(o, ops, d);
		for (i = 0; i < o->nr; i++) {
			if (!o->nops)
				o->r[i].span = ops[i]->t_end;
			p0[i] = ops[i]->t_post;
		}
		if (!o->nops)
			o->end = seq;
		o->kind = !o->nops || o->kind == (int)ops[0]->kind ? (int)ops[0]->kind : 0;
		o->first = seq;
		o->nops++;
	}
	for (i = 0; i < o->nr; i++)
		o->r[i].span = o->nops ? o->r[i].span - p0[i] : 0;
}

/* the thresholds of docs/flight-format.md on r[0] */
static int straggler(const struct loom_flight_slow *o)
{
	const struct loom_flight_slow_rank *t = o->r;
	if (o->nr < 2 || !o->nops || !(o->total > 0))
		return 0;
	return t->score >= LOOM_FLIGHT_SLOW_SCORE && t->score >= LOOM_FLIGHT_SLOW_FAIR / o->nr &&
	       t->caused / ((double)o->nops * (o->nr - 1)) >= LOOM_FLIGHT_SLOW_MIN_S;
}

int loom_flight_slow_comm(const struct loom_flight_rec *const *recs,
			  const struct loom_flight_slot *const *slots, int size, uint64_t last,
			  uint64_t until, struct loom_flight_slow *o)
{
	const struct loom_flight_slot **sl;
	const struct loom_flight_op **ops;
	double *d;
	int i;
	memset(o, 0, sizeof *o);
	o->size = size;
	o->r = calloc((size_t)size + 1, sizeof *o->r);
	sl = calloc((size_t)size + 1, sizeof *sl);
	ops = calloc((size_t)size + 1, sizeof *ops);
	d = calloc(2 * (size_t)size + 2, sizeof *d);
	if (!o->r || !sl || !ops || !d) {
		free(o->r);
		o->r = NULL;
		free(sl);
		free(ops);
		free(d);
		return -1;
	}
	for (i = 0; i < size; i++)
		if (recs[i] && slots[i]) {
			o->r[o->nr].rank = i;
			o->r[o->nr].r = recs[i];
			sl[o->nr++] = slots[i];
		}
	if (o->nr >= 2)
		walk(o, sl, last, until, ops, d, d + size + 1);
	for (i = 0; i < o->nr; i++)
		o->r[i].score = o->total > 0 ? o->r[i].caused / o->total : 0;
	qsort(o->r, (size_t)o->nr, sizeof *o->r, by_caused);
	o->straggler = straggler(o);
	free(sl);
	free(ops);
	free(d);
	return 0;
}
