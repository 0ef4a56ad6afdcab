/* runtime/ckpt/ckpt_cache_restore.c: reading the node-local tier back. A
 * census of what every node's first rank holds (PIECES and a hash of
 * MANIFEST of its newest cached steps, one allgather), the choice of a
 * copy for every byte range of a step (own copies first, then partner
 * copies), and the load with those ranges as the plan's domains, every
 * chunk verified against the manifest (ckpt_load.c). */
#include "config.h"
#include "comm/comm_query.h"
#include "util/util.h"
#include "ckpt/ckpt_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define CENSUS_STEPS 16   /* newest cached steps a leader reports */
#define CENSUS_RANGES 64  /* ranges one PIECES may list */

/* ------------------------------------------------------------------ */
/* the census: what every node leader holds                            */

/* one range a leader holds: step, lo, hi, manifest hash, total, kind
 * (1 own, 2 partner), index into the leader's own list of origins */
enum { E_STEP, E_LO, E_HI, E_MHASH, E_TOTAL, E_KIND, E_IDX, EW };
enum { KIND_OWN = 1, KIND_PARTNER = 2 };

typedef struct {
	int64_t *e;     /* size * per entries of EW, step -1: padding */
	int64_t per;
	int size;
	char (*origin)[64]; /* this leader's: the node each of its ranges came from */
	int norigin;
} census_t;

static void census_free(census_t *c)
{
	free(c->e);
	free(c->origin);
	memset(c, 0, sizeof *c);
}

/* PIECES of one cached step into entries (appended to *v); 0 or -1 */
static int parse_pieces(const char *text, long long step, uint32_t mhash, int64_t **v, int *n,
			int *cap, census_t *c, char *why, size_t whylen)
{
	unsigned long long total = 0, lo, hi;
	long long s = -1;
	int lines = 0, ranges = 0;
	char name[64];
	const char *l = text;
	if (strncmp(text, CKPT_PIECES_HEADER "\n", strlen(CKPT_PIECES_HEADER) + 1)) {
		snprintf(why, whylen, "not a %s file", CKPT_PIECES_HEADER);
		return -1;
	}
	for (; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l), lines++) {
		int kind = 0;
		if (sscanf(l, "step %lld", &s) == 1 || sscanf(l, "total %llu", &total) == 1 ||
		    !strncmp(l, "node ", 5) || !strncmp(l, CKPT_PIECES_HEADER, strlen(CKPT_PIECES_HEADER)))
			continue;
		if (sscanf(l, "own %llu %llu", &lo, &hi) == 2) {
			kind = KIND_OWN;
			snprintf(name, sizeof name, "this node");
		} else if (sscanf(l, "partner %63s %llu %llu", name, &lo, &hi) == 3) {
			kind = KIND_PARTNER;
		} else {
			snprintf(why, whylen, "line %d not understood", lines + 1);
			return -1;
		}
		if (s != step || total == 0 || lo >= hi || hi > total || ++ranges > CENSUS_RANGES) {
			snprintf(why, whylen, "line %d: a range outside the checkpoint (step %lld, "
				 "total %llu)", lines + 1, s, total);
			return -1;
		}
		if (*n == *cap) {
			int nc = *cap ? 2 * *cap : 16;
			int64_t *nv = realloc(*v, sizeof **v * EW * (size_t)nc);
			char (*no)[64] = realloc(c->origin, sizeof *no * (size_t)nc);
			if (nv)
				*v = nv;
			if (no)
				c->origin = no;
			if (!nv || !no) {
				snprintf(why, whylen, "out of memory");
				return -1;
			}
			*cap = nc;
		}
		int64_t *e = *v + (size_t)*n * EW;
		e[E_STEP] = step;
		e[E_LO] = (int64_t)lo;
		e[E_HI] = (int64_t)hi;
		e[E_MHASH] = mhash;
		e[E_TOTAL] = (int64_t)total;
		e[E_KIND] = kind;
		e[E_IDX] = *n;
		loom_ck_path_safe(name);
		snprintf(c->origin[*n], 64, "%s", name);
		(*n)++;
	}
	return 0;
}

