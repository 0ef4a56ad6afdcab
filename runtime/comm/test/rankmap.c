/* unit test: rank maps keep regular tables as a rule (a few words at any
 * size) and any table exactly (runtime/util/rankmap.c); the hash map of
 * per-peer state (runtime/util/intmap.c); a communicator's tables built
 * from them (runtime/comm/comm_core.c) answer as the arrays did. */
#include "config.h"
#include "comm/comm.h"
#include "../../../t/tap.h"

#include <stdlib.h>

/* every value read back, and find() on increasing tables */
static int same(const struct loom_rankmap *m, const int *v, int n)
{
	int i;
	for (i = 0; i < n; i++)
		if (loom_rankmap_get(m, i) != v[i]) {
			diag("index %d: got %d want %d", i, loom_rankmap_get(m, i), v[i]);
			return 0;
		}
	return 1;
}

static int check(const char *what, const int *v, int n, int want_kind)
{
	struct loom_rankmap m;
	int good;
	if (loom_rankmap_set(&m, n, v))
		bail_out("no memory");
	good = same(&m, v, n);
	ok(good, "%s: every value read back", what);
	is_int(m.kind, want_kind, "%s: kept as %s", what,
	       want_kind == LOOM_RM_RULE ? "a rule" : want_kind == LOOM_RM_PIECES ? "pieces" : "an array");
	good = m.kind;
	loom_rankmap_free(&m);
	return good;
}

static void find_all(const char *what, const int *v, int n)
{
	struct loom_rankmap m;
	int i, bad = 0;
	loom_rankmap_set(&m, n, v);
	for (i = 0; i < n; i++)
		if (loom_rankmap_find(&m, v[i]) != i)
			bad++;
	/* values between and around the members are not found */
	for (i = 0; i < n; i++)
		if ((i == 0 || v[i - 1] != v[i] - 1) && loom_rankmap_find(&m, v[i] - 1) != -1)
			bad++;
	if (loom_rankmap_find(&m, v[n - 1] + 1) != -1 || loom_rankmap_find(&m, -5) != -1)
		bad++;
	is_int(bad, 0, "%s: find() gives each member's index and -1 elsewhere", what);
	loom_rankmap_free(&m);
}

static struct loom_world *fake_world(int size, int per_node, int cyclic)
{
	struct loom_world *w = calloc(1, sizeof *w);
	int *node = malloc((size_t)size * sizeof *node), i;
	w->size = size;
	w->transport = LOOM_TR_TCP;  /* no shared memory in a unit test */
	w->nnodes = (size + per_node - 1) / per_node;
	for (i = 0; i < size; i++)
		node[i] = cyclic ? i % w->nnodes : i / per_node;
	loom_rankmap_set(&w->node_of, size, node);
	free(node);
	pthread_mutex_init(&w->comms_lock, NULL);
	return w;
}

/* the communicator of the given world ranks, as rank me; its tables
 * against what the arrays used to hold, computed here by brute force */
static void comm_case(const char *what, struct loom_world *w, const int *wr, int n, int me,
		      size_t max_bytes)
{
	struct loom_comm *c = loom_comm_create(w, 1, n, wr, me, what);
	int i, bad = 0, mynode = loom_world_node_of(w, wr[me]), lsize = 0, nnodes = 0;
	int *firstpos = calloc((size_t)w->nnodes, sizeof *firstpos);
	if (!c)
		bail_out("%s: no communicator", what);
	for (i = 0; i < w->nnodes; i++)
		firstpos[i] = -1;
	for (i = 0; i < n; i++) {
		int nd = loom_world_node_of(w, wr[i]);
		if (firstpos[nd] < 0) {
			firstpos[nd] = nnodes++;
			if (loom_comm_leader(c, firstpos[nd]) != i)
				bad++;
		}
		if (loom_comm_wrank(c, i) != wr[i] || loom_comm_node_pos(c, i) != firstpos[nd])
			bad++;
		if (nd == mynode) {
			if (loom_comm_local_idx(c, i) != lsize || loom_comm_local_member(c, lsize) != i)
				bad++;
			lsize++;
		} else if (loom_comm_local_idx(c, i) != -1) {
			bad++;
		}
	}
	is_int(bad, 0, "%s: world ranks, node positions, leaders, local indices as computed by hand", what);
	ok(c->local_size == lsize && c->nnodes == nnodes, "%s: %d local of %d, %d nodes", what,
	   c->local_size, c->size, c->nnodes);
	ok(loom_comm_table_bytes(c) <= max_bytes, "%s: tables take %zu bytes (at most %zu)", what,
	   loom_comm_table_bytes(c), max_bytes);
	loom_comm_destroy(c);
	free(firstpos);
}

