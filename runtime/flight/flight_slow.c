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
/* members of all communicators together, at most, as in flight_verdict.c */
#define MAX_MEMBERS ((size_t)1 << 21)
/* rank lines per communicator in the text form (JSON lists all) */
#define TEXT_RANKS 10

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

/* ---- the communicators of a set of records ---- */

struct slow_comm {
	const struct loom_flight_slot *key;
	const struct loom_flight_rec *first;
	const struct loom_flight_rec **recs;   /* by rank in the communicator */
	const struct loom_flight_slot **slots;
	char label[200];
	struct loom_flight_slow a;
};

static int same(const struct slow_comm *c, const struct loom_flight_rec *r,
		const struct loom_flight_slot *s)
{
	const struct loom_flight_slot *k = c->key;
	return !strcmp(c->first->h.job, r->h.job) && !strcmp(c->first->h.step, r->h.step) &&
	       k->ctx == s->ctx && k->size == s->size && k->first_wrank == s->first_wrank &&
	       !strcmp(k->name, s->name);
}

/* a new communicator at cv[k] for slot s of record r; -1 out of memory */
static int add_comm(struct slow_comm **cv, int k, const struct loom_flight_rec *r,
		    const struct loom_flight_slot *s)
{
	struct slow_comm *nc = realloc(*cv, (size_t)(k + 1) * sizeof **cv);
	if (!nc)
		return -1;
	*cv = nc;
	memset(&nc[k], 0, sizeof nc[k]);
	nc[k].key = s;
	nc[k].first = r;
	nc[k].recs = calloc((size_t)s->size, sizeof *nc[k].recs);
	nc[k].slots = calloc((size_t)s->size, sizeof *nc[k].slots);
	return nc[k].recs && nc[k].slots ? 0 : -1;
}

static void free_comms(struct slow_comm *cv, int n)
{
	int k;
	for (k = 0; cv && k < n; k++) {
		free(cv[k].recs);
		free(cv[k].slots);
		free(cv[k].a.r);
	}
	free(cv);
}

/* every communicator with its members by rank (a rerun's later record
 * wins); those past MAX_MEMBERS counted in *skipped. Count, or -1. */
static int gather(struct loom_flight_rec *recs, int n, struct slow_comm **out, int *skipped)
{
	struct slow_comm *cv = NULL;
	size_t members = 0;
	int nco = 0, i, k;
	uint32_t j;
	for (i = 0; i < n; i++)
		for (j = 0; j < recs[i].nslots; j++) {
			const struct loom_flight_slot *s =
				(const void *)((const char *)recs[i].slots + j * recs[i].slot_bytes);
			if (!s->used || s->rank < 0 || s->rank >= s->size)
				continue;
			for (k = 0; k < nco && !same(&cv[k], &recs[i], s); k++)
				;
			if (k == nco && members + (size_t)s->size > MAX_MEMBERS) {
				++*skipped;
				continue;
			}
			if (k == nco) {
				members += (size_t)s->size;
				if (add_comm(&cv, nco++, &recs[i], s)) {
					free_comms(cv, nco);
					return -1;
				}
			}
			if (!cv[k].recs[s->rank] || cv[k].recs[s->rank]->h.started < recs[i].h.started) {
				cv[k].recs[s->rank] = &recs[i];
				cv[k].slots[s->rank] = s;
			}
		}
	*out = cv;
	return nco;
}

/* ---- the report ---- */

/* "world", or "tp (world ranks 2,3)" for a part of the world */
static void label(struct slow_comm *c)
{
	const struct loom_flight_slot *s = c->key;
	size_t l;
	int i, n = 0;
	snprintf(c->label, sizeof c->label, "%s", s->name);
	if (s->first_wrank == 0 && s->size == c->first->h.size)
		return;
	for (i = 0; i < s->size; i++) {
		if (!c->recs[i])
			continue;
		l = strlen(c->label);
		if (n == 8) {
			snprintf(c->label + l, sizeof c->label - l, ",...");
			break;
		}
		snprintf(c->label + l, sizeof c->label - l, "%s%d", n ? "," : " (world ranks ",
			 c->recs[i]->h.rank);
		n++;
	}
	l = strlen(c->label);
	snprintf(c->label + l, sizeof c->label - l, "%s", n ? ")" : "");
}