/* a leader's ranges: the newest CENSUS_STEPS committed steps in its cache */
static void census_local(loom_ckpt_t *ck, census_t *c, int64_t **v, int *n)
{
	long long *steps = NULL;
	int ns = 0, cap = 0;
	*v = NULL;
	*n = 0;
	if (loom_ck_list_steps(ck->cache, &steps, &ns) != LOOM_SUCCESS)
		return; /* an unreadable cache holds nothing */
	for (int i = 0; i < ns && i < CENSUS_STEPS; i++) {
		char sdir[4200], why[600], *pieces = NULL, *man = NULL;
		size_t plen, mlen;
		int n0 = *n;
		snprintf(sdir, sizeof sdir, "%s/step-%lld", ck->cache, steps[i]);
		if (loom_ck_read_small(sdir, CKPT_PIECES_FILE, CKPT_PIECES_MAX, &pieces, &plen, why, sizeof why) ||
		    loom_ck_read_small(sdir, "MANIFEST", CKPT_MANIFEST_MAX, &man, &mlen, why, sizeof why) ||
		    parse_pieces(pieces, steps[i], loom_ck_crc32c(0, man, mlen), v, n, &cap, c, why,
				 sizeof why)) {
			LOOM_WARN("ckpt: node cache %s: step-%lld skipped: %s", ck->cache, steps[i], why);
			*n = n0;
		}
		free(pieces);
		free(man);
	}
	free(steps);
}

/* every leader's ranges on every rank */
static int census_gather(loom_ckpt_t *ck, census_t *c)
{
	int64_t *mine = NULL, most = 0, cnt;
	int n = 0, rc;
	memset(c, 0, sizeof *c);
	if (loom_ck_is_leader(ck))
		census_local(ck, c, &mine, &n);
	c->norigin = n;
	cnt = n;
	if ((rc = loom_allreduce(&cnt, &most, 1, LOOM_INT64, LOOM_MAX, ck->comm)))
		goto out;
	c->per = most;
	c->size = ck->size;
	if (most == 0)
		goto out;
	int64_t *pad = malloc(sizeof *pad * EW * (size_t)most);
	c->e = malloc(sizeof *c->e * EW * (size_t)most * (size_t)ck->size);
	if ((rc = loom_ck_agree(ck, pad && c->e ? LOOM_SUCCESS : LOOM_ERR_NOMEM))) {
		free(pad);
		goto out;
	}
	for (int64_t i = 0; i < most * EW; i++)
		pad[i] = i < (int64_t)n * EW ? mine[i] : -1;
	rc = loom_allgather(pad, c->e, (size_t)(most * EW), LOOM_INT64, ck->comm);
	free(pad);
out:
	free(mine);
	if (rc)
		census_free(c);
	return rc;
}

/* ------------------------------------------------------------------ */
/* choosing the copies                                                 */

