/* runtime/comm.c: the public communicator calls (rank, size, names,
 * timeouts, split, dup, free, abort) through the communicator's backend,
 * and the native backend's split/dup/free/abort. */
#include "loom_internal.h"
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int loom_comm_rank(const loom_comm_t *c) { return c ? c->rank : -1; }
int loom_comm_size(const loom_comm_t *c) { return c ? c->size : -1; }
int loom_comm_local_rank(const loom_comm_t *c) { return c ? c->local_rank : -1; }
int loom_comm_local_size(const loom_comm_t *c) { return c ? c->local_size : -1; }

int loom_comm_set_timeout(loom_comm_t *c, double seconds)
{
	if (!c || !(seconds > 0))
		return LOOM_ERR_INVALID;
	c->timeout = seconds;
	if (c->nodec)
		c->nodec->timeout = seconds;
	if (c->leaderc)
		c->leaderc->timeout = seconds;
	return LOOM_SUCCESS;
}

int loom_comm_set_name(loom_comm_t *c, const char *name)
{
	if (!c || !name)
		return LOOM_ERR_INVALID;
	snprintf(c->name, sizeof c->name, "%s", name);
	loom_metrics_rename(c->metrics, c->name);
	return LOOM_SUCCESS;
}

const char *loom_comm_name(const loom_comm_t *c) { return c ? c->name : NULL; }

struct ck { int32_t color, key; };

static int ck_members(const struct ck *all, int n, int color, int *out)
{
	int m = 0, i, j;
	for (i = 0; i < n; i++) {
		if (all[i].color != color)
			continue;
		/* insertion by (key, rank) */
		for (j = m; j > 0 && all[out[j - 1]].key > all[i].key; j--)
			out[j] = out[j - 1];
		out[j] = i;
		m++;
	}
	return m;
}

static int split_named(loom_comm_t *c, int color, int key, loom_comm_t **out, const char *what)
{
	struct ck mine = { color, key }, *all;
	int *mem, *wr, m, i, me = -1, rc;
	char name[80];
	uint64_t ctx;
	*out = NULL;
	all = calloc((size_t)c->size, sizeof *all);
	mem = calloc((size_t)c->size, sizeof *mem);
	wr = calloc((size_t)c->size, sizeof *wr);
	if (!all || !mem || !wr) {
		free(all); free(mem); free(wr);
		return LOOM_ERR_NOMEM;
	}
	rc = loom_allgather(&mine, all, 2, LOOM_INT32, c);
	c->nsplit++;
	if (rc == LOOM_SUCCESS && color != LOOM_UNDEFINED) {
		m = ck_members(all, c->size, color, mem);
		for (i = 0; i < m; i++) {
			wr[i] = c->wrank[mem[i]];
			if (mem[i] == c->rank)
				me = i;
		}
		ctx = loom_mix64(loom_mix64(c->ctx, c->nsplit), (uint64_t)(uint32_t)color);
		snprintf(name, sizeof name, "%s%llu", what, (unsigned long long)c->nsplit);
		*out = loom_comm_create(c->w, ctx, m, wr, me, name);
		if (!*out)
			rc = LOOM_ERR_NOMEM;
		else
			(*out)->timeout = c->timeout;
		(void)me;
	}
	free(all);
	free(mem);
	free(wr);
	return rc;
}

/* ---- the native backend's communicator entries ---- */
int loom_native_split(struct loom_comm *c, int color, int key, struct loom_comm **out)
{
	return split_named(c, color, key, out, "split");
}

int loom_native_dup(struct loom_comm *c, struct loom_comm **out)
{
	return split_named(c, 0, c->rank, out, "dup");
}

int loom_native_free(struct loom_comm *c)
{
	loom_native_destroy(c);
	return LOOM_SUCCESS;
}

int loom_native_abort(struct loom_comm *c)
{
	int i, zero = 0;
	atomic_compare_exchange_strong(&c->failed, &zero, LOOM_ERR_ABORTED);
	LOOM_ERR("communicator %s aborted by this rank", c->name);
	for (i = 0; i < c->size; i++)
		if (i != c->rank)
			loom_tcp_control(c->w, c->wrank[i], CTL_ABORT, c->ctx, LOOM_ERR_ABORTED);
	loom_bell_ring(loom_comm_bell(c));
	if (c->nodec)
		atomic_store(&c->nodec->failed, LOOM_ERR_ABORTED);
	if (c->leaderc)
		atomic_store(&c->leaderc->failed, LOOM_ERR_ABORTED);
	return LOOM_SUCCESS;
}

/* ---- public: through the communicator's backend ---- */
int loom_comm_split(loom_comm_t *c, int color, int key, loom_comm_t **newcomm)
{
	if (!c || !newcomm || (color < 0 && color != LOOM_UNDEFINED))
		return LOOM_ERR_INVALID;
	*newcomm = NULL;
	return c->be->split(c, color, key, newcomm);
}

int loom_comm_dup(loom_comm_t *c, loom_comm_t **newcomm)
{
	if (!c || !newcomm)
		return LOOM_ERR_INVALID;
	*newcomm = NULL;
	return c->be->dup(c, newcomm);
}

int loom_comm_free(loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	if (c->is_world) {
		LOOM_WARN("loom_comm_free on the world communicator: use loom_finalize");
		return LOOM_ERR_INVALID;
	}
	return c->be->free(c);
}

int loom_comm_abort(loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	return c->be->abort(c);
}
