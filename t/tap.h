/* t/tap.h: a small TAP producer for loom's C unit tests.
 *
 *   plan(3);                       or  plan(NO_PLAN) ... done_testing();
 *   ok(x == 1, "x is one");
 *   is_int(got, want, "count");
 *   is_str(got, want, "name");
 *   skip_all("no hwloc");          prints "1..0 # SKIP no hwloc", exits 0
 *                                  (only for what the build lacks)
 *   bail_out("mkdtemp: %s", why);  "Bail out! ...": the run fails, exits 1
 *   diag("context %d", n);
 *   return exit_status();          non-zero when a test failed
 *
 * Header-only on purpose: each test is one C file and one binary.
 */
#ifndef LOOM_TAP_H
#define LOOM_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_PLAN (-1)

static int tap_planned = NO_PLAN;
static int tap_run;
static int tap_failed;

static inline void tap_vdiag(const char *fmt, va_list ap)
{
	fputs("# ", stdout);
	vfprintf(stdout, fmt, ap);
	fputc('\n', stdout);
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tap_vdiag(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static inline void plan(int n)
{
	tap_planned = n;
	if (n != NO_PLAN)
		printf("1..%d\n", n);
	fflush(stdout);
}

static inline void skip_all(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void skip_all(const char *fmt, ...)
{
	va_list ap;
	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(0);
}

static inline int tap_vok(int pass, const char *file, int line, const char *fmt, va_list ap)
{
	tap_run++;
	if (!pass)
		tap_failed++;
	printf("%sok %d - ", pass ? "" : "not ", tap_run);
	vprintf(fmt, ap);
	printf("\n");
	if (!pass)
		printf("#   failed at %s:%d\n", file, line);
	fflush(stdout);
	return pass;
}

static inline int tap_ok(int pass, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static inline int tap_ok(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tap_vok(pass, file, line, fmt, ap);
	va_end(ap);
	return pass;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...) do { \
	long long tap_g_ = (long long)(got), tap_w_ = (long long)(want); \
	if (!tap_ok(tap_g_ == tap_w_, __FILE__, __LINE__, __VA_ARGS__)) \
		diag("     got: %lld\n#     expected: %lld", tap_g_, tap_w_); \
} while (0)

#define is_str(got, want, ...) do { \
	const char *tap_g_ = (got), *tap_w_ = (want); \
	int tap_p_ = (tap_g_ && tap_w_) ? strcmp(tap_g_, tap_w_) == 0 : tap_g_ == tap_w_; \
	if (!tap_ok(tap_p_, __FILE__, __LINE__, __VA_ARGS__)) \
		diag("     got: '%s'\n#     expected: '%s'", tap_g_ ? tap_g_ : "(null)", \
		     tap_w_ ? tap_w_ : "(null)"); \
} while (0)

/* substring match, for error messages */
#define like(got, needle, ...) do { \
	const char *tap_g_ = (got), *tap_n_ = (needle); \
	if (!tap_ok(tap_g_ && strstr(tap_g_, tap_n_) != NULL, __FILE__, __LINE__, __VA_ARGS__)) \
		diag("     '%s'\n#     does not contain '%s'", tap_g_ ? tap_g_ : "(null)", tap_n_); \
} while (0)

static inline void skip(int n, const char *why)
{
	for (int i = 0; i < n; i++) {
		tap_run++;
		printf("ok %d # SKIP %s\n", tap_run, why);
	}
	fflush(stdout);
}

static inline void bail_out(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void bail_out(const char *fmt, ...)
{
	va_list ap;
	fputs("Bail out! ", stdout);
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
	exit(1);
}

static inline void done_testing(void)
{
	if (tap_planned == NO_PLAN)
		printf("1..%d\n", tap_run);
	fflush(stdout);
}

static inline int exit_status(void)
{
	if (tap_planned != NO_PLAN && tap_planned != tap_run) {
		diag("planned %d tests but ran %d", tap_planned, tap_run);
		return 1;
	}
	return tap_failed ? 1 : 0;
}

#endif
