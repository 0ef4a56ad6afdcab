/* runtime/tools/loom_doctor.c: loom-doctor, which rank is stuck in which
 * collective, from the flight records of a job (LOOM_FLIGHT_DIR).
 *   loom-doctor [--json] DIR...       the records in DIR (every node's, when shared)
 *   loom-doctor [--json] --job JOBID  each node's records of a running job,
 *                                     copied here with srun --overlap
 *   loom-doctor --slow [--last N] [--until SEQ] ...
 *                                     which rank made the others wait
 *                                     (flight_slow.c), from the same records
 *   loom-doctor --dump                (internal) what --job runs on each node
 * It reads files anybody may have made, as root too: --max-files (16384)
 * and --max-mb (512) bound what it reads and keeps; what they leave out
 * is said.
 * Exit 0: nothing stuck; 1: a hang or mismatch found (--slow: a straggler
 * named); 2: no usable record or a usage error. */
#include "doctor.h"
#include "flight/flight_slow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bad {
	struct doctor_json *json;   /* NULL: text */
};

/* a file that is not a usable record: said, then skipped (its name is
 * anybody's: cleaned of control bytes for the terminal) */
static void bad_file(const char *msg, void *arg)
{
	struct bad *b = arg;
	char clean[2800];
	if (b->json) {
		doctor_json_error(b->json, msg);
	} else {
		loom_flight_clean(clean, sizeof clean, msg);
		fprintf(stderr, "loom-doctor: %s; skipped\n", clean);
	}
}

/* what the limits left out, said once at the end */
static void limits_said(struct bad *b, const struct loom_flight_budget *bu)
{
	char msg[200];
	if (bu->skipped_files) {
		snprintf(msg, sizeof msg, "%zu files beyond the limit of %zu files (--max-files)",
			 bu->skipped_files, bu->max_files);
		if (b->json)
			doctor_json_error(b->json, msg);
		else
			fprintf(stderr, "loom-doctor: skipped %s\n", msg);
	}
	if (bu->skipped_bytes) {
		snprintf(msg, sizeof msg, "%zu files beyond the limit of %zu MiB of records kept "
			 "(--max-mb)", bu->skipped_bytes, bu->max_bytes >> 20);
		if (b->json)
			doctor_json_error(b->json, msg);
		else
			fprintf(stderr, "loom-doctor: skipped %s\n", msg);
	}
}

/* a positive count for a limit, or 0 */
static size_t limit_arg(const char *s)
{
	char *end;
	unsigned long long v;
	errno = 0;
	v = strtoull(s, &end, 10);
	return errno || *end || !*s || *s == '-' || !v || v > ((size_t)-1 >> 21) ? 0 : (size_t)v;
}

static int usage(void)
{
	fprintf(stderr, "usage: loom-doctor [--json] [--max-files N] [--max-mb N] DIR...\n"
			"       loom-doctor [--json] [--max-files N] [--max-mb N] --job JOBID\n"
			"       loom-doctor --slow [--last N] [--until SEQ] [options] DIR... | --job JOBID\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct loom_flight_rec *all = NULL, *recs, *nv;
	struct bad b = { NULL };
	struct loom_flight_budget bu = { LOOM_FLIGHT_READ_FILES, LOOM_FLIGHT_READ_BYTES, 0, 0, 0, 0 };
	char err[700], jobdir[64] = "";
	const char *job = NULL;
	int i, n = 0, k, first, stuck, json = 0, dump = 0, slow = 0;
	size_t last = LOOM_FLIGHT_SLOW_LAST, until = 0;
	double now;
	struct timespec ts;
	for (first = 1; first < argc && argv[first][0] == '-'; first++) {
		if (!strcmp(argv[first], "--json"))
			json = 1;
		else if (!strcmp(argv[first], "--job") && first + 1 < argc)
			job = argv[++first];
		else if (!strcmp(argv[first], "--dump"))   /* on a node, for --job */
			dump = 1;
		else if (!strcmp(argv[first], "--max-files") && first + 1 < argc &&
			 (bu.max_files = limit_arg(argv[first + 1])))
			first++;
		else if (!strcmp(argv[first], "--max-mb") && first + 1 < argc &&
			 (bu.max_bytes = limit_arg(argv[first + 1]) << 20))
			first++;
		else if (!strcmp(argv[first], "--slow"))
			slow = 1;
		else if (!strcmp(argv[first], "--last") && first + 1 < argc &&
			 (last = limit_arg(argv[first + 1])))
			first++;
		else if (!strcmp(argv[first], "--until") && first + 1 < argc &&
			 (until = limit_arg(argv[first + 1])))
			first++;
		else if (!strcmp(argv[first], "--help") || !strcmp(argv[first], "-h"))
			return usage(), 0;
		else
			return usage();
	}
	if (dump)
		return job || json || slow || first != argc ? usage() : doctor_dump(&bu);
	if ((job ? first != argc : first >= argc) ||
	    (!slow && (until || last != LOOM_FLIGHT_SLOW_LAST)))
		return usage();
	if (json && !(b.json = doctor_json_new())) {
		fprintf(stderr, "loom-doctor: out of memory\n");
		return 2;
	}
	if (job && doctor_collect(job, &bu, jobdir, sizeof jobdir, bad_file, &b)) {
		doctor_json_free(b.json);
		return 2;
	}
	for (i = first; i < argc || (job && i == first); i++) {
		const char *d = job ? jobdir : argv[i];
		k = loom_flight_read_dir(d, &recs, err, sizeof err, bad_file, &b, &bu);
		if (k < 0) {
			bad_file(err, &b);
			continue;
		}
		if (k && (nv = realloc(all, (size_t)(n + k) * sizeof *all))) {
			all = nv;
			memcpy(all + n, recs, (size_t)k * sizeof *recs);
			n += k;
		}
		free(recs);
	}
	limits_said(&b, &bu);
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
	if (b.json) {
		stuck = slow ? doctor_json_slow(b.json, all, n, last, until)
			     : doctor_json_report(b.json, all, n, now);
		doctor_json_print(b.json, stdout);
	} else {
		stuck = slow ? loom_flight_slow_report(stdout, all, n, last, until)
			     : loom_flight_report(stdout, all, n, now);
	}
	for (i = 0; i < n; i++)
		loom_flight_rec_clear(&all[i]);
	free(all);
	/* a temporary directory left behind is not worth failing for */
	if (job && jobdir[0])
		doctor_collect_done(jobdir);
	if (!n) {
		if (!json)
			fprintf(stderr, "loom-doctor: no usable flight record\n");
		return 2;
	}
	return stuck > 0 ? 1 : 0;
}
