/* runtime/tools/loom_doctor.c: loom-doctor, which rank is stuck in which
 * collective, from the flight records of a job (LOOM_FLIGHT_DIR).
 *   loom-doctor [--json] DIR...       the records in DIR (every node's, when shared)
 *   loom-doctor [--json] --job JOBID  each node's records of a running job,
 *                                     copied here with srun --overlap
 *   loom-doctor --slow [--last N] [--until SEQ] ...
 *                                     which rank made the others wait
 *                                     (flight_slow.c), from the same records
 * It reads files anybody may have made, as root too: --max-files (16384)
 * and --max-mb (512) bound what it reads and keeps; what they leave out
 * is said.
 * Exit 0: nothing stuck; 1: a hang or mismatch found (--slow: a straggler
 * named); 2: no usable record or a usage error. */
#include "flight/flight.h"
#include "flight/flight_slow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct bad {
	int json, n;
};

/* a file that is not a usable record: said, then skipped (its name is
 * anybody's: cleaned of control bytes for the terminal) */
static void bad_file(const char *msg, void *arg)
{
	struct bad *b = arg;
	char clean[2800];
	if (b->json) {
		printf("%s", b->n ? "," : "");
		loom_flight_json_str(stdout, msg);
	} else {
		loom_flight_clean(clean, sizeof clean, msg);
		fprintf(stderr, "loom-doctor: %s; skipped\n", clean);
	}
	b->n++;
}

