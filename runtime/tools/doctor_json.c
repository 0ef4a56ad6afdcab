/* runtime/tools/doctor_json.c: loom-doctor --json, built with jansson
 * (objects keep the order their keys went in, and json_dumpf writes the
 * escapes). Strings are bytes from anybody's files: each byte is taken as
 * the character of that number (what the document always said: \u00NN
 * for a byte past ASCII), so any name makes valid UTF-8 and the output,
 * with JSON_ENSURE_ASCII, stays ASCII. */
#include "doctor.h"
#include "flight/flight_slow.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct doctor_json {
	json_t *doc, *errors, *findings, *comms;
};

/* s, byte by byte, as a JSON string (NULL out of memory) */
static json_t *str(const char *s)
{
	size_t n = strlen(s), j = 0;
	char *u = malloc(2 * n + 1);
	json_t *v;
	if (!u)
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

/* a counter from a record: a JSON integer is signed 64 bits */
static json_t *u64(uint64_t v)
{
	return v <= INT64_MAX ? json_integer((json_int_t)v) : json_real((double)v);
}

struct doctor_json *doctor_json_new(void)
{
	struct doctor_json *j = calloc(1, sizeof *j);
	if (!j)
		return NULL;
	j->doc = json_object();
	j->errors = json_array();
	if (!j->doc || !j->errors || json_object_set(j->doc, "errors", j->errors)) {
		json_decref(j->doc);
		json_decref(j->errors);
		free(j);
		return NULL;
	}
	json_decref(j->errors);   /* the document holds it */
	return j;
}

void doctor_json_error(struct doctor_json *j, const char *msg)
{
	json_array_append_new(j->errors, str(msg));
}

static void on_finding(void *arg, const char *comm, const char *job, const char *step,
		       const char *type, const char *text)
{
	struct doctor_json *j = arg;
	json_array_append_new(j->findings, json_pack("{s:o,s:o,s:o,s:s,s:o}", "comm", str(comm),
						     "job", str(job), "step", str(step),
						     "type", type, "text", str(text)));
}

static void on_comm(void *arg, const char *comm, const char *name, int size, uint64_t last_posted,
		    int stuck, const int *world_ranks, int n)
{
	struct doctor_json *j = arg;
	json_t *ranks = json_array();
	int i;
	for (i = 0; ranks && i < n; i++)
		json_array_append_new(ranks, json_integer(world_ranks[i]));
	json_array_append_new(j->comms, json_pack("{s:o,s:o,s:i,s:o,s:b,s:o}", "comm", str(comm),
						  "name", str(name), "size", size,
						  "last_posted", u64(last_posted), "stuck", stuck,
						  "world_ranks", ranks));
}

int doctor_json_report(struct doctor_json *j, struct loom_flight_rec *recs, int n, double now)
{
	static const struct loom_flight_sink sink = { on_finding, on_comm };
	char verdict[1200];
	int skipped = 0, stuck;
	json_t *report;
	j->findings = json_array();
	j->comms = json_array();
	stuck = loom_flight_analyse(recs, n, now, &sink, j, verdict, sizeof verdict, &skipped);
	if (stuck < 0) {
		json_decref(j->findings);
		json_decref(j->comms);
		json_object_set_new(j->doc, "report", json_null());
		return stuck;
	}
	/* the keys in the order the document has always had */
	report = json_pack("{s:i,s:o,s:o,s:i,s:b,s:o}", "records", n, "findings", j->findings,
			   "communicators", j->comms, "skipped_slots", skipped, "stuck", stuck,
			   "verdict", str(verdict));
	json_object_set_new(j->doc, "report", report ? report : json_null());
	return stuck;
}

static void on_slow_comm(void *arg, const struct loom_flight_slow_view *v)
{
	struct doctor_json *j = arg;
	const struct loom_flight_slow *a = v->a;
	json_t *ranks = json_array(), *c;
	int k;
	for (k = 0; ranks && k < a->nr; k++) {
		const struct loom_flight_slow_rank *r = &a->r[k];
		json_array_append_new(ranks, json_pack("{s:i,s:i,s:o,s:o,s:i,s:f,s:f,s:f,s:f,s:f}",
						       "rank", r->rank, "world_rank", r->r->h.rank,
						       "node", str(r->r->h.node), "host",
						       str(r->r->h.host), "pid", r->r->h.pid,
						       "caused_s", r->caused, "per_op_s",
						       loom_flight_slow_per_op(a, r), "waited_s",
						       r->waited, "score", r->score, "last_in",
						       r->last));
	}
	c = json_pack("{s:o,s:o,s:o,s:o,s:i,s:i,s:i,s:o,s:o,s:s,s:f,s:o,s:o,s:o}", "comm",
		      str(v->label), "name", str(v->name), "job", str(v->job), "step", str(v->step),
		      "size", a->size, "recorded", a->nr, "operations", a->nops, "first_seq",
		      u64(a->first), "last_seq", u64(a->end), "kind", loom_flight_slow_kind(a),
		      "wait_s", a->total, "straggler",
		      a->straggler ? json_integer(a->r[0].rank) : json_null(), "ranks", ranks,
		      "text", str(v->conclusion));
	json_array_append_new(j->comms, c);
}

int doctor_json_slow(struct doctor_json *j, struct loom_flight_rec *recs, int n, uint64_t last,
		     uint64_t until)
{
	static const struct loom_flight_slow_sink sink = { on_slow_comm };
	char verdict[1200];
	int skipped = 0, named;
	json_t *slow;
	j->comms = json_array();
	named = loom_flight_slow_analyse(recs, n, last, until, &sink, j, verdict, sizeof verdict,
					 &skipped);
	if (named < 0) {
		json_decref(j->comms);
		json_object_set_new(j->doc, "slow", json_null());
		return named;
	}
	slow = json_pack("{s:i,s:o,s:o,s:i,s:b,s:o}", "records", n, "last", u64(last),
			 "communicators", j->comms, "skipped_slots", skipped, "straggler", named,
			 "verdict", str(verdict));
	json_object_set_new(j->doc, "slow", slow ? slow : json_null());
	return named;
}

int doctor_json_print(struct doctor_json *j, FILE *f)
{
	int rc = json_dumpf(j->doc, f, JSON_COMPACT | JSON_ENSURE_ASCII);
	fputc('\n', f);
	doctor_json_free(j);
	return rc;
}

void doctor_json_free(struct doctor_json *j)
{
	if (j) {
		json_decref(j->doc);
		free(j);
	}
}
