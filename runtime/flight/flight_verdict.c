/* runtime/flight/flight_verdict.c: from every rank's record, per
 * communicator: the operation most ranks are in, the ranks behind, the
 * ranks missing or gone, and ranks that called different operations at
 * the same sequence number; then one verdict. */
#include "flight/flight.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

struct member {
	const struct loom_flight_rec *r;
	const struct loom_flight_slot *s;
};

struct comm {
	const struct loom_flight_slot *key;   /* the first slot seen */
	const char *job, *step;
	struct member *m;                     /* by rank in the communicator */
	char label[160];
	uint64_t maxp;
	int stuck;
	double waited;
};

/* append to a bounded line */
static void cat(char *b, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static void cat(char *b, size_t len, const char *fmt, ...)
{
	size_t l = strlen(b);
	va_list ap;
	if (l + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(b + l, len - l, fmt, ap);
	va_end(ap);
}

/* "0-3,5,7": a sorted list of ints as ranges */
static void ranges(char *b, size_t len, const int *v, int n)
{
	int i = 0, j;
	while (i < n) {
		for (j = i; j + 1 < n && v[j + 1] == v[j] + 1; j++)
			;
		if (j > i + 1)
			cat(b, len, "%s%d-%d", i ? "," : "", v[i], v[j]);
		else if (j == i + 1)
			cat(b, len, "%s%d,%d", i ? "," : "", v[i], v[j]);
		else
			cat(b, len, "%s%d", i ? "," : "", v[i]);
		i = j + 1;
	}
}

static const struct loom_flight_op *op_at(const struct member *m, uint64_t seq)
{
	return loom_flight_op_at(m->r, m->s, seq);
}

static int failed_at(const struct member *m, uint64_t seq)
{
	const struct loom_flight_op *o = op_at(m, seq);
	return o && o->state == LOOM_FLIGHT_FAILED;
}

static int same_comm(const struct loom_flight_slot *a, const struct loom_flight_slot *b)
{
	return a->ctx == b->ctx && a->size == b->size && a->first_wrank == b->first_wrank &&
	       !strcmp(a->name, b->name);
}

static int same_step(const struct loom_flight_rec *a, const char *job, const char *step)
{
	return !strcmp(a->h.job, job) && !strcmp(a->h.step, step);
}

/* Members of all communicators together, at most: a record names any
 * size up to LOOM_FLIGHT_MAX_RANKS, and each communicator costs an entry
 * per rank (memory, and a pass per finding) */
#define MAX_MEMBERS LOOM_FLIGHT_MAX_MEMBERS

/* the communicators of all records, each with its members by rank; those
 * past MAX_MEMBERS counted in *skipped */
static int gather(struct loom_flight_rec *recs, int n, struct comm **out, int *skipped)
{
	struct comm *cv = NULL, *nc;
	int nco = 0, i, k;
	uint32_t j;
	size_t members = 0;
	*skipped = 0;
	for (i = 0; i < n; i++)
		for (j = 0; j < recs[i].nslots; j++) {
			const struct loom_flight_slot *s =
				(const void *)((const char *)recs[i].slots + j * recs[i].slot_bytes);
			if (!s->used)
				continue;
			for (k = 0; k < nco; k++)
				if (same_step(&recs[i], cv[k].job, cv[k].step) && same_comm(cv[k].key, s))
					break;
			if (k == nco && members + (size_t)s->size > MAX_MEMBERS) {
				++*skipped;
				continue;
			}
			if (k == nco) {
				members += (size_t)s->size;
				if (!(nc = realloc(cv, (size_t)(nco + 1) * sizeof *cv)))
					goto oom;
				cv = nc;
				memset(&cv[k], 0, sizeof cv[k]);
				cv[k].key = s;
				cv[k].job = recs[i].h.job;
				cv[k].step = recs[i].h.step;
				if (!(cv[k].m = calloc((size_t)s->size, sizeof *cv[k].m)))
					goto oom;
				nco++;
			}
			/* a second record for one rank (a rerun of the step): the later one */
			if (!cv[k].m[s->rank].r || cv[k].m[s->rank].r->h.started < recs[i].h.started) {
				cv[k].m[s->rank].r = &recs[i];
				cv[k].m[s->rank].s = s;
			}
		}
	*out = cv;
	return nco;
oom:
	for (k = 0; k < nco; k++)
		free(cv[k].m);
	free(cv);
	*out = NULL;
	return -1;
}

static void label(struct comm *c, int *tmp)
{
	const struct loom_flight_slot *s = c->key;
	int i, n = 0;
	for (i = 0; i < s->size; i++)
		if (c->m[i].r)
			tmp[n++] = c->m[i].r->h.rank;
	snprintf(c->label, sizeof c->label, "%s", s->name);
	if (!(s->first_wrank == 0 && c->m[0].r && s->size == c->m[0].r->h.size)) {
		cat(c->label, sizeof c->label, " (world ranks ");
		ranges(c->label, sizeof c->label, tmp, n);
		cat(c->label, sizeof c->label, ")");
	}
}

/* where a rank behind stands, e.g. "rank 2 (n2, pid 4711) last finished
 * barrier #6 and is in no collective" */
static void behind_text(char *b, size_t len, int rank, const struct member *m)
{
	const struct loom_flight_op *d = op_at(m, m->s->done), *p;
	if (m->s->size == m->r->h.size && m->s->first_wrank == 0)
		cat(b, len, "rank %d (%s, pid %d) ", rank, m->r->h.node, m->r->h.pid);
	else
		cat(b, len, "rank %d (world rank %d, %s, pid %d) ", rank, m->r->h.rank, m->r->h.node,
		    m->r->h.pid);
	if (m->s->done)
		cat(b, len, "last finished %s #%llu", d ? loom_flight_kind_name((int)d->kind) : "?",
		    (unsigned long long)m->s->done);
	else
		cat(b, len, "finished no collective");
	if (m->s->posted > m->s->done) {
		p = op_at(m, m->s->posted);
		cat(b, len, " and is in %s #%llu", p ? loom_flight_kind_name((int)p->kind) : "?",
		    (unsigned long long)m->s->posted);
	} else if (m->s->p2p_posted > m->s->p2p_done) {
		cat(b, len, " and is in no collective (in %s with rank %d)",
		    loom_flight_kind_name((int)m->s->p2p_last.kind), m->s->p2p_last.root);
	} else {
		cat(b, len, " and is in no collective");
	}
	if (m->r->gone)
		cat(b, len, "; its process is gone");
	else if (m->r->h.finalized == 1)
		cat(b, len, "; it is in loom_finalize");
	else if (m->r->h.finalized)
		cat(b, len, "; it finalized");
}

/* the first sequence number at which members called different operations:
 * fills kinds (distinct, at most 8) with the ranks of each. A kind is
 * what the record says, so it is checked before it makes a key. Only
 * the members present are visited at each seq (a record may name a
 * communicator of a million ranks and hold one). */
static uint64_t mismatch(const struct comm *c, int *kinds, int *nk, int *who_kind)
{
	const struct loom_flight_slot *s = c->key;
	uint64_t lo = 1, seq;
	int i, k, np = 0, *present;
	uint32_t nops = 0;
	if (!(present = malloc((size_t)s->size * sizeof *present)))
		return 0;
	for (i = 0; i < s->size; i++) {
		who_kind[i] = -1;
		if (c->m[i].r) {
			present[np++] = i;
			if (!nops || c->m[i].r->nops < nops)
				nops = c->m[i].r->nops;
		}
	}
	if (c->maxp > nops)
		lo = c->maxp - nops + 1;
	/* seq wraps to 0 past UINT64_MAX, a number any record may claim */
	for (seq = lo; seq && seq <= c->maxp; seq++) {
		*nk = 0;
		for (int p = 0; p < np; p++) {
			const struct loom_flight_op *o;
			unsigned kind;
			int key;
			i = present[p];
			who_kind[i] = -1;
			if (!(o = op_at(&c->m[i], seq)))
				continue;
			kind = o->kind < LOOM_FLIGHT_NKINDS ? o->kind : 0;
			key = (int)(kind << 16) + ((kind == 2 || kind == 3) ? o->root & 0xffff : 0);
			for (k = 0; k < *nk && kinds[k] != key; k++)
				;
			if (k == *nk && *nk < 8)
				kinds[(*nk)++] = key;
			who_kind[i] = k;
		}
		if (*nk > 1) {
			free(present);
			return seq;
		}
	}
	free(present);
	return 0;
}

static void kind_text(char *b, size_t len, int key)
{
	int kind = key >> 16;
	cat(b, len, "%s", loom_flight_kind_name(kind));
	if (kind == 2 || kind == 3)
		cat(b, len, "(root %d)", key & 0xffff);
}

struct out {
	const struct loom_flight_sink *sink;
	void *arg;
	double now;
};

static void finding(struct out *o, const struct comm *c, const char *type, const char *text)
{
	if (o->sink && o->sink->finding)
		o->sink->finding(o->arg, c->label, c->job, c->step, type, text);
}

/* this communicator's findings; its verdict into v */
static void analyse(struct out *o, struct comm *c, int *tmp, int *tmp2, char *v, size_t vlen)
{
	const struct loom_flight_slot *s = c->key;
	char line[1024], behind[1024] = "";
	int i, nw = 0, nb = 0, nm = 0, ng = 0, kinds[8], nk = 0;
	uint64_t ms;
	double t0 = 0;
	const struct loom_flight_op *wop = NULL;
	v[0] = 0;
	for (i = 0; i < s->size; i++)
		if (c->m[i].r && c->m[i].s->posted > c->maxp)
			c->maxp = c->m[i].s->posted;
	for (i = 0; i < s->size; i++) {
		const struct member *m = &c->m[i];
		if (!m->r) {
			tmp2[nm++] = i;
		} else if (m->s->posted == c->maxp && (m->s->done < c->maxp || failed_at(m, c->maxp))) {
			/* an operation that failed (timed out) is where the rank stopped */
			const struct loom_flight_op *p = op_at(m, c->maxp);
			tmp[nw++] = i;
			if (p && (!wop || p->t_post + m->r->h.real_minus_mono < t0)) {
				wop = p;
				t0 = p->t_post + m->r->h.real_minus_mono;
			}
			ng += m->r->gone;
		}
	}
	if (nw) {
		c->waited = o->now - t0 > 0 ? o->now - t0 : 0;
		snprintf(line, sizeof line, "rank%s ", nw > 1 ? "s" : "");
		ranges(line, sizeof line, tmp, nw);
		cat(line, sizeof line, " wait%s in %s #%llu (%.1f s)", nw > 1 ? "" : "s",
		    wop ? loom_flight_kind_name((int)wop->kind) : "?", (unsigned long long)c->maxp,
		    c->waited);
		if (ng)
			cat(line, sizeof line, "; %d of them gone", ng);
		finding(o, c, "waiting", line);
		snprintf(v, vlen, "%s: %s", c->label, line);
	}
	for (i = 0; i < s->size; i++)
		if (c->m[i].r && c->m[i].s->posted < c->maxp) {
			line[0] = 0;
			behind_text(line, sizeof line, i, &c->m[i]);
			finding(o, c, "behind", line);
			if (nb < 4)
				cat(behind, sizeof behind, "; %s", line);
			nb++;
		}
	if (nb > 4)
		cat(behind, sizeof behind, "; and %d more ranks behind", nb - 4);
	if (nm) {
		snprintf(line, sizeof line, "rank%s ", nm > 1 ? "s" : "");
		ranges(line, sizeof line, tmp2, nm);
		cat(line, sizeof line, " of %d ha%s no record here", s->size, nm > 1 ? "ve" : "s");
		finding(o, c, "missing", line);
		if (nw && !nb)
			cat(behind, sizeof behind, "; %s", line);
	}
	if ((ms = mismatch(c, kinds, &nk, tmp2))) {
		int k, n;
		snprintf(line, sizeof line, "mismatch at #%llu:", (unsigned long long)ms);
		for (k = 0; k < nk; k++) {
			for (i = n = 0; i < s->size; i++)
				if (tmp2[i] == k)
					tmp[n++] = i;
			cat(line, sizeof line, "%s rank%s ", k ? "," : "", n > 1 ? "s" : "");
			ranges(line, sizeof line, tmp, n);
			cat(line, sizeof line, " called ");
			kind_text(line, sizeof line, kinds[k]);
		}
		finding(o, c, "mismatch", line);
		snprintf(v, vlen, "%s: %s", c->label, line);
		c->stuck = 1;
		return;
	}
	if (nw && (nb || nm || ng)) {
		c->stuck = 1;
		cat(v, vlen, "%s", behind);
	} else {
		v[0] = 0;
	}
}

int loom_flight_analyse(struct loom_flight_rec *recs, int n, double now,
			const struct loom_flight_sink *sink, void *arg, char *best, size_t blen,
			int *skipped)
{
	struct out o = { sink, arg, now };
	struct comm *cv;
	char v[1200];
	int nco = gather(recs, n, &cv, skipped), i, maxsize = 1, stuck = 0, *tmp, *tmp2;
	double worst = -1;
	best[0] = 0;
	if (nco < 0)
		return -1;
	for (i = 0; i < nco; i++)
		if (cv[i].key->size > maxsize)
			maxsize = cv[i].key->size;
	tmp = calloc((size_t)maxsize, sizeof *tmp);
	tmp2 = calloc((size_t)maxsize, sizeof *tmp2);
	for (i = 0; tmp && tmp2 && i < nco; i++) {
		label(&cv[i], tmp);
		analyse(&o, &cv[i], tmp, tmp2, v, sizeof v);
		/* the verdict: the stuck communicator that has waited longest */
		if (cv[i].stuck && cv[i].waited > worst) {
			worst = cv[i].waited;
			snprintf(best, blen, "%s", v);
		}
		stuck |= cv[i].stuck;
	}
	if (!stuck)
		snprintf(best, blen, n ? "no hang: on every communicator the ranks recorded "
			 "are at the same operation" : "no flight records");
	for (i = 0; sink && sink->comm && tmp && i < nco; i++) {
		int k, nr = 0;
		for (k = 0; k < cv[i].key->size; k++)
			if (cv[i].m[k].r)
				tmp[nr++] = cv[i].m[k].r->h.rank;
		sink->comm(arg, cv[i].label, cv[i].key->name, cv[i].key->size, cv[i].maxp,
			   cv[i].stuck, tmp, nr);
	}
	for (i = 0; i < nco; i++)
		free(cv[i].m);
	free(cv);
	free(tmp);
	free(tmp2);
	return stuck;
}

static void text_finding(void *arg, const char *comm, const char *job, const char *step,
			 const char *type, const char *text)
{
	fprintf(arg, "%s: %s\n", comm, text);
}

int loom_flight_report(FILE *f, struct loom_flight_rec *recs, int n, double now)
{
	static const struct loom_flight_sink text = { text_finding, NULL };
	char best[1200];
	int skipped, stuck = loom_flight_analyse(recs, n, now, &text, f, best, sizeof best,
						 &skipped);
	if (stuck < 0)
		return -1;
	if (skipped)
		fprintf(f, "skipped %d communicator slots beyond the limit of %zu ranks over all "
			"communicators\n",
			skipped, MAX_MEMBERS);
	fprintf(f, "verdict: %s\n", best);
	return stuck;
}

static double epoch_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void loom_flight_verdict(char *buf, size_t len)
{
	struct loom_flight_rec *recs;
	char err[600], *line = NULL, *nl;
	size_t sz = 0;
	const char *d = loom_flight_dir();
	int n, i;
	FILE *f;
	buf[0] = 0;
	if (!d || (n = loom_flight_read_dir(d, &recs, err, sizeof err, NULL, NULL, NULL)) < 0)
		return;
	if ((f = open_memstream(&line, &sz))) {
		loom_flight_report(f, recs, n, epoch_now());
		fclose(f);
		/* the last line is the verdict */
		if (line && sz) {
			line[sz - 1] = 0;
			nl = strrchr(line, '\n');
			nl = nl ? nl + 1 : line;
			if (!strncmp(nl, "verdict: ", 9))
				nl += 9;
			snprintf(buf, len, "flight records in %s: %s", d, nl);
		}
		free(line);
	}
	for (i = 0; i < n; i++)
		loom_flight_rec_clear(&recs[i]);
	free(recs);
}

void loom_flight_log_verdict(void)
{
	char v[1400];
	loom_flight_verdict(v, sizeof v);
	if (v[0])
		LOOM_ERR("%s", v);
}
