/* runtime/boot/rendezvous.c: the tables of the env rendezvous and the
 * checks on what comes off the wire. Every peer here proved the job key,
 * so a bad count or rank is the job's misconfiguration (fatal, named),
 * not an attack; still nothing is trusted for sizes or indices. */
#include "boot/rendezvous.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int loom_rv_table_init(struct rv_table *t, int size)
{
	t->size = size;
	t->filled = 0;
	t->tab = calloc((size_t)size, sizeof *t->tab);
	t->have = calloc((size_t)size, 1);
	return t->tab && t->have ? 0 : -1;
}

void loom_rv_table_free(struct rv_table *t)
{
	free(t->tab);
	free(t->have);
	t->tab = NULL;
	t->have = NULL;
}

static void put(struct rv_table *t, int rank, const struct rv_entry *e)
{
	t->tab[rank] = *e;
	t->tab[rank].node[63] = 0;
	t->have[rank] = 1;
	t->filled++;
}

/* rank is in range and not in the table yet: 0, else -1 with why */
static int check_new(const struct rv_table *t, int rank, char *why, size_t wlen)
{
	if (rank < 0 || rank >= t->size) {
		snprintf(why, wlen, "rank %d is not in 0..%d", rank, t->size - 1);
		return -1;
	}
	if (t->have[rank]) {
		snprintf(why, wlen, "rank %d given twice", rank);
		return -1;
	}
	return 0;
}

int loom_rv_take(struct rv_table *t, int rank, const struct rv_entry *e, char *why, size_t wlen)
{
	if (check_new(t, rank, why, wlen))
		return -1;
	put(t, rank, e);
	return 0;
}

int loom_rv_take_group(struct rv_table *t, int leader, const struct rv_ranked *g, uint32_t n,
		       char *why, size_t wlen)
{
	uint32_t i, j;
	int has_leader = 0;
	if (n == 0 || n > (uint32_t)(t->size - t->filled)) {
		snprintf(why, wlen, "a group of %u ranks, and %d are missing", n, t->size - t->filled);
		return -1;
	}
	/* check all before taking any: a bad group leaves the table as it was */
	for (i = 0; i < n; i++) {
		int r = g[i].rank;
		if (check_new(t, r, why, wlen))
			return -1;
		for (j = 0; j < i; j++)
			if (g[j].rank == r) {
				snprintf(why, wlen, "rank %d given twice in one group", r);
				return -1;
			}
		has_leader |= r == leader;
	}
	if (!has_leader) {
		snprintf(why, wlen, "its leader, rank %d, is not among its %u ranks", leader, n);
		return -1;
	}
	for (i = 0; i < n; i++)
		put(t, g[i].rank, &g[i].e);
	return 0;
}

void loom_rv_tree_place(int i, int n, int fanout, int *parent, int *children)
{
	/* tree positions: rank 0 is 0, connection i is i + 1 */
	long m = (long)i + 1, first = m * fanout + 1, last = m * fanout + fanout;
	*parent = (int)((m - 1) / fanout) - 1;
	if (last > n)
		last = n;
	*children = last >= first ? (int)(last - first + 1) : 0;
}

void loom_rv_missing(const struct rv_table *t, char *out, size_t len)
{
	size_t l = 0;
	int i;
	out[0] = 0;
	for (i = 0; i < t->size; i++) {
		if (t->have[i])
			continue;
		if (l + 16 >= len) {
			snprintf(out + l, len - l, ",...");
			break;
		}
		l += (size_t)snprintf(out + l, len - l, "%s%d", l ? "," : "", i);
	}
}

void loom_rv_node_socket_name(const char *maddr, int mport, const char *node, char out[RV_NODE_NAME_LEN])
{
	char in[400];
	uint8_t d[32];
	int n = snprintf(in, sizeof in, "loom node rendezvous\n%s:%d\n%.64s", maddr, mport, node);
	static const char hex[] = "0123456789abcdef";
	int i;
	loom_sha256(in, (size_t)(n < (int)sizeof in ? n : (int)sizeof in - 1), d);
	memcpy(out, "loom-node-", 10);
	for (i = 0; i < 16; i++) {
		out[10 + 2 * i] = hex[d[i] >> 4];
		out[11 + 2 * i] = hex[d[i] & 15];
	}
	out[42] = 0;
}