/* what the limits left out, said once at the end */
static void limits_said(struct bad *b, const struct loom_flight_budget *bu)
{
	char msg[200];
	if (bu->skipped_files) {
		snprintf(msg, sizeof msg, "%zu files beyond the limit of %zu files (--max-files)",
			 bu->skipped_files, bu->max_files);
		if (b->json) {
			printf("%s", b->n++ ? "," : "");
			loom_flight_json_str(stdout, msg);
		} else {
			fprintf(stderr, "loom-doctor: skipped %s\n", msg);
		}
	}
	if (bu->skipped_bytes) {
		snprintf(msg, sizeof msg, "%zu files beyond the limit of %zu MiB of records kept "
			 "(--max-mb)", bu->skipped_bytes, bu->max_bytes >> 20);
		if (b->json) {
			printf("%s", b->n++ ? "," : "");
			loom_flight_json_str(stdout, msg);
		} else {
			fprintf(stderr, "loom-doctor: skipped %s\n", msg);
		}
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

/* --job: a running job's node-local records, one srun task per node that
 * prints its files as base64 lines (gzip first where both ends have it: a
 * record of 520 KiB is mostly empty ring and packs into 1 KiB, which keeps
 * srun's I/O short); srun -l labels each line with its task, so the nodes'
 * streams come apart again here, in a temporary directory. Each node ends
 * with a line of its own; when one is missing (srun lost a stream) the
 * copy is made once more. */
static int collect(const char *job, char *dir, size_t len)
{
	char cmd[2048], tmpl[] = "/tmp/loom-doctor.XXXXXX";
	const char *p;
	int rc, tries;
	for (p = job; *p; p++)
		if ((*p < '0' || *p > '9') && *p != '_') {
			fprintf(stderr, "loom-doctor: --job %s: expected a job id (digits)\n", job);
			return -1;
		}
	if (!mkdtemp(tmpl)) {
		fprintf(stderr, "loom-doctor: mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	/* each node: its LOOM_FLIGHT_DIR (the step's environment: the plugin's
	 * for the job, or the caller's, which srun passes on) as
	 * "=loom-flight= node.file" lines ("=loom-flight-gz=" when packed),
	 * each followed by the file in base64, then "=loom-flight-end=" */
	snprintf(cmd, sizeof cmd,
		 "n=$(squeue -h -o %%D -j %s) && [ -n \"$n\" ] || "
		 "{ echo \"loom-doctor: job %s is not running\" >&2; exit 1; }; "
		 "LOOM_DOCTOR_GZ=$(command -v gzip >/dev/null 2>&1 && echo 1); export LOOM_DOCTOR_GZ; "
		 "srun --overlap --jobid=%s -N \"$n\" --ntasks-per-node=1 --kill-on-bad-exit=0 -l sh -c '"
		 "d=${LOOM_FLIGHT_DIR:?the job has no LOOM_FLIGHT_DIR}; cd \"$d\" || exit 1; "
		 "z=; [ -n \"$LOOM_DOCTOR_GZ\" ] && command -v gzip >/dev/null 2>&1 && z=-gz; "
		 "for f in *.flight; do [ -f \"$f\" ] || continue; "
		 "echo \"=loom-flight$z= $SLURMD_NODENAME.$f\"; "
		 "if [ -n \"$z\" ]; then gzip -1c \"$f\" | base64; else base64 \"$f\"; fi; done; "
		 "echo =loom-flight-end=' "
		 "| awk -v d=%s -v want=\"$n\" '{ t = $1; sub(/^ *[0-9]+: /, \"\"); "
		 "if ($0 == \"=loom-flight-end=\") { ends++; next } "
		 "if ($0 ~ /^=loom-flight(-gz)?= /) { if (p[t] != \"\") close(p[t]); "
		 "gz = $0 ~ /^=loom-flight-gz= /; n = substr($0, gz ? 18 : 15); "
		 "p[t] = n ~ /^[A-Za-z0-9._-]+$/ ? (gz ? \"base64 -d | gzip -dc >\" : \"base64 -d >\") d \"/\" n : \"\"; next } "
		 "if (p[t] != \"\") print | p[t] } "
		 "END { for (t in p) if (p[t] != \"\") close(p[t]); exit ends < want ? 3 : 0 }'",
		 job, job, job, tmpl);
	for (tries = 0; tries < 2; tries++)
		if (!(rc = system(cmd)))
			break;
	if (rc) {
		fprintf(stderr, "loom-doctor: --job %s: collecting with srun --overlap failed "
			"(status %d, twice): the job must be running and yours (or run loom-doctor DIR "
			"on each node, or set a shared flight directory: see loom-doctor(1))\n",
			job, rc);
	}
	snprintf(dir, len, "%s", tmpl);
	return 0;
}

int main(int argc, char **argv)
{
	struct loom_flight_rec *all = NULL, *recs, *nv;
	struct bad b = { 0, 0 };
	struct loom_flight_budget bu = { LOOM_FLIGHT_READ_FILES, LOOM_FLIGHT_READ_BYTES, 0, 0, 0, 0 };
	char err[700], jobdir[64] = "";
	const char *job = NULL;
	int i, n = 0, k, first, stuck, slow = 0;
	size_t last = LOOM_FLIGHT_SLOW_LAST, until = 0;
	struct timespec ts;
	for (first = 1; first < argc && argv[first][0] == '-'; first++) {
		if (!strcmp(argv[first], "--json"))
			b.json = 1;
		else if (!strcmp(argv[first], "--job") && first + 1 < argc)
			job = argv[++first];
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
	if ((job ? first != argc : first >= argc) ||
	    (!slow && (until || last != LOOM_FLIGHT_SLOW_LAST)))
		return usage();
	if (job && collect(job, jobdir, sizeof jobdir))
		return 2;
	if (b.json)
		printf("{\"errors\":[");
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
	if (b.json)
		printf(slow ? "],\"slow\":" : "],\"report\":");
	clock_gettime(CLOCK_REALTIME, &ts);
	if (slow)
		stuck = loom_flight_slow_report(stdout, all, n, last, until, b.json);
	else
		stuck = loom_flight_report(stdout, all, n, (double)ts.tv_sec + ts.tv_nsec * 1e-9,
					   b.json);
	if (b.json)
		printf("}\n");
	for (i = 0; i < n; i++)
		loom_flight_rec_clear(&all[i]);
	free(all);
	if (job && jobdir[0]) {
		char cmd[128];
		snprintf(cmd, sizeof cmd, "rm -rf '%s'", jobdir);
		if (system(cmd)) {
			/* a temporary directory left behind is not worth failing for */
		}
	}
	if (!n) {
		if (!b.json)
			fprintf(stderr, "loom-doctor: no usable flight record\n");
		return 2;
	}
	return stuck > 0 ? 1 : 0;
}
