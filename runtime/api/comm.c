/* runtime/api/comm.c: the public communicator calls (rank, size, names,
 * timeouts, split, dup, free, abort; revoke, agree, failed, shrink, grow)
 * through the communicator's backend. */
#include "backend/backend.h"
#include "flight/flight.h"
#include "metrics/metrics.h"

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
	loom_flight_slot_rename(c->flight, c->name);
	return LOOM_SUCCESS;
}

const char *loom_comm_name(const loom_comm_t *c) { return c ? c->name : NULL; }

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
	loom_flight_slot_free(c->flight);
	return c->be->free(c);
}

int loom_comm_abort(loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	return c->be->abort(c);
}

/* ---- surviving a lost member: the native backend's (core/comm_ft.c);
 * the others lack these entries ---- */
static int ft_unsupported(const loom_comm_t *c, const char *call)
{
	LOOM_WARN("%s: not supported by the %s backend (the native backend only)", call,
		  c->be->name);
	return LOOM_ERR_UNSUPPORTED;
}

int loom_comm_revoke(loom_comm_t *c)
{
	if (!c)
		return LOOM_ERR_INVALID;
	if (!c->be->revoke)
		return ft_unsupported(c, "loom_comm_revoke");
	return c->be->revoke(c);
}

int loom_comm_agree(loom_comm_t *c, int *flag)
{
	if (!c || !flag)
		return LOOM_ERR_INVALID;
	if (!c->be->agree)
		return ft_unsupported(c, "loom_comm_agree");
	return c->be->agree(c, flag);
}

int loom_comm_failed(loom_comm_t *c, int *ranks, int max, int *nfailed)
{
	int i;
	if (!c || !nfailed || max < 0 || (max > 0 && !ranks))
		return LOOM_ERR_INVALID;
	if (!c->be->agree)
		return ft_unsupported(c, "loom_comm_failed");
	for (i = 0; i < c->ft_nfailed && i < max; i++)
		ranks[i] = c->ft_failed[i];
	*nfailed = c->ft_nfailed;
	return LOOM_SUCCESS;
}

int loom_comm_shrink(loom_comm_t *c, loom_comm_t **newcomm)
{
	if (!c || !newcomm)
		return LOOM_ERR_INVALID;
	*newcomm = NULL;
	if (!c->be->shrink)
		return ft_unsupported(c, "loom_comm_shrink");
	return c->be->shrink(c, newcomm);
}

int loom_comm_grow(loom_comm_t *c, int nnew, loom_comm_t **newcomm)
{
	if (!newcomm)
		return LOOM_ERR_INVALID;
	*newcomm = NULL;
	if (!c || nnew < 1 || nnew > 4096)
		return LOOM_ERR_INVALID;
	if (!c->be->grow)
		return ft_unsupported(c, "loom_comm_grow");
	return c->be->grow(c, nnew, newcomm);
}