typedef struct {
	int64_t lo, hi;
	int holder;  /* the leader rank that reads it */
	int kind, idx;
} piece_t;

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_desc(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* the entry of leader r that holds [a, b) of step s (own copies first),
 * NULL when r holds none */
static const int64_t *holds(const census_t *c, int r, long long s, int64_t a, int64_t b)
{
	const int64_t *best = NULL;
	for (int64_t i = 0; i < c->per; i++) {
		const int64_t *e = c->e + ((size_t)r * (size_t)c->per + (size_t)i) * EW;
		if (e[E_STEP] == s && e[E_LO] <= a && b <= e[E_HI] &&
		    (!best || (e[E_KIND] == KIND_OWN && best[E_KIND] != KIND_OWN)))
			best = e;
	}
	return best;
}

/* how far from a leader r's ranges of step s reach without a gap */
static int64_t reach(const census_t *c, int r, long long s, int64_t a)
{
	const int64_t *e;
	while ((e = holds(c, r, s, a, a + 1)))
		a = e[E_HI];
	return a;
}

/* Fewest domains: the holder whose copies reach furthest from a without
 * a gap (own at a first on a tie); *until: where its run ends */
static int furthest(const census_t *c, long long s, int64_t a, int64_t *until)
{
	int holder = -1;
	*until = a;
	for (int r = 0; r < c->size; r++) {
		int64_t x = reach(c, r, s, a);
		if (x > *until || (x == *until && x > a && holds(c, r, s, a, a + 1)[E_KIND] == KIND_OWN &&
				   holds(c, holder, s, a, a + 1)[E_KIND] != KIND_OWN)) {
			*until = x;
			holder = r;
		}
	}
	return holder;
}

/* The pieces of step s: [0, total) cut at every range boundary, each
 * piece read from an own copy where one exists, else a partner copy
 * (the lowest leader first), adjacent pieces of one holder merged.
 * fewest: instead, runs as long as one holder's copies reach (fewest
 * domains: for nodes with fewer ranks than pieces to read).
 * 0: covered (*out, *np); 1: not covered or inconsistent (said in why). */
static int choose(const loom_ckpt_t *ck, const census_t *c, long long s, int fewest, piece_t **out,
		  int *np, char *why, size_t whylen)
{
	int64_t run_end = 0;
	int run = -1;
	int64_t total = -1, mhash = -1, *cut = NULL, gap_lo = -1, gap_hi = -1;
	int ncut = 0, n = 0;
	piece_t *v = NULL;
	*out = NULL;
	*np = 0;
	for (int r = 0; r < c->size; r++)
		for (int64_t i = 0; i < c->per; i++) {
			const int64_t *e = c->e + ((size_t)r * (size_t)c->per + (size_t)i) * EW;
			if (e[E_STEP] != s)
				continue;
			if (total >= 0 && (e[E_TOTAL] != total || e[E_MHASH] != mhash)) {
				snprintf(why, whylen, "the nodes' caches hold different checkpoints named "
					 "step-%lld (their MANIFESTs differ)", s);
				return 1;
			}
			total = e[E_TOTAL];
			mhash = e[E_MHASH];
			ncut += 2;
		}
	if (total < 0 || !(cut = malloc(sizeof *cut * ((size_t)ncut + 2))) ||
	    !(v = calloc((size_t)ncut + 2, sizeof *v))) {
		free(cut);
		snprintf(why, whylen, "no node holds it");
		return 1;
	}
	ncut = 0;
	cut[ncut++] = 0;
	cut[ncut++] = total;
	for (int r = 0; r < c->size; r++)
		for (int64_t i = 0; i < c->per; i++) {
			const int64_t *e = c->e + ((size_t)r * (size_t)c->per + (size_t)i) * EW;
			if (e[E_STEP] == s) {
				cut[ncut++] = e[E_LO];
				cut[ncut++] = e[E_HI];
			}
		}
	qsort(cut, (size_t)ncut, sizeof *cut, cmp_i64);
	for (int k = 0; k + 1 < ncut; k++) {
		int64_t a = cut[k], b = cut[k + 1];
		const int64_t *best = NULL;
		int holder = -1;
		if (a == b)
			continue;
		if (fewest && a >= run_end)
			run = furthest(c, s, a, &run_end);
		for (int r = fewest ? run : 0; r >= 0 && r < (fewest ? run + 1 : c->size); r++) {
			const int64_t *e = holds(c, r, s, a, b);
			if (e && (!best || (e[E_KIND] == KIND_OWN && best[E_KIND] != KIND_OWN))) {
				best = e;
				holder = r;
			}
		}
		if (!best) {
			if (gap_lo < 0)
				gap_lo = a;
			gap_hi = b;
			continue;
		}
		if (n > 0 && v[n - 1].holder == holder && v[n - 1].hi == a && v[n - 1].kind == best[E_KIND]) {
			v[n - 1].hi = b;
			continue;
		}
		v[n++] = (piece_t){ a, b, holder, (int)best[E_KIND], (int)best[E_IDX] };
	}
	free(cut);
	if (gap_lo >= 0) {
		char miss[512] = "";
		size_t at = 0;
		/* the nodes of this job whose cache has no copy of s */
		for (int p = 0; p < loom_comm_nnodes(ck->comm) && at + 80 < sizeof miss; p++) {
			int l = loom_comm_node_leader(ck->comm, p), has = 0;
			for (int64_t i = 0; i < c->per; i++)
				has |= c->e[((size_t)l * (size_t)c->per + (size_t)i) * EW + E_STEP] == s;
			if (!has)
				at += (size_t)snprintf(miss + at, sizeof miss - at, "%s%s", at ? ", " : "",
						       loom_ck_node_name(ck, l));
		}
		snprintf(why, whylen, "bytes %" PRId64 "..%" PRId64 " of %" PRId64 " have no copy in any "
			 "node's cache (%s%s, and no partner copy covers them)", gap_lo, gap_hi, total,
			 at ? "missing from the cache of " : "every node has a copy, but not of them",
			 miss);
		free(v);
		return 1;
	}
	*out = v;
	*np = n;
	return 0;
}

/* pieces -> the plan's aggregators and domains: the i-th piece a node
 * holds is read by its i-th member. 1 when a node holds more pieces than
 * it has ranks (said in why). */
static int pieces_to_domains(const loom_ckpt_t *ck, const piece_t *v, int np, ck_domains_t *d,
			     char *why, size_t whylen)
{
	const loom_comm_t *c = ck->comm;
	int *used = calloc((size_t)loom_comm_nnodes(c) + 1, sizeof *used);
	d->aggr = malloc(sizeof *d->aggr * ((size_t)np + 1));
	d->dom = malloc(sizeof *d->dom * ((size_t)np + 1));
	if (!used || !d->aggr || !d->dom) {
		free(used);
		snprintf(why, whylen, "out of memory");
		return 1;
	}
	d->naggr = 0;
	for (int i = 0; i < np; i++) {
		/* one domain for adjacent pieces of one holder (own and partner
		 * copies lie in the same files) */
		if (i > 0 && v[i].holder == v[i - 1].holder)
			continue;
		int pos = loom_comm_node_of(c, v[i].holder), want = used[pos]++, r, k = 0;
		for (r = 0; r < ck->size; r++)
			if (loom_comm_node_of(c, r) == pos && k++ == want)
				break;
		if (r == ck->size) {
			snprintf(why, whylen, "node %s holds more cached pieces (%d) than it has ranks",
				 loom_ck_node_name(ck, v[i].holder), used[pos]);
			free(used);
			return 1;
		}
		d->aggr[d->naggr] = r;
		d->dom[d->naggr++] = (uint64_t)v[i].lo;
	}
	d->dom[d->naggr] = np ? (uint64_t)v[np - 1].hi : 0;
	free(used);
	return 0;
}

static void domains_free(ck_domains_t *d)
{
	free(d->aggr);
	free(d->dom);
	memset(d, 0, sizeof *d);
}

/* the steps the census saw, descending, without repeats */
static int census_steps(const census_t *c, long long **out)
{
	long long *v = malloc(sizeof *v * ((size_t)c->per * (size_t)c->size + 1));
	int n = 0;
	if (!v)
		return -1;
	for (int64_t i = 0; i < c->per * c->size; i++)
		if (c->e[(size_t)i * EW + E_STEP] >= 0)
			v[n++] = c->e[(size_t)i * EW + E_STEP];
	qsort(v, (size_t)n, sizeof *v, cmp_desc);
	int m = 0;
	for (int i = 0; i < n; i++)
		if (m == 0 || v[m - 1] != v[i])
			v[m++] = v[i];
	*out = v;
	return m;
}

/* the census and its steps, newest first (*steps freed by the caller) */
static int census(loom_ckpt_t *ck, census_t *c, long long **steps, int *ns)
{
	int rc = census_gather(ck, c);
	*steps = NULL;
	*ns = 0;
	if (rc)
		return rc;
	if (c->per > 0 && (*ns = census_steps(c, steps)) < 0)
		*ns = 0;
	/* every rank walks the same list, or none does */
	if ((rc = loom_ck_agree(ck, *ns < 0 || (c->per > 0 && !*steps) ? LOOM_ERR_NOMEM : LOOM_SUCCESS))) {
		free(*steps);
		*steps = NULL;
		census_free(c);
	}
	return rc;
}

/* The pieces and the plan's domains of step s: own copies first; when a
 * node then holds more pieces than it has ranks, the fewest domains. 0,
 * or 1 with the first reason in why (*v and *d freed by the caller). */
static int plan_step(const loom_ckpt_t *ck, const census_t *c, long long s, piece_t **v, int *np,
		     ck_domains_t *d, char *why, size_t whylen)
{
	char why2[700];
	if (choose(ck, c, s, 0, v, np, why, whylen))
		return 1;
	if (!pieces_to_domains(ck, *v, *np, d, why, whylen))
		return 0;
	free(*v);
	domains_free(d);
	return choose(ck, c, s, 1, v, np, why2, sizeof why2) ||
	       pieces_to_domains(ck, *v, *np, d, why2, sizeof why2);
}

/* does some leader hold its own copy of [lo, hi) of step s? */
static int own_somewhere(const census_t *c, long long s, int64_t lo, int64_t hi)
{
	for (int r = 0; r < c->size; r++) {
		const int64_t *e = holds(c, r, s, lo, hi);
		if (e && e[E_KIND] == KIND_OWN)
			return 1;
	}
	return 0;
}

/* a leader that reads a partner copy says whose */
static void say_partner_reads(const loom_ckpt_t *ck, const census_t *c, const piece_t *v, int np,
			      long long s)
{
	for (int i = 0; i < np; i++)
		if (v[i].holder == ck->rank && v[i].kind == KIND_PARTNER && v[i].idx < c->norigin)
			LOOM_WARN("ckpt: step-%lld: bytes %" PRId64 "..%" PRId64 " of %s come from its "
				  "partner copy in %s on %s (%s)", s, v[i].lo, v[i].hi, c->origin[v[i].idx],
				  ck->cache, loom_ck_node_name(ck, ck->rank),
				  own_somewhere(c, s, v[i].lo, v[i].hi) ? "its own node has fewer ranks "
				  "than pieces to read" : "its own copy is missing");
}

int loom_ck_cache_restore(loom_ckpt_t *ck, long long newer_than, long long want, long long *step)
{
	census_t c;
	long long *steps;
	int ns, rc, tried = 0;
	if ((rc = census(ck, &c, &steps, &ns)))
		return rc;
	rc = LOOM_ERR_NOT_FOUND;
	for (int i = 0; i < ns; i++) {
		long long s = steps[i];
		char why[700], sdir[4200];
		piece_t *v = NULL;
		ck_domains_t d = { 0, NULL, NULL };
		int np = 0, partner = 0;
		if ((want >= 0 && s != want) || s < newer_than)
			continue;
		tried++;
		if (plan_step(ck, &c, s, &v, &np, &d, why, sizeof why)) {
			if (ck->rank == 0)
				LOOM_WARN("ckpt: step-%lld in the node caches is not usable: %s", s, why);
			free(v);
			domains_free(&d);
			continue;
		}
		for (int k = 0; k < np; k++)
			partner += v[k].kind == KIND_PARTNER;
		say_partner_reads(ck, &c, v, np, s);
		snprintf(sdir, sizeof sdir, "%s/step-%lld", ck->cache, s);
		ck_src_t src = { sdir, v[0].holder, &d };
		rc = loom_ck_load_from(ck, s, &src);
		free(v);
		domains_free(&d);
		if (rc == LOOM_SUCCESS) {
			*step = s;
			if (ck->rank == 0 && partner)
				LOOM_WARN("ckpt: restored step-%lld from the node caches (%d of %d pieces "
					  "from partner copies)", s, partner, np);
			else if (ck->rank == 0)
				LOOM_INFO("ckpt: restored step-%lld from the node caches (%d pieces)", s, np);
			break;
		}
		if (loom_ck_comm_error(rc))
			break;
		if (ck->rank == 0)
			LOOM_WARN("ckpt: step-%lld in the node caches is unusable (%s)", s,
				  loom_strerror(rc));
		rc = LOOM_ERR_NOT_FOUND;
	}
	if (rc == LOOM_ERR_NOT_FOUND && tried && ck->rank == 0)
		LOOM_WARN("ckpt: no usable checkpoint%s in the node caches; reading the shared "
			  "directory %s", newer_than >= 0 ? " as new as the shared directory's" : "",
			  ck->dir);
	free(steps);
	census_free(&c);
	return rc;
}

int loom_ck_cache_latest(loom_ckpt_t *ck, long long *step)
{
	census_t c;
	long long *steps;
	int ns, rc;
	*step = -1;
	if ((rc = census(ck, &c, &steps, &ns)))
		return rc;
	for (int i = 0; i < ns && *step < 0; i++) {
		piece_t *v = NULL;
		char why[700];
		int np;
		if (!choose(ck, &c, steps[i], 0, &v, &np, why, sizeof why))
			*step = steps[i];
		free(v);
	}
	free(steps);
	census_free(&c);
	return LOOM_SUCCESS;
}