static int intmap_case(void)
{
	struct loom_intmap m = { 0 };
	int i, bad = 0;
	static int vals[5000];
	ok(loom_intmap_get(&m, 3) == NULL, "intmap: empty map has nothing");
	for (i = 0; i < 5000; i++) {
		vals[i] = i;
		if (loom_intmap_put(&m, (i * 7919) % 32768, &vals[i]))
			bail_out("no memory");
	}
	for (i = 0; i < 5000; i++)
		if (loom_intmap_get(&m, (i * 7919) % 32768) != &vals[i])
			bad++;
	is_int(bad, 0, "intmap: 5,000 keys, each gives its value after the map grew");
	is_int((int)m.count, 5000, "intmap: counts each key once");
	loom_intmap_put(&m, 7919, &vals[0]);
	ok(loom_intmap_get(&m, 7919) == &vals[0] && m.count == 5000, "intmap: a key set again takes the new value, no new entry");
	bad = 0;
	for (i = 0; i < 40000; i += 3) {
		int k, hit = 0;
		void *g = loom_intmap_get(&m, i);
		for (k = 0; k < 5000 && !hit; k++)
			hit = (k * 7919) % 32768 == i;
		if (!!g != hit)
			bad++;
	}
	is_int(bad, 0, "intmap: keys never put give NULL");
	loom_intmap_clear(&m);
	ok(loom_intmap_get(&m, 7919) == NULL && m.cap == 0, "intmap: cleared");
	return 0;
}

int main(void)
{
	enum { N = 32768 };
	static int v[N];
	struct loom_rankmap m;
	int i;
	struct loom_world *w;
	plan(NO_PLAN);

	for (i = 0; i < N; i++)
		v[i] = i;
	loom_rankmap_set(&m, N, v);
	ok(loom_rankmap_get(&m, 12345) == 12345 && loom_rankmap_bytes(&m) == 0,
	   "identity on 32,768 ranks: no memory");
	loom_rankmap_free(&m);
	check("32,768 ranks, identity", v, N, LOOM_RM_RULE);
	find_all("identity", v, 1000);
	for (i = 0; i < N; i++)
		v[i] = i / 8;
	check("4,096 nodes x 8, block placement", v, N, LOOM_RM_RULE);
	for (i = 0; i < N; i++)
		v[i] = i % 4096;
	check("4,096 nodes x 8, cyclic placement", v, N, LOOM_RM_RULE);
	for (i = 0; i < 14; i++)
		v[i] = i / 4;
	check("4+4+4+2 ranks on 4 nodes", v, 14, LOOM_RM_RULE);
	for (i = 0; i < 4; i++)
		v[i] = i / 3;
	check("3+1 ranks on 2 nodes", v, 4, LOOM_RM_RULE);
	for (i = 0; i < 1024; i++)
		v[i] = 3 + 8 * i;
	check("split r % 8 == 3 of 8,192", v, 1024, LOOM_RM_RULE);
	find_all("split r % 8 == 3", v, 1024);
	/* a node with 2 ranks, then the rest with 3: a rule with a shift */
	for (i = 0; i < 3000; i++)
		v[i] = i < 2 ? 0 : 1 + (i - 2) / 3;
	check("2, then 3 ranks a node", v, 3000, LOOM_RM_RULE);
	/* nodes of 7, 3, 9, 1 and 12 ranks: pieces */
	{
		int cnt[5] = { 7, 3, 9, 1, 12 }, k, j, at = 0;
		for (k = 0; k < 5; k++)
			for (j = 0; j < cnt[k]; j++)
				v[at++] = k;
		check("7, 3, 9, 1 and 12 ranks a node", v, at, LOOM_RM_PIECES);
	}
	/* ranges kept by a split (ranks 0-99, 500-899, 2000-2999) */
	for (i = 0; i < 1500; i++)
		v[i] = i < 100 ? i : i < 500 ? 400 + i : 1500 + i;
	check("three ranges of world ranks", v, 1500, LOOM_RM_PIECES);
	find_all("three ranges", v, 1500);
	/* a scrambled order (keys of a split): exact, as an array */
	for (i = 0; i < 1000; i++)
		v[i] = (i * 617) % 1000;
	check("ranks permuted by the split's keys", v, 1000, LOOM_RM_ARRAY);
	for (i = 0; i < 1000; i++)
		v[i] = 2 * i + (i * i) % 3;
	check("irregular increasing", v, 1000, LOOM_RM_ARRAY);
	find_all("irregular increasing", v, 1000);
	check("one rank", v, 1, LOOM_RM_RULE);
	v[0] = 5, v[1] = 5, v[2] = 5;
	check("one value", v, 3, LOOM_RM_RULE);

	intmap_case();

	/* communicators: regular ones keep no per-member table */
	w = fake_world(N, 8, 0);
	for (i = 0; i < N; i++)
		v[i] = i;
	comm_case("world of 32,768, 8 a node", w, v, N, 12345, 0);
	for (i = 0; i < N / 8; i++)
		v[i] = 5 + 8 * i;
	comm_case("split r % 8 == 5", w, v, N / 8, 17, 0);
	for (i = 0; i < 64; i++)
		v[i] = 800 + i;
	comm_case("split of 64 consecutive ranks", w, v, 64, 9, 0);
	for (i = 0; i < 512; i++)
		v[i] = (i * 37) % 512;
	comm_case("512 ranks in a scrambled order", w, v, 512, 100, 5 * 512 * sizeof(int));
	loom_rankmap_free(&w->node_of);
	pthread_mutex_destroy(&w->comms_lock);
	free(w);
	w = fake_world(1000, 8, 1);
	for (i = 0; i < 1000; i++)
		v[i] = i;
	comm_case("world of 1,000, cyclic over 125 nodes", w, v, 1000, 126, 0);
	loom_rankmap_free(&w->node_of);
	pthread_mutex_destroy(&w->comms_lock);
	free(w);
	done_testing();
	return exit_status();
}
