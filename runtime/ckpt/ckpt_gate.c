/* runtime/ckpt/ckpt_gate.c: the staging gate of an async save. The
 * caller copies the registered blocks into the staging buffer front to
 * back while the background writer already saves from it: the writer's
 * reads of the buffer wait here until the copy has passed the bytes they
 * read. The copy opens the gate as it goes (a piece at a time), and all
 * the way when it is done or abandoned. */
#include "config.h"
#include "ckpt/ckpt_internal.h"

#include <stdint.h>
#include <time.h>

int loom_ck_gate_init(ck_gate_t *g)
{
	g->base = NULL;
	g->done = SIZE_MAX;
	if (pthread_mutex_init(&g->mu, NULL))
		return LOOM_ERR_NOMEM;
	if (pthread_cond_init(&g->cv, NULL)) {
		pthread_mutex_destroy(&g->mu);
		return LOOM_ERR_NOMEM;
	}
	return LOOM_SUCCESS;
}

void loom_ck_gate_destroy(ck_gate_t *g)
{
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
}

void loom_ck_gate_close(ck_gate_t *g, const char *base)
{
	pthread_mutex_lock(&g->mu);
	g->base = base;
	g->waited = 0;
	__atomic_store_n(&g->done, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&g->mu);
}

void loom_ck_gate_open(ck_gate_t *g, size_t done)
{
	pthread_mutex_lock(&g->mu);
	__atomic_store_n(&g->done, done, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

void loom_ck_gate_wait(ck_gate_t *g, const char *p, uint64_t len)
{
	size_t need = (size_t)(p - g->base) + (size_t)len;
	if (__atomic_load_n(&g->done, __ATOMIC_ACQUIRE) >= need)
		return;
	pthread_mutex_lock(&g->mu);
	g->waited = 1;
	pthread_cond_broadcast(&g->cv);
	while (__atomic_load_n(&g->done, __ATOMIC_ACQUIRE) < need)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

void loom_ck_gate_hold(ck_gate_t *g, int s)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += s;
	pthread_mutex_lock(&g->mu);
	while (!g->waited && pthread_cond_timedwait(&g->cv, &g->mu, &until) == 0)
		;
	pthread_mutex_unlock(&g->mu);
}
