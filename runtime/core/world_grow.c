/* runtime/core/world_grow.c: the world's tables grow by newcomers (node
 * numbers, node names, the engine's addresses), and the checks on the
 * counts a newcomer takes from its leader (core/grow.h). The world only
 * grows: dead ranks keep their numbers, so every communicator's world
 * ranks stay valid. A grow runs while no other operation of the process
 * reads the world's tables (loom_comm_grow is collective and blocking). */
#include "core/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int loom_join_head_check(const struct loom_join_head *h, char *why, size_t wlen)
{
	if (h->nnew < 1 || h->nnew > LOOM_GROW_MAX_NEW)
		snprintf(why, wlen, "%d newcomers (1..%d)", h->nnew, LOOM_GROW_MAX_NEW);
	else if (h->base < 1 || h->base > LOOM_GROW_MAX_WORLD - h->nnew)
		snprintf(why, wlen, "a world of %d ranks before the newcomers", h->base);
	else if (h->index < 0 || h->index >= h->nnew)
		snprintf(why, wlen, "newcomer %d of %d", h->index, h->nnew);
	else if (h->members < 1 || h->members > h->base)
		snprintf(why, wlen, "%d members in a world of %d", h->members, h->base);
	else
		return 0;
	return -1;
}

size_t loom_join_table_len(const struct loom_join_head *h)
{
	return (size_t)(h->base + h->nnew) * sizeof(struct loom_join_entry) +
	       (size_t)h->members * sizeof(int32_t);
}

/* name's node index among names[0..*nn), added at the end if new */
static int node_index(char (*names)[64], int *nn, const char *name)
{
	int k;
	for (k = 0; k < *nn; k++)
		if (!strncmp(names[k], name, 63))
			return k;
	snprintf(names[*nn], 64, "%.63s", name);
	return (*nn)++;
}

/* every rank's node in the grown world; names grows with new nodes */
static int *grown_nodes(struct loom_world *w, int base, int n, const struct loom_join_entry *e,
			char (*names)[64], int *nn)
{
	int i, *node = malloc((size_t)(base + n) * sizeof *node);
	if (!node)
		return NULL;
	for (i = 0; i < w->size; i++)
		node[i] = loom_world_node_of(w, i);
	for (; i < base; i++)            /* not known here: a node of no name */
		node[i] = node_index(names, nn, "");
	for (i = 0; i < n; i++)
		node[base + i] = node_index(names, nn, e[i].node);
	return node;
}

static int engine_grow(struct loom_world *w, int base, int n, const struct loom_join_entry *e)
{
	uint32_t *ip = calloc((size_t)(base - w->size + n), sizeof *ip);
	uint16_t *port = calloc((size_t)(base - w->size + n), sizeof *port);
	int i, rc = LOOM_ERR_NOMEM;
	if (ip && port) {
		for (i = 0; i < n; i++) {
			ip[base - w->size + i] = e[i].ip;
			port[base - w->size + i] = e[i].port;
		}
		rc = loom_engine_grow(w->eng, base + n, ip, port);
	}
	free(ip);
	free(port);
	return rc;
}

int loom_world_grow(struct loom_world *w, int base, int n, const struct loom_join_entry *e)
{
	char (*names)[64] = calloc((size_t)(w->nnodes + n + 1), sizeof *names);
	struct loom_rankmap m;
	int nn = w->nnodes, *node = NULL, rc = LOOM_ERR_NOMEM;
	if (base < w->size || n < 1)
		return LOOM_ERR_INVALID;
	memset(&m, 0, sizeof m);
	if (names) {
		memcpy(names, w->node_names, (size_t)w->nnodes * sizeof *names);
		node = grown_nodes(w, base, n, e, names, &nn);
	}
	if (node && !loom_rankmap_set(&m, base + n, node))
		rc = engine_grow(w, base, n, e);
	free(node);
	if (rc) {
		loom_rankmap_free(&m);
		free(names);
		return rc;
	}
	pthread_mutex_lock(&w->comms_lock);
	loom_rankmap_free(&w->node_of);
	w->node_of = m;
	free(w->node_names);
	w->node_names = names;
	w->nnodes = nn;
	w->size = base + n;
	pthread_mutex_unlock(&w->comms_lock);
	return LOOM_SUCCESS;
}
