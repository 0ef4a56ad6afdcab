/* runtime/util/sync.c: monotonic time, environment numbers, and bells (a futex
 * counter: waiters spin briefly elsewhere, then sleep here; works across
 * processes when the bell lives in shared memory). */
#include "util/util.h"

#include <errno.h>
#include <sched.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

double loom_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* for deadlines and waits measured in seconds: the kernel's last tick
 * (a few ms), read without the clock source: two of the four clock reads
 * of an 8-byte collective in a node were a third of its time */
double loom_now_coarse(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int loom_env_flag(_Atomic int *cache, const char *name, const char *equals)
{
	int v = atomic_load_explicit(cache, memory_order_relaxed);
	if (v < 0) {
		const char *e = getenv(name);
		v = e && *e && (!equals || !strcmp(e, equals));
		atomic_store_explicit(cache, v, memory_order_relaxed);
	}
	return v;
}

double loom_env_double(const char *name, double dflt)
{
	const char *v = getenv(name);
	char *end;
	double d;
	if (!v || !*v)
		return dflt;
	d = strtod(v, &end);
	if (*end || d != d) {
		LOOM_WARN("%s=%s is not a number; using %g", name, v, dflt);
		return dflt;
	}
	return d;
}

long loom_env_long(const char *who, const char *name, long dflt, long lo, long hi)
{
	const char *e = getenv(name);
	char *end;
	long v;
	if (!e || !*e)
		return dflt;
	v = strtol(e, &end, 10);
	if (*end || v < lo || v > hi) {
		LOOM_WARN("%s: %s=%s ignored (want %ld..%ld); using %ld", who, name, e, lo, hi, dflt);
		return dflt;
	}
	return v;
}

uint64_t loom_mix64(uint64_t a, uint64_t b)
{
	/* splitmix64 finaliser over a combination of both */
	uint64_t z = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

void loom_futex_wait(_Atomic uint32_t *word, uint32_t seen, double timeout_s)
{
	struct timespec ts;
	if (timeout_s <= 0)
		return;
	ts.tv_sec = (time_t)timeout_s;
	ts.tv_nsec = (long)((timeout_s - (double)ts.tv_sec) * 1e9);
	syscall(SYS_futex, word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

void loom_futex_wake_all(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, 1 << 30, NULL, NULL, 0);
}

void loom_bell_ring(struct loom_bell *b)
{
	atomic_fetch_add_explicit(&b->seq, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&b->waiters, memory_order_seq_cst))
		loom_futex_wake_all(&b->seq);
}

void loom_bell_wait(struct loom_bell *b, uint32_t seen, double timeout_s)
{
	if (timeout_s <= 0)
		return;
	atomic_fetch_add_explicit(&b->waiters, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&b->seq, memory_order_seq_cst) == seen)
		loom_futex_wait(&b->seq, seen, timeout_s);
	atomic_fetch_sub_explicit(&b->waiters, 1, memory_order_seq_cst);
}

int loom_backoff_step(struct loom_backoff *b)
{
	double t;
	if (b->n++ == 0) {
		b->t0 = loom_now();
		return 0;
	}
	if (b->n < LOOM_YIELD_FROM) {
		/* the clock is read every 16 pauses only (a pause: 10-150 cycles) */
		if (b->n & 15) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
			return 0;
		}
		if (loom_now() - b->t0 < LOOM_SPIN_S)
			return 0;
		b->n = LOOM_YIELD_FROM;
	}
	t = loom_now() - b->t0;
	if (t >= b->yield_s)
		return 1;
	sched_yield();
	return 0;
}
