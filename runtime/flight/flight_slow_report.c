/* runtime/flight/flight_slow_report.c: loom-doctor --slow's report: the
 * communicators of a set of records, each analysed by flight_slow.c, its
 * conclusion line, and the text form; other forms (loom-doctor's JSON)
 * take the same view through a sink. */
#include "flight/flight_slow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
 * wins); those past LOOM_FLIGHT_MAX_MEMBERS counted in *skipped. Count, or -1. */
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
			if (k == nco && members + (size_t)s->size > LOOM_FLIGHT_MAX_MEMBERS) {
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
static void who(char *b, size_t len, int part, const struct loom_flight_slow_rank *r, int lng)
{
	const struct loom_flight_hdr *h = &r->r->h;
	char w[32] = "";
	if (part)
		snprintf(w, sizeof w, "world rank %d, ", h->rank);
	if (lng)
		snprintf(b, len, "rank %d (%s%s, host %s, pid %d)", r->rank, w, h->node, h->host, h->pid);
	else
		snprintf(b, len, "rank %d (%s%s)", r->rank, w, h->node);
}

/* a part of the world, not the whole of it */
static int part_of_world(const struct slow_comm *c)
{
	return !(c->key->first_wrank == 0 && c->key->size == c->first->h.size);
}

const char *loom_flight_slow_kind(const struct loom_flight_slow *a)
{
	return a->kind ? loom_flight_kind_name(a->kind) : "collectives";
}

/* seconds each other rank waited per operation for r */
double loom_flight_slow_per_op(const struct loom_flight_slow *a,
			       const struct loom_flight_slow_rank *r)
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
		who(w, sizeof w, part_of_world(c), &a->r[0], 0);
		snprintf(b, len, "%s: no straggler in the last %d %s (most: %s, score %.2f, %.1f ms "
			 "per operation; a straggler has a score of %.2f and %.1f ms)", c->label,
			 a->nops, loom_flight_slow_kind(a), w, a->r[0].score, loom_flight_slow_per_op(a, &a->r[0]) * 1e3,
			 fmax(LOOM_FLIGHT_SLOW_SCORE, LOOM_FLIGHT_SLOW_FAIR / a->nr),
			 LOOM_FLIGHT_SLOW_MIN_S * 1e3);
		return;
	}
	for (i = 1; i < a->nr; i++)
		span += a->r[i].span / (a->nr - 1);
	who(w, sizeof w, part_of_world(c), &a->r[0], 0);
	snprintf(b, len, "%s: %s made the others wait %.0f %% of the last %d %s (%.1f ms per "
		 "operation, score %.2f)", c->label, w,
		 span > 0 ? fmin(100, 100 * loom_flight_slow_per_op(a, &a->r[0]) * a->nops / span) : 0, a->nops,
		 loom_flight_slow_kind(a), loom_flight_slow_per_op(a, &a->r[0]) * 1e3, a->r[0].score);
}

/* ---- the text form ---- */

/* rank lines per communicator in the text form (JSON lists all) */
#define TEXT_RANKS 10

static void text(void *arg, const struct loom_flight_slow_view *v)
{
	FILE *f = arg;
	const struct loom_flight_slow *a = v->a;
	char w[300];
	int i;
	if (a->nops)
		fprintf(f, "%s: %d of %d ranks recorded, %s #%llu-#%llu (%d operations), %.3f s of "
			"waiting charged\n", v->label, a->nr, a->size, loom_flight_slow_kind(a),
			(unsigned long long)a->first, (unsigned long long)a->end, a->nops, a->total);
	for (i = 0; a->nops && i < a->nr && i < TEXT_RANKS; i++) {
		who(w, sizeof w, v->part, &a->r[i], 1);
		fprintf(f, "%s: %s: caused %.3f s (%.1f ms per operation), score %.2f, last in %.0f "
			"of %d\n", v->label, w, a->r[i].caused, loom_flight_slow_per_op(a, &a->r[i]) * 1e3,
			a->r[i].score, a->r[i].last, a->nops);
	}
	if (a->nops && a->nr > TEXT_RANKS)
		fprintf(f, "%s: and %d more ranks (--json lists them)\n", v->label,
			a->nr - TEXT_RANKS);
	fprintf(f, "%s\n", v->conclusion);
}

int loom_flight_slow_analyse(struct loom_flight_rec *recs, int n, uint64_t last, uint64_t until,
			     const struct loom_flight_slow_sink *sink, void *arg, char *verdict,
			     size_t vlen, int *skipped)
{
	struct slow_comm *cv = NULL;
	char concl[1200];
	int nco, i, named = 0;
	double worst = -1;
	*skipped = 0;
	if ((nco = gather(recs, n, &cv, skipped)) < 0)
		return -1;
	for (i = 0; i < nco; i++) {
		struct loom_flight_slow_view v;
		const struct loom_flight_slow *a = &cv[i].a;
		label(&cv[i]);
		if (loom_flight_slow_comm(cv[i].recs, cv[i].slots, cv[i].key->size, last, until,
					  &cv[i].a)) {
			free_comms(cv, nco);
			return -1;
		}
		conclusion(concl, sizeof concl, &cv[i]);
		v.label = cv[i].label;
		v.name = cv[i].key->name;
		v.job = cv[i].first->h.job;
		v.step = cv[i].first->h.step;
		v.part = part_of_world(&cv[i]);
		v.a = a;
		v.conclusion = concl;
		sink->comm(arg, &v);
		/* the verdict: the straggler that cost each other rank most */
		if (a->straggler && loom_flight_slow_per_op(a, &a->r[0]) > worst) {
			worst = loom_flight_slow_per_op(a, &a->r[0]);
			snprintf(verdict, vlen, "%s", concl);
			named = 1;
		}
	}
	if (!named)
		snprintf(verdict, vlen, n ? "no straggler" : "no flight records");
	free_comms(cv, nco);
	return named;
}

int loom_flight_slow_report(FILE *f, struct loom_flight_rec *recs, int n, uint64_t last,
			    uint64_t until)
{
	static const struct loom_flight_slow_sink sink = { text };
	char verdict[1200];
	int skipped, named = loom_flight_slow_analyse(recs, n, last, until, &sink, f, verdict,
						      sizeof verdict, &skipped);
	if (named < 0)
		return named;
	if (skipped)
		fprintf(f, "skipped %d communicator slots beyond the limit of %zu ranks over "
			"all communicators\n", skipped, LOOM_FLIGHT_MAX_MEMBERS);
	fprintf(f, "verdict: %s\n", verdict);
	return named;
}