/* "rank 3 (n2" then ", host h, pid 4711)" when long; a part of the world
 * adds its world rank */
static void who(char *b, size_t len, const struct slow_comm *c,
		const struct loom_flight_slow_rank *r, int lng)
{
	const struct loom_flight_hdr *h = &r->r->h;
	int part = !(c->key->first_wrank == 0 && c->key->size == c->first->h.size);
	char w[32] = "";
	if (part)
		snprintf(w, sizeof w, "world rank %d, ", h->rank);
	if (lng)
		snprintf(b, len, "rank %d (%s%s, host %s, pid %d)", r->rank, w, h->node, h->host, h->pid);
	else
		snprintf(b, len, "rank %d (%s%s)", r->rank, w, h->node);
}

static const char *kind_of(const struct loom_flight_slow *a)
{
	return a->kind ? loom_flight_kind_name(a->kind) : "collectives";
}

/* seconds each other rank waited per operation for r */
static double per_op(const struct loom_flight_slow *a, const struct loom_flight_slow_rank *r)
{
	return a->nops && a->nr > 1 ? r->caused / ((double)a->nops * (a->nr - 1)) : 0;
}

/* the communicator's conclusion, e.g. "rank 3 (n2) made the others wait
 * 31 % of the last 100 allreduce (12.0 ms per operation, score 0.97)":
 * the share is of the time those operations spanned on the others' clocks */
static void conclusion(char *b, size_t len, const struct slow_comm *c)
{
	const struct loom_flight_slow *a = &c->a;
	char w[300];
	double span = 0;
	int i;
	if (a->nr < 2 || !a->nops) {
		snprintf(b, len, "%s: no straggler (%s)", c->label, a->nr < 2 ?
			 "fewer than 2 ranks recorded" : "no allreduce, allgather, reduce_scatter, "
			 "alltoall or barrier that every recorded rank finished");
		return;
	}
	if (!a->straggler) {
		who(w, sizeof w, c, &a->r[0], 0);
		snprintf(b, len, "%s: no straggler in the last %d %s (most: %s, score %.2f, %.1f ms "
			 "per operation; a straggler has a score of %.2f and %.1f ms)", c->label,
			 a->nops, kind_of(a), w, a->r[0].score, per_op(a, &a->r[0]) * 1e3,
			 fmax(LOOM_FLIGHT_SLOW_SCORE, LOOM_FLIGHT_SLOW_FAIR / a->nr),
			 LOOM_FLIGHT_SLOW_MIN_S * 1e3);
		return;
	}
	for (i = 1; i < a->nr; i++)
		span += a->r[i].span / (a->nr - 1);
	who(w, sizeof w, c, &a->r[0], 0);
	snprintf(b, len, "%s: %s made the others wait %.0f %% of the last %d %s (%.1f ms per "
		 "operation, score %.2f)", c->label, w,
		 span > 0 ? fmin(100, 100 * per_op(a, &a->r[0]) * a->nops / span) : 0, a->nops,
		 kind_of(a), per_op(a, &a->r[0]) * 1e3, a->r[0].score);
}

static void text(FILE *f, const struct slow_comm *c, const char *concl)
{
	const struct loom_flight_slow *a = &c->a;
	char w[300];
	int i;
	if (a->nops)
		fprintf(f, "%s: %d of %d ranks recorded, %s #%llu-#%llu (%d operations), %.3f s of "
			"waiting charged\n", c->label, a->nr, a->size, kind_of(a),
			(unsigned long long)a->first, (unsigned long long)a->end, a->nops, a->total);
	for (i = 0; a->nops && i < a->nr && i < TEXT_RANKS; i++) {
		who(w, sizeof w, c, &a->r[i], 1);
		fprintf(f, "%s: %s: caused %.3f s (%.1f ms per operation), score %.2f, last in %.0f "
			"of %d\n", c->label, w, a->r[i].caused, per_op(a, &a->r[i]) * 1e3,
			a->r[i].score, a->r[i].last, a->nops);
	}
	if (a->nops && a->nr > TEXT_RANKS)
		fprintf(f, "%s: and %d more ranks (--json lists them)\n", c->label,
			a->nr - TEXT_RANKS);
	fprintf(f, "%s\n", concl);
}

