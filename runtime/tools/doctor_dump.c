/* runtime/tools/doctor_dump.c: loom-doctor --dump, run on each node of a
 * job by loom-doctor --job: the node's records on stdout in the frames of
 * doctor.h. Each file is read and checked here (loom_flight_read) and
 * sent as what the reader keeps, so what crosses srun is bounded by the
 * same limits as a directory read in place. */
#include "doctor.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the bytes of a record as D and Z lines */
struct emit {
	unsigned char buf[DOCTOR_LINE_BYTES];
	size_t fill;
	unsigned long long zeros;   /* zero bytes not said yet */
};

static void emit_line(struct emit *e)
{
	static const char hex[] = "0123456789abcdef";
	char line[2 * DOCTOR_LINE_BYTES + 1];
	size_t i;
	for (i = 0; i < e->fill && !e->buf[i]; i++)
		;
	if (i == e->fill) {
		e->zeros += e->fill;
	} else {
		if (e->zeros)
			printf("Z %llu\n", e->zeros);
		e->zeros = 0;
		for (i = 0; i < e->fill; i++) {
			line[2 * i] = hex[e->buf[i] >> 4];
			line[2 * i + 1] = hex[e->buf[i] & 15];
		}
		line[2 * e->fill] = 0;
		printf("D %s\n", line);
	}
	e->fill = 0;
}

static void emit(struct emit *e, const void *p, size_t n)
{
	const unsigned char *b = p;
	while (n) {
		size_t k = sizeof e->buf - e->fill < n ? sizeof e->buf - e->fill : n;
		if (b) {
			memcpy(e->buf + e->fill, b, k);
			b += k;
		} else {
			memset(e->buf + e->fill, 0, k);
		}
		e->fill += k;
		n -= k;
		if (e->fill == sizeof e->buf)
			emit_line(e);
	}
}

static void emit_end(struct emit *e)
{
	if (e->fill)
		emit_line(e);
	if (e->zeros)
		printf("Z %llu\n", e->zeros);
	e->zeros = 0;
}

/* a file name with only [A-Za-z0-9._-] (others become '_') */
static void plain(char *dst, size_t n, const char *src)
{
	size_t j = 0;
	for (; *src && j + 1 < n; src++)
		dst[j++] = (*src >= 'a' && *src <= 'z') || (*src >= 'A' && *src <= 'Z') ||
			   (*src >= '0' && *src <= '9') || *src == '.' || *src == '-' ||
			   *src == '_' ? *src : '_';
	dst[j] = 0;
}

/* record r as a record file of r->nops operations a slot */
static void dump_rec(const char *node, const struct loom_flight_rec *r)
{
	struct loom_flight_hdr h;
	struct emit e = { .fill = 0, .zeros = 0 };
	const char *base = strrchr(r->path, '/');
	char name[256], raw[600];
	uint32_t i;
	memcpy(&h, &r->h, sizeof h);
	h.nops = r->nops;
	h.nslots_used = r->nslots;
	h.file_size = sizeof h + (uint64_t)h.nslots * r->slot_bytes;
	snprintf(raw, sizeof raw, "%s.%s", node, base ? base + 1 : r->path);
	plain(name, sizeof name, raw);
	printf("F %s %llu\n", name, (unsigned long long)h.file_size);
	emit(&e, &h, sizeof h);
	for (i = 0; i < h.nslots; i++)
		emit(&e, i < r->nslots ? (const char *)r->slots + i * r->slot_bytes : NULL,
		     r->slot_bytes);
	emit_end(&e);
}

static void dump_bad(const char *msg, void *arg)
{
	char clean[2800];
	loom_flight_clean(clean, sizeof clean, msg);
	printf("B %s: %s\n", (const char *)arg, clean);
}

int doctor_dump(const struct loom_flight_budget *limits)
{
	struct loom_flight_budget bu = *limits;
	struct loom_flight_rec *recs;
	const char *d = getenv("LOOM_FLIGHT_DIR"), *nodename = getenv("SLURMD_NODENAME");
	char node[64] = "", err[700], clean[2800];
	int i, n;
	if (nodename)
		plain(node, sizeof node, nodename);
	else if (gethostname(node, sizeof node - 1))
		snprintf(node, sizeof node, "node");
	if (!d || !*d) {
		fprintf(stderr, "loom-doctor: %s: the job has no LOOM_FLIGHT_DIR\n", node);
		return 1;
	}
	if ((n = loom_flight_read_dir(d, &recs, err, sizeof err, dump_bad, node, &bu)) < 0) {
		loom_flight_clean(clean, sizeof clean, err);
		fprintf(stderr, "loom-doctor: %s: %s\n", node, clean);
		return 1;
	}
	for (i = 0; i < n; i++) {
		dump_rec(node, &recs[i]);
		loom_flight_rec_clear(&recs[i]);
	}
	free(recs);
	printf("S %zu %zu\nE\n", bu.skipped_files, bu.skipped_bytes);
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
