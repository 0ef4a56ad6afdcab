/* runtime/core/comm_native.c: the native backend's split, dup, free, abort
 * and revoke:
 * members agreed by one allgather of (color, key), a context id mixed
 * from the parent's, abort and revoke notices through the TCP engine. */
#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	struct loom_opdesc d = { LOOM_OP_ALLGATHER, &mine, all, 2, LOOM_INT32, LOOM_SUM, 0, 0 };
	rc = loom_native_coll(c, &d, NULL);
	c->nsplit++;
	if (rc == LOOM_SUCCESS && color != LOOM_UNDEFINED) {
		m = ck_members(all, c->size, color, mem);
		for (i = 0; i < m; i++) {
			wr[i] = loom_comm_wrank(c, mem[i]);
			if (mem[i] == c->rank)
				me = i;
		}
		ctx = loom_mix64(loom_mix64(c->ctx, c->nsplit), (uint64_t)(uint32_t)color);
		snprintf(name, sizeof name, "%s%llu", what, (unsigned long long)c->nsplit);
		*out = loom_comm_create(c->w, ctx, m, wr, me, name);
		if (!*out) {
			rc = LOOM_ERR_NOMEM;
		} else {
			(*out)->be = c->be;
			(*out)->timeout = c->timeout;
		}
		(void)me;
	}
	free(all);
	free(mem);
	free(wr);
	return rc;
}

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

/* fail c here with status and tell every other member, which passes it
 * on (transport_tcp_read.c): abort and revoke differ only in status */
static int fail_everywhere(struct loom_comm *c, int status, const char *what)
{
	int i, zero = 0;
	atomic_compare_exchange_strong(&c->failed, &zero, status);
	LOOM_ERR("communicator %s %s by this rank", c->name, what);
	for (i = 0; i < c->size; i++)
		if (i != c->rank)
			loom_tcp_control(c->w->eng, loom_comm_wrank(c, i), CTL_ABORT, c->ctx,
					 LOOM_ABORT_AUX(status, loom_comm_wrank(c, c->rank)));
	loom_bell_ring(loom_comm_bell(c));
	if (c->nodec)
		atomic_store(&c->nodec->failed, status);
	if (c->leaderc)
		atomic_store(&c->leaderc->failed, status);
	return LOOM_SUCCESS;
}

int loom_native_abort(struct loom_comm *c)
{
	return fail_everywhere(c, LOOM_ERR_ABORTED, "aborted");
}

/* A revoke is an abort with its own status: the communicator's
 * operations end, its agreements (comm_ft.c) go on over their own
 * contexts, which a failed communicator does not touch. */
int loom_native_revoke(struct loom_comm *c)
{
	return fail_everywhere(c, LOOM_ERR_REVOKED, "revoked");
}