static void json_rank(FILE *f, const struct loom_flight_slow *a,
		      const struct loom_flight_slow_rank *r, int i)
{
	fprintf(f, "%s{\"rank\":%d,\"world_rank\":%d,\"node\":", i ? "," : "", r->rank, r->r->h.rank);
	loom_flight_json_str(f, r->r->h.node);
	fprintf(f, ",\"host\":");
	loom_flight_json_str(f, r->r->h.host);
	fprintf(f, ",\"pid\":%d,\"caused_s\":%.9g,\"per_op_s\":%.9g,\"waited_s\":%.9g,"
		"\"score\":%.4f,\"last_in\":%.1f}", r->r->h.pid, r->caused, per_op(a, r), r->waited,
		r->score, r->last);
}

static void json(FILE *f, const struct slow_comm *c, const char *concl, int i)
{
	const struct loom_flight_slow *a = &c->a;
	int k;
	fprintf(f, "%s{\"comm\":", i ? "," : "");
	loom_flight_json_str(f, c->label);
	fprintf(f, ",\"name\":");
	loom_flight_json_str(f, c->key->name);
	fprintf(f, ",\"job\":");
	loom_flight_json_str(f, c->first->h.job);
	fprintf(f, ",\"step\":");
	loom_flight_json_str(f, c->first->h.step);
	fprintf(f, ",\"size\":%d,\"recorded\":%d,\"operations\":%d,\"first_seq\":%llu,"
		"\"last_seq\":%llu,\"kind\":\"%s\",\"wait_s\":%.9g,\"straggler\":", a->size, a->nr,
		a->nops, (unsigned long long)a->first, (unsigned long long)a->end, kind_of(a),
		a->total);
	if (a->straggler)
		fprintf(f, "%d", a->r[0].rank);
	else
		fprintf(f, "null");
	fprintf(f, ",\"ranks\":[");
	for (k = 0; k < a->nr; k++)
		json_rank(f, a, &a->r[k], k);
	fprintf(f, "],\"text\":");
	loom_flight_json_str(f, concl);
	fprintf(f, "}");
}

int loom_flight_slow_report(FILE *f, struct loom_flight_rec *recs, int n, uint64_t last,
			    uint64_t until, int js)
{
	struct slow_comm *cv = NULL;
	char concl[1200], best[1200] = "";
	int skipped = 0, nco = gather(recs, n, &cv, &skipped), i, named = 0;
	double worst = -1;
	if (nco < 0)
		return -1;
	if (js)
		fprintf(f, "{\"records\":%d,\"last\":%llu,\"communicators\":[", n,
			(unsigned long long)last);
	for (i = 0; i < nco; i++) {
		label(&cv[i]);
		if (loom_flight_slow_comm(cv[i].recs, cv[i].slots, cv[i].key->size, last, until,
					  &cv[i].a)) {
			free_comms(cv, nco);
			return -1;
		}
		conclusion(concl, sizeof concl, &cv[i]);
		if (js)
			json(f, &cv[i], concl, i);
		else
			text(f, &cv[i], concl);
		/* the verdict: the straggler that cost each other rank most */
		if (cv[i].a.straggler && per_op(&cv[i].a, &cv[i].a.r[0]) > worst) {
			worst = per_op(&cv[i].a, &cv[i].a.r[0]);
			snprintf(best, sizeof best, "%s", concl);
			named = 1;
		}
	}
	if (!named)
		snprintf(best, sizeof best, n ? "no straggler" : "no flight records");
	if (js) {
		fprintf(f, "],\"skipped_slots\":%d,\"straggler\":%s,\"verdict\":", skipped,
			named ? "true" : "false");
		loom_flight_json_str(f, best);
		fprintf(f, "}");
	} else {
		if (skipped)
			fprintf(f, "skipped %d communicator slots beyond the limit of %zu ranks over "
				"all communicators\n", skipped, MAX_MEMBERS);
		fprintf(f, "verdict: %s\n", best);
	}
	free_comms(cv, nco);
	return named;
}
