/* examples/common.h: what the examples share: argument parsing with clear
 * errors, a loom status check, a deterministic random generator, a clock.
 * Uses only the public API of <loom.h>. Header-only: each example is one
 * program built from one .c file. */
#ifndef LOOM_EXAMPLES_COMMON_H
#define LOOM_EXAMPLES_COMMON_H

#include <loom.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *ex_prog = "loom-example";
static loom_comm_t *ex_world;

/* Before loom_init: is this the task that should speak? (rank 0 of the
 * launcher's numbering, or no launcher at all) */
static inline int ex_first_task(void)
{
	const char *v[] = { "PMIX_RANK", "RANK", "SLURM_PROCID" };
	for (int i = 0; i < 3; i++) {
		const char *s = getenv(v[i]);
		if (s && *s)
			return strcmp(s, "0") == 0;
	}
	return 1;
}

/* bad command line: one line saying what, exit 2 (every task exits) */
static inline void ex_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void ex_usage_error(const char *fmt, ...)
{
	if (ex_first_task()) {
		va_list ap;
		fprintf(stderr, "%s: ", ex_prog);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fprintf(stderr, "\nTry '%s --help'.\n", ex_prog);
	}
	exit(2);
}

/* getopt_long returned '?' (opterr = 0): name the option */
static inline void ex_getopt_error(const struct option *lo, char **argv) __attribute__((noreturn));
static inline void ex_getopt_error(const struct option *lo, char **argv)
{
	for (; optopt && lo->name; lo++)
		if (lo->val == optopt)
			ex_usage_error("option '--%s' needs an argument", lo->name);
	ex_usage_error("unknown option '%s'", argv[optind - 1]);
}

static inline long ex_parse_long(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end)
		ex_usage_error("%s: expected an integer, got '%s'", opt, s);
	if (v < min || v > max)
		ex_usage_error("%s: %ld is out of range [%ld, %ld]", opt, v, min, max);
	return v;
}

static inline double ex_parse_double(const char *opt, const char *s, double min, double max)
{
	char *end;
	double v;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end)
		ex_usage_error("%s: expected a number, got '%s'", opt, s);
	if (!(v >= min && v <= max))
		ex_usage_error("%s: %g is out of range [%g, %g]", opt, v, min, max);
	return v;
}

/* a failed loom call: say which, on which rank, and end the job */
static inline void ex_check(int rc, const char *what)
{
	if (rc == LOOM_SUCCESS)
		return;
	fprintf(stderr, "%s: rank %d: %s: %s\n", ex_prog, loom_comm_rank(ex_world), what,
		loom_strerror(rc));
	if (ex_world && loom_comm_size(ex_world) > 1)
		loom_comm_abort(ex_world);
	exit(1);
}

static inline void ex_init(const char *prog)
{
	ex_prog = prog;
	ex_check(loom_init(&ex_world), "loom_init");
}

static inline void *ex_alloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fprintf(stderr, "%s: out of memory (%zu x %zu bytes)\n", ex_prog, n, size);
		exit(1);
	}
	return p;
}

/* rank 0 prints */
static inline void ex_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void ex_say(const char *fmt, ...)
{
	va_list ap;
	if (loom_comm_rank(ex_world) != 0)
		return;
	printf("%s: ", ex_prog);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* every rank agrees on a verdict: 1 only when all ranks pass */
static inline int ex_all_pass(int pass)
{
	int v = pass ? 1 : 0, all = 0;
	ex_check(loom_allreduce(&v, &all, 1, LOOM_INT32, LOOM_MIN, ex_world), "verdict allreduce");
	return all;
}

/* splitmix64: the same stream on every machine for a given seed */
static inline uint64_t ex_rand64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in [-1, 1), 24 random bits */
static inline float ex_randf(uint64_t *s)
{
	return (float)(ex_rand64(s) >> 40) / 8388608.0f - 1.0f;
}

static inline double ex_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
