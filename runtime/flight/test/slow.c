/* unit test: the lateness analysis (flight_slow.c) on synthetic records:
 * a rank late at every allreduce is named with its score, the waiting it
 * caused and the share of the others' time; a balanced job, two ranks
 * late in turn and a lateness under the threshold name nobody; a window
 * (--last, --until) over a run slowed for its first half; broadcast and
 * failed operations left out; ties on the coarse clock share the charge;
 * the report's text and JSON. */
#include "config.h"
#include "flight/flight_slow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../t/tap.h"

#define NR 4
#define RING 128

static struct loom_flight_rec recs[8];

/* rank r of n in one world; its slot's ring of RING operations */
static void mk(int r, int n)
{
	struct loom_flight_rec *x = &recs[r];
	struct loom_flight_slot *s;
	memset(x, 0, sizeof *x);
	x->slot_bytes = sizeof *s + RING * sizeof(struct loom_flight_op);
	x->slots = calloc(1, x->slot_bytes);
	if (!x->slots)
		bail_out("out of memory");
	x->nslots = 1;
	x->nops = RING;
	x->h.rank = r;
	x->h.size = n;
	x->h.pid = 100 + r;
	snprintf(x->h.node, sizeof x->h.node, "n%d", r / 2 + 1);
	snprintf(x->h.host, sizeof x->h.host, "h%d", r / 2 + 1);
	s = x->slots;
	s->used = 1;
	s->rank = r;
	s->size = n;
	s->ctx = 1;
	snprintf(s->name, sizeof s->name, "world");
}

/* operation seq of rank r: posted at post, ended after wait */
static void op(int r, uint64_t seq, int kind, int state, double post, double wait)
{
	struct loom_flight_slot *s = recs[r].slots;
	struct loom_flight_op *o = (struct loom_flight_op *)(s + 1) + (seq & (RING - 1));
	o->seq = seq;
	o->kind = (uint32_t)kind;
	o->state = (uint32_t)state;
	o->t_post = post;
	o->t_end = post + wait;
	s->posted = s->done = seq;
}

/* nops allreduces, one every 0.1 s; rank late (-1: each in turn) by late
 * seconds in the operations seq <= slowed; the last arriver waits 1 ms */
static void run(int n, int nops, int late_rank, double late, int slowed)
{
	int r, k;
	for (r = 0; r < n; r++)
		mk(r, n);
	for (k = 1; k <= nops; k++) {
		int who = late_rank < 0 ? k % n : late_rank;
		double l = k <= slowed ? late : 0;
		for (r = 0; r < n; r++)
			op(r, (uint64_t)k, 1, LOOM_FLIGHT_DONE, k * 0.1 + (r == who ? l : 0),
			   0.001 + (r == who ? 0 : l));
	}
}

static void clear(int n)
{
	for (int r = 0; r < n; r++)
		loom_flight_rec_clear(&recs[r]);
}

static int analyse(int n, uint64_t last, uint64_t until, struct loom_flight_slow *a)
{
	const struct loom_flight_rec *rp[8];
	const struct loom_flight_slot *sp[8];
	for (int r = 0; r < n; r++) {
		rp[r] = &recs[r];
		sp[r] = recs[r].slots;
	}
	return loom_flight_slow_comm(rp, sp, n, last, until, a);
}

/* the report as text into a string (free it) */
static char *report(int n, uint64_t last, uint64_t until, int *named)
{
	char *b = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&b, &sz);
	if (!f)
		bail_out("open_memstream");
	*named = loom_flight_slow_report(f, recs, n, last, until);
	fclose(f);
	if (!b)
		bail_out("no report");
	return b;
}

/* what a sink (loom-doctor's JSON) is given: the first communicator's
 * straggler and first rank */
struct seen {
	int comms, straggler, rank, world_rank;
	char node[64], label[64];
};

static void see(void *arg, const struct loom_flight_slow_view *v)
{
	struct seen *s = arg;
	if (s->comms++)
		return;
	s->straggler = v->a->straggler ? v->a->r[0].rank : -1;
	s->rank = v->a->r[0].rank;
	s->world_rank = v->a->r[0].r->h.rank;
	snprintf(s->node, sizeof s->node, "%s", v->a->r[0].r->h.node);
	snprintf(s->label, sizeof s->label, "%s", v->label);
}

