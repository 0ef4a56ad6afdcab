/* bench/bench-json.c: loom-bench --json as JSON Lines, built with jansson
 * (it writes the escapes; keys stay in the order they went in). One
 * compact object a line, each written and flushed as it comes: the run's
 * settings first, then one a row, the totals last, so a long run streams
 * and a run cut short lacks the totals line. Numbers are rounded as the
 * table prints them; a value that is not finite is null. */
#include "bench-print.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a JSON string, null for none. The task layout comes from the
 * environment: bytes that are not UTF-8 are taken one a character (the
 * character of that number), so they still make a valid string. */
static json_t *str(const char *s)
{
	size_t n, j = 0;
	char *u;
	json_t *v;
	if (!s)
		return json_null();
	if ((v = json_string(s)))
		return v;
	n = strlen(s);
	if (!(u = malloc(2 * n + 1)))
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x80) {
			u[j++] = (char)c;
		} else {
			u[j++] = (char)(0xc0 | c >> 6);
			u[j++] = (char)(0x80 | (c & 0x3f));
		}
	}
	v = json_stringn(u, j);
	free(u);
	return v;
}

/* v with the table's decimals: the text's rounding, printed back
 * (JSON_REAL_PRECISION below keeps it from growing digits) */
static json_t *fixed(double v, int decimals)
{
	char b[64];
	if (!isfinite(v))
		return json_null();
	snprintf(b, sizeof b, "%.*f", decimals, v);
	return json_real(strtod(b, NULL));
}

/* a count of wrong elements, null when unchecked (< 0) */
static json_t *wrong(long long v)
{
	return v < 0 ? json_null() : json_integer(v);
}

/* KEY: V into o; a value not made (out of memory) is null */
static void put(json_t *o, const char *key, json_t *v)
{
	json_object_set_new(o, key, v ? v : json_null());
}

/* o on one line of f; o freed */
static void line(FILE *f, json_t *o)
{
	/* 15 significant digits: a value of up to 3 decimals prints as the
	 * table's, not as the double's 17 digits */
	if (!o || json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)))
		fprintf(stderr, "loom-bench: --json: cannot write a line\n");
	fputc('\n', f);
	json_decref(o);
}

void bench_json_head(FILE *f, const struct bench_head *h)
{
	json_t *o = json_object();
	if (o) {
		put(o, "loom_bench", str(h->version));
		put(o, "collective", str(h->coll));
		put(o, "nranks", json_integer(h->nranks));
		put(o, "backend", str(h->backend));
		put(o, "datatype", str(h->dtype));
		put(o, "redop", str(h->op));
		put(o, "root", !h->rooted ? json_null() : h->root_all ? json_string("all")
			: json_integer(h->root));
		put(o, "iters", json_integer(h->iters));
		put(o, "warmup", json_integer(h->warmup));
		put(o, "check", json_integer(h->check));
		put(o, "tasks_per_node", str(h->tasks_per_node));
		put(o, "cpus_rank0", h->cpus >= 0 ? json_integer(h->cpus) : json_null());
		put(o, "busbw_factor", str(h->busbw_factor));
		put(o, "peer_mpi", json_boolean(h->peer_mpi));
		put(o, "memcpy", json_boolean(h->memcpy_col));
	}
	line(f, o);
}

void bench_json_row(FILE *f, const struct bench_head *h, const struct bench_row *r)
{
	json_t *o = json_object();
	if (o) {
		put(o, "size", json_integer((json_int_t)r->bytes));
		put(o, "count", json_integer((json_int_t)r->count));
		put(o, "type", str(r->type));
		put(o, "redop", str(r->redop));
		put(o, "root", json_integer(r->root));
		put(o, "time", fixed(r->time_us, 2));
		put(o, "best", fixed(r->best_us, 2));
		put(o, "algbw", fixed(r->algbw, 3));
		put(o, "busbw", fixed(r->busbw, 3));
		put(o, "wrong", wrong(r->wrong));
		if (h->peer_mpi) {
			put(o, "mpi_time", fixed(r->mpi_time_us, 2));
			put(o, "mpi_busbw", fixed(r->mpi_busbw, 3));
			put(o, "mpi_wrong", wrong(r->mpi_wrong));
		}
		if (h->memcpy_col) {
			put(o, "memcpy", fixed(r->memcpy, 3));
			put(o, "memcpy_all", fixed(r->memcpy_all, 3));
		}
	}
	line(f, o);
}

void bench_json_tail(FILE *f, const struct bench_head *h, const struct bench_tail *t)
{
	json_t *o = json_object();
	if (o) {
		put(o, "wrong", wrong(h->check ? t->wrong : -1));
		put(o, "avg_busbw", fixed(t->avg_busbw, 3));
		if (h->peer_mpi) {
			put(o, "mpi_wrong", wrong(h->check ? t->mpi_wrong : -1));
			put(o, "mpi_avg_busbw", fixed(t->mpi_avg_busbw, 3));
		}
	}
	line(f, o);
}
