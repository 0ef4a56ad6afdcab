/* bench/handoff.c: how fast two CPUs hand cache lines to each other, the
 * figure that decides how loom writes its ring slots inside a node
 * (runtime/coll/near.c, docs/algorithms.md).
 *
 *   bench/handoff [-a CPU] [-b CPU] [-r RING_KIB] [-t TOTAL_MIB]
 *
 * Two threads, pinned to CPUs a and b (default 0 and 1), first bounce a
 * cache line between them (the round trip, as loom's look times its
 * fast-box allreduces), then stream TOTAL MiB from b to a through a ring
 * of 64 KiB chunks, once written with cached stores and once with
 * streaming (non-temporal) stores; the reader copies each chunk out, as
 * a rank takes a peer's slot. Near CPUs (a shared cache) give a short
 * round trip and the cached ring the faster one; far CPUs the other way.
 * A measurement only: it asserts nothing, and nothing runs it in CI. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#define CHUNK (64u * 1024)
#define BOUNCES 20000
#define SRC_BYTES (64u << 20) /* the writer's source, read round and round */

struct run {
	int cpu_a, cpu_b, stream;
	size_t ring_bytes, total;
	double rt_ns, gbs;  /* what the reader measured */
	char *ring, *src, *dst;
	_Alignas(64) _Atomic uint64_t head;   /* chunks written */
	_Alignas(64) _Atomic uint64_t tail;   /* chunks read */
	_Alignas(64) _Atomic uint32_t ball;   /* the bounced line */
};

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void relax(void)
{
#if defined(__x86_64__)
	_mm_pause();
#endif
}

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof set, &set);
}

static void put(char *to, const char *from, size_t n, int stream)
{
#if defined(__x86_64__)
	if (stream) {
		size_t i;
		for (i = 0; i < n; i += 16)
			_mm_stream_si128((__m128i *)(to + i), _mm_loadu_si128((const __m128i *)(from + i)));
		_mm_sfence();
		return;
	}
#else
	(void)stream;
#endif
	memcpy(to, from, n);
}

static void *writer(void *arg)
{
	struct run *r = arg;
	uint64_t k, n = r->total / CHUNK, slots = r->ring_bytes / CHUNK;
	uint32_t i;
	if (pin(r->cpu_b))
		perror("handoff: sched_setaffinity (writer)");
	for (i = 0; i < BOUNCES; i++) {
		while (atomic_load_explicit(&r->ball, memory_order_acquire) != 2 * i + 1)
			relax();
		atomic_store_explicit(&r->ball, 2 * i + 2, memory_order_release);
	}
	for (k = 0; k < n; k++) {
		while (k - atomic_load_explicit(&r->tail, memory_order_acquire) >= slots)
			relax();
		put(r->ring + (k % slots) * CHUNK, r->src + (k * CHUNK) % SRC_BYTES, CHUNK, r->stream);
		atomic_store_explicit(&r->head, k + 1, memory_order_release);
	}
	return NULL;
}

/* the reader's side of one pass, on CPU a: the round trip (ns) and the
 * ring's speed (GB/s) into r */
static void *reader(void *arg)
{
	struct run *r = arg;
	uint64_t k, n = r->total / CHUNK, slots = r->ring_bytes / CHUNK;
	uint32_t i;
	double t0;
	if (pin(r->cpu_a))
		perror("handoff: sched_setaffinity (reader)");
	t0 = now();
	for (i = 0; i < BOUNCES; i++) {
		atomic_store_explicit(&r->ball, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&r->ball, memory_order_acquire) != 2 * i + 2)
			relax();
	}
	r->rt_ns = (now() - t0) / BOUNCES * 1e9;
	t0 = now();
	for (k = 0; k < n; k++) {
		while (atomic_load_explicit(&r->head, memory_order_acquire) <= k)
			relax();
		memcpy(r->dst + (k * CHUNK) % SRC_BYTES, r->ring + (k % slots) * CHUNK, CHUNK);
		atomic_store_explicit(&r->tail, k + 1, memory_order_release);
	}
	r->gbs = (double)r->total / (now() - t0) / 1e9;
	return NULL;
}

/* one pass, both threads made afresh and each pinning itself (a thread
 * made by one already pinned, then moved, bounced the line 2-3 times
 * slower on the test VM) */
static int measure(struct run *r)
{
	pthread_t tr, tw;
	atomic_store(&r->head, 0);
	atomic_store(&r->tail, 0);
	atomic_store(&r->ball, 0);
	if (pthread_create(&tw, NULL, writer, r))
		return -1;
	if (pthread_create(&tr, NULL, reader, r))
		return -1;  /* the caller exits, the writer with it */
	return pthread_join(tr, NULL) || pthread_join(tw, NULL) ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct run *r;
	double rt[2], gbs[2];
	long ring_kib = 1024, total_mib = 256;
	int o, a = 0, b = 1;
	while ((o = getopt(argc, argv, "a:b:r:t:h")) != -1) {
		switch (o) {
		case 'a': a = atoi(optarg); break;
		case 'b': b = atoi(optarg); break;
		case 'r': ring_kib = atol(optarg); break;
		case 't': total_mib = atol(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-a CPU] [-b CPU] [-r RING_KIB] [-t TOTAL_MIB]\n", argv[0]);
			return o == 'h' ? 0 : 2;
		}
	}
	if (ring_kib < 64 || ring_kib % 64 || total_mib < 1) {
		fprintf(stderr, "handoff: -r takes a multiple of 64 KiB, -t at least 1 MiB\n");
		return 2;
	}
	r = aligned_alloc(64, sizeof *r);
	if (!r)
		return 1;
	memset(r, 0, sizeof *r);
	r->cpu_a = a;
	r->cpu_b = b;
	r->ring_bytes = (size_t)ring_kib << 10;
	r->total = (size_t)total_mib << 20;
	r->ring = aligned_alloc(4096, r->ring_bytes);
	r->src = aligned_alloc(4096, SRC_BYTES);
	r->dst = aligned_alloc(4096, SRC_BYTES);
	if (!r->ring || !r->src || !r->dst) {
		fprintf(stderr, "handoff: out of memory\n");
		return 1;
	}
	memset(r->ring, 1, r->ring_bytes);
	memset(r->src, 2, SRC_BYTES);
	memset(r->dst, 3, SRC_BYTES);
	for (r->stream = 0; r->stream < 2; r->stream++) {
		if (measure(r)) {
			fprintf(stderr, "handoff: could not start its threads\n");
			return 1;
		}
		rt[r->stream] = r->rt_ns;
		gbs[r->stream] = r->gbs;
	}
	printf("# CPUs %d and %d, %ld MiB through a %ld KiB ring of 64 KiB chunks\n", a, b,
	       total_mib, ring_kib);
	printf("round trip %.0f ns, %.0f ns; cached stores %.2f GB/s, streaming stores %.2f GB/s\n",
	       rt[0], rt[1], gbs[0], gbs[1]);
	return 0;
}