static void late_every_op(void)
{
	struct loom_flight_slow a;
	char *t;
	int named;
	run(NR, 50, 2, 0.010, 50);
	is_int(analyse(NR, 100, 0, &a), 0, "analysed");
	ok(a.nops == 50 && a.first == 1 && a.end == 50 && a.kind == 1, "50 allreduce, #1-#50");
	ok(a.straggler && a.r[0].rank == 2, "rank 2 is the straggler");
	ok(a.r[0].score > 0.999 && a.r[1].score < 0.001, "its score is 1, the others' 0");
	ok(a.r[0].caused > 1.4999 && a.r[0].caused < 1.5001, "it caused 3 x 50 x 10 ms: %g",
	   a.r[0].caused);
	ok(a.r[0].last > 49.99 && a.r[1].waited > 0.4999, "last in 50, the others waited 0.5 s");
	free(a.r);
	t = report(NR, 100, 0, &named);
	is_int(named, 1, "the report names a straggler");
	like(t, "\nworld: rank 2 (n2, host h2, pid 102): caused 1.500 s (10.0 ms per operation), "
	     "score 1.00, last in 50 of 50\n", "its line first");
	/* 10 ms of the 4.901 s the others' 50 operations spanned */
	like(t, "\nverdict: world: rank 2 (n2) made the others wait 10 % of the last 50 allreduce "
	     "(10.0 ms per operation, score 1.00)\n", "the verdict");
	free(t);
	{
		static const struct loom_flight_slow_sink sink = { see };
		struct seen sn = { 0 };
		char verdict[1200];
		int skipped;
		is_int(loom_flight_slow_analyse(recs, NR, 100, 0, &sink, &sn, verdict, sizeof verdict,
						&skipped), 1, "a sink: a straggler named");
		ok(sn.comms == 1 && !strcmp(sn.label, "world") && sn.straggler == 2 && sn.rank == 2 &&
		   sn.world_rank == 2 && !strcmp(sn.node, "n2"),
		   "a sink: the straggler, then the ranks by what they caused");
		like(verdict, "world: rank 2 (n2) made", "a sink: the verdict");
	}
	clear(NR);
}

static void nobody(void)
{
	struct loom_flight_slow a;
	char *t;
	int named;
	run(NR, 40, -1, 0.010, 40);
	analyse(NR, 100, 0, &a);
	ok(!a.straggler && a.r[0].score < 0.26, "each rank late in turn: no straggler (%.2f)",
	   a.r[0].score);
	free(a.r);
	t = report(NR, 100, 0, &named);
	is_int(named, 0, "the report names nobody");
	like(t, "\nverdict: no straggler\n", "verdict: no straggler");
	like(t, "), score 0.25, 2.5 ms per operation; a straggler has a score of 0.50 and 1.0 ms)",
	     "each rank's score is 0.25");
	like(t, "world: no straggler in the last 40 allreduce (most: rank ",
	     "the communicator's line says who came closest");
	free(t);
	clear(NR);
	run(2, 40, -1, 0.010, 40);
	analyse(2, 100, 0, &a);
	ok(!a.straggler && a.r[0].score < 0.51, "two ranks late in turn: nobody (score 0.5 < 0.75)");
	free(a.r);
	clear(2);
	run(NR, 40, 1, 0.0002, 40);
	analyse(NR, 100, 0, &a);
	ok(!a.straggler && a.r[0].rank == 1 && a.r[0].score > 0.99,
	   "always last but by 0.2 ms: score 1, under the 1 ms threshold");
	free(a.r);
	clear(NR);
}

static void window(void)
{
	struct loom_flight_slow a;
	run(NR, 100, 3, 0.020, 50);
	analyse(NR, 40, 0, &a);
	ok(a.nops == 40 && a.first == 61 && !a.straggler, "--last 40 of the second half: nobody");
	free(a.r);
	analyse(NR, 40, 50, &a);
	ok(a.nops == 40 && a.first == 11 && a.end == 50 && a.straggler && a.r[0].rank == 3,
	   "--last 40 --until 50: rank 3");
	free(a.r);
	analyse(NR, 1000, 0, &a);
	is_int(a.nops, 100, "--last beyond what the rings hold: every operation held");
	free(a.r);
	clear(NR);
}

static void left_out(void)
{
	struct loom_flight_slow a;
	int r;
	run(NR, 10, 0, 0.010, 10);
	for (r = 0; r < NR; r++) {
		op(r, 11, 2, LOOM_FLIGHT_DONE, 2.0, r ? 0.001 : 0.5);   /* broadcast */
		op(r, 12, 1, r == 1 ? LOOM_FLIGHT_FAILED : LOOM_FLIGHT_DONE, 3.0, r ? 0.001 : 0.5);
	}
	analyse(NR, 100, 0, &a);
	ok(a.nops == 10 && a.end == 10 && a.r[0].rank == 0, "broadcast and a failed op left out");
	free(a.r);
	/* rank 2's ring lost #1-#5 */
	for (r = 1; r <= 5; r++)
		((struct loom_flight_op *)((struct loom_flight_slot *)recs[2].slots + 1) + r)->seq = 0;
	analyse(NR, 100, 0, &a);
	ok(a.nops == 5 && a.first == 6, "the walk ends where a ring no longer holds an operation");
	free(a.r);
	/* coarse clock: ranks 0 and 1 both waited 0 */
	for (r = 0; r < NR; r++)
		op(r, 13, 1, LOOM_FLIGHT_DONE, 4.0, r < 2 ? 0 : 0.004);
	analyse(NR, 1, 0, &a);
	ok(a.r[0].caused > 0.00399 && a.r[0].caused < 0.00401 && a.r[0].last > 0.49 &&
	   a.r[0].last < 0.51 && a.r[1].caused > 0.00399, "a tie shares the charge and the op");
	free(a.r);
	clear(NR);
}

int main(void)
{
	late_every_op();
	nobody();
	window();
	left_out();
	done_testing();
	return exit_status();
}
