/* runtime/boot/world.c: the native world: bootstrap (PMIx, the RANK/MASTER_ADDR
 * rendezvous, or a world of one), node table, TCP engine, world
 * communicator; and its finalize. The NCCL backend builds on it too. */
#include "boot/boot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_transport(int *out)
{
	const char *t = getenv("LOOM_TRANSPORT");
	*out = LOOM_TR_AUTO;
	if (!t || !*t || !strcmp(t, "auto"))
		return LOOM_SUCCESS;
	if (!strcmp(t, "shm"))
		*out = LOOM_TR_SHM;
	else if (!strcmp(t, "tcp"))
		*out = LOOM_TR_TCP;
	else {
		LOOM_ERR("LOOM_TRANSPORT=%s: expected shm, tcp or auto", t);
		return LOOM_ERR_INVALID;
	}
	return LOOM_SUCCESS;
}

static void boot_free(struct loom_boot *b)
{
	free(b->ip);
	free(b->port);
	free(b->nodename);
	free(b->pid);
}

static int boot_single(struct loom_boot *b)
{
	b->rank = 0;
	b->size = 1;
	b->listen_fd = -1;
	if (loom_boot_tables(b))
		return LOOM_ERR_NOMEM;
	loom_node_identity(b->nodename[0]);
	b->pid[0] = (int)getpid();
	return loom_boot_fresh_ids(b);
}

static void world_free(struct loom_world *w)
{
	loom_rankmap_free(&w->node_of);
	free(w->node_names);
	pthread_mutex_destroy(&w->comms_lock);
	free(w);
}

/* node_of: nodes numbered in order of first appearance, through a hash
 * of the names (a pairwise comparison is O(N^2): seconds at 32k ranks);
 * node_names: each node's name once (the bootstrap's per-rank names are
 * freed with it) */
static int number_nodes(struct loom_world *w, char (*nodename)[64])
{
	size_t cap = 16, mask, k;
	int *first, i, *node_of = malloc((size_t)w->size * sizeof *node_of);
	while (cap < 2 * (size_t)w->size)
		cap *= 2;
	mask = cap - 1;
	first = malloc(cap * sizeof *first);
	if (!first || !node_of) {
		free(first);
		free(node_of);
		return LOOM_ERR_NOMEM;
	}
	for (k = 0; k < cap; k++)
		first[k] = -1;
	for (i = 0; i < w->size; i++) {
		const unsigned char *c = (const unsigned char *)nodename[i];
		uint64_t h = 1469598103934665603ull;
		while (*c)
			h = (h ^ *c++) * 1099511628211ull;
		for (k = h & mask; first[k] >= 0 && strcmp(nodename[first[k]], nodename[i]);
		     k = (k + 1) & mask)
			;
		if (first[k] < 0) {
			first[k] = i;
			node_of[i] = w->nnodes++;
		} else {
			node_of[i] = node_of[first[k]];
		}
	}
	free(first);
	/* a rule, not N ints, for block and cyclic placements (rankmap.h) */
	w->node_names = malloc((size_t)w->nnodes * sizeof *w->node_names);
	if (!w->node_names || loom_rankmap_set(&w->node_of, w->size, node_of)) {
		free(node_of);
		return LOOM_ERR_NOMEM;
	}
	for (i = 0; i < w->size; i++)
		memcpy(w->node_names[node_of[i]], nodename[i], sizeof w->node_names[0]);
	free(node_of);
	return LOOM_SUCCESS;
}

/* what the engine reports goes to the communicators (comm_core.c); the
 * hooks' arg is the world */
static void engine_peer_lost(void *w, int peer, int status)
{
	loom_comms_peer_lost(w, peer, status);
}

static int64_t engine_control(void *w, int from, int type, uint64_t ctx, int64_t aux)
{
	return loom_comms_control(w, from, type, ctx, aux);
}

static const struct loom_engine_hooks engine_hooks = { engine_peer_lost, engine_control, NULL };
#ifdef HAVE_PMIX
static int pmix_resolve(void *w, int peer, uint32_t *ip, uint16_t *port)
{
	(void)w;
	return loom_pmix_peer_addr(peer, ip, port);
}

static const struct loom_engine_hooks engine_hooks_pmix = { engine_peer_lost, engine_control,
							    pmix_resolve };
#endif

/* what the engine needs of the world (transport.h) */
static int engine_start(struct loom_world *w, struct loom_boot *b)
{
	struct loom_engine_cfg cfg = { w->rank, w->size, w->nonce, w->timeout, w };
	return loom_engine_create(&w->eng, &cfg, b->listen_fd, b->ip, b->port, b->key,
#ifdef HAVE_PMIX
				  b->lazy_addresses ? &engine_hooks_pmix :
#endif
				  &engine_hooks);
}

static void engine_stop(struct loom_world *w)
{
	loom_engine_destroy(w->eng);
	w->eng = NULL;
}

/* a world with the settings of the environment (LOOM_TRANSPORT,
 * LOOM_TIMEOUT, LOOM_CHECK), not yet placed in a job */
static int world_new(struct loom_world **out)
{
	struct loom_world *w = calloc(1, sizeof *w);
	int rc;
	*out = NULL;
	if (!w)
		return LOOM_ERR_NOMEM;
	pthread_mutex_init(&w->comms_lock, NULL);
	if ((rc = parse_transport(&w->transport))) {
		world_free(w);
		return rc;
	}
	w->timeout = loom_env_double("LOOM_TIMEOUT", 600);
	if (!(w->timeout > 0)) {
		LOOM_WARN("LOOM_TIMEOUT must be positive; using 600");
		w->timeout = 600;
	}
	w->check = getenv("LOOM_CHECK") && strcmp(getenv("LOOM_CHECK"), "0") &&
		   *getenv("LOOM_CHECK");
	*out = w;
	return LOOM_SUCCESS;
}

/* a newcomer's join where LOOM_JOIN says so, else PMIx where PMIX_RANK says so, else the RANK/MASTER_ADDR rendezvous,
 * else a world of one; w->how says which. On failure b holds nothing. */
static int bootstrap(struct loom_world *w, struct loom_boot *b)
{
	int rc;
	memset(b, 0, sizeof *b);
	b->listen_fd = -1;
	if (getenv("LOOM_JOIN") && *getenv("LOOM_JOIN")) {   /* the step joined: loom.so's --loom-join */
		w->how = "join";
		rc = loom_boot_join(b);
		w->joined = rc == LOOM_SUCCESS;
	} else if (getenv("PMIX_RANK")) {
#ifdef HAVE_PMIX
		w->how = "pmix";
		rc = loom_boot_pmix(b);
		w->pmix = rc == LOOM_SUCCESS;
#else
		LOOM_WARN("PMIX_RANK is set but this libloom was built without PMIx; trying RANK/WORLD_SIZE");
		w->how = "env";
		rc = getenv("RANK") || getenv("WORLD_SIZE") ? loom_boot_env(b) : boot_single(b);
#endif
	} else if (getenv("RANK") || getenv("WORLD_SIZE")) {
		w->how = "env";
		rc = loom_boot_env(b);
	} else {
		w->how = "single";
		rc = boot_single(b);
	}
	if (rc)
		boot_free(b);
	return rc;
}

/* the world's place in the job, from the bootstrap: rank, size, random
 * bits and nodes */
static int world_place(struct loom_world *w, const struct loom_boot *b)
{
	int rc;
	w->rank = b->rank;
	w->size = b->size;
	w->nonce = b->nonce;
	memcpy(w->shm_key, b->shm_key, sizeof w->shm_key);
	if ((rc = number_nodes(w, b->nodename)))
		return rc;
	loom_log_identity(w->rank, w->size, w->node_names[loom_world_node_of(w, w->rank)]);
	return LOOM_SUCCESS;
}

/* the TCP engine on the bootstrap's socket and address table (the
 * engine's from now on); the rest of b is freed, its key wiped */
static int world_engine(struct loom_world *w, struct loom_boot *b)
{
	int rc = engine_start(w, b);
	b->ip = NULL;
	b->port = NULL;
	boot_free(b);
	memset(b->key, 0, sizeof b->key);
	return rc;
}

/* the world communicator: every rank, in order */
static int world_comm(struct loom_world *w, loom_comm_t **world)
{
	int i, *ranks = calloc((size_t)w->size, sizeof *ranks);
	if (!ranks)
		return LOOM_ERR_NOMEM;
	for (i = 0; i < w->size; i++)
		ranks[i] = i;
	*world = loom_comm_create(w, loom_mix64(w->nonce, 0x776f726c64ull), w->size, ranks, w->rank,
				  "world");
	free(ranks);
	if (!*world)
		return LOOM_ERR_NOMEM;
	(*world)->is_world = 1;
	return LOOM_SUCCESS;
}

/* a newcomer's world communicator: the grown one, met in a barrier
 * with the members that grew it (their loom_comm_grow ends with it) */
static int joined_comm(struct loom_world *w, struct loom_joined *q, loom_comm_t **world)
{
	struct loom_opdesc bar = { LOOM_OP_BARRIER, NULL, NULL, 0, LOOM_INT8, LOOM_SUM, 0, 0 };
	int rc;
	*world = loom_comm_create(w, q->ctx, q->n, q->wr, q->me, q->name);
	free(q->wr);
	free(q);
	if (!*world)
		return LOOM_ERR_NOMEM;
	(*world)->is_world = 1;
	if ((rc = loom_native_coll(*world, &bar, NULL)) != LOOM_SUCCESS) {
		LOOM_ERR("join: the grown communicator's first barrier failed: %s", loom_strerror(rc));
		loom_comm_destroy(*world);
		*world = NULL;
	}
	return rc;
}

/* the world as formed, and where init's time went: at scale the first
 * thing asked */
static void world_report(const struct loom_world *w, double t0, double t_boot, double t_engine)
{
	double t_end;
	if (w->transport == LOOM_TR_SHM && w->nnodes > 1)
		LOOM_WARN("LOOM_TRANSPORT=shm but the %d ranks span %d nodes: TCP between nodes, shm inside each",
			  w->size, w->nnodes);
	t_end = loom_now();
	LOOM_INFO("world of %d ranks on %d node(s), bootstrap %s, transport %s, timeout %g s%s "
		  "(init %.3f s: bootstrap %.3f, engine %.3f, world communicator %.3f)",
		  w->size, w->nnodes, w->how,
		  w->transport == LOOM_TR_AUTO ? "auto" : w->transport == LOOM_TR_SHM ? "shm" : "tcp",
		  w->timeout, w->check ? ", LOOM_CHECK on" : "", t_end - t0, t_boot - t0,
		  t_engine - t_boot, t_end - t_engine);
}

int loom_native_world(loom_comm_t **world)
{
	struct loom_world *w;
	struct loom_boot b;
	struct loom_joined *joined;
	double t0 = loom_now(), t_boot, t_engine;
	int rc;
	*world = NULL;
	if ((rc = world_new(&w)))
		return rc;
	if ((rc = bootstrap(w, &b))) {
		world_free(w);
		return rc;
	}
	t_boot = loom_now();
	if ((rc = world_place(w, &b))) {
		if (b.joined)
			free(b.joined->wr);
		free(b.joined);
		boot_free(&b);
		world_free(w);
		return rc;
	}
	joined = b.joined;
	rc = world_engine(w, &b);
	t_engine = loom_now();
	if (!rc)
		rc = joined ? joined_comm(w, joined, world) : world_comm(w, world);
	else if (joined) {
		free(joined->wr);
		free(joined);
	}
	if (rc) {
		engine_stop(w);
		world_free(w);
		return rc;
	}
	world_report(w, t0, t_boot, t_engine);
	return LOOM_SUCCESS;
}

int loom_native_finalize(loom_comm_t *world)
{
	struct loom_world *w = world->w;
	/* every rank arrives before anyone closes its connections */
	/* a newcomer's world is a grown communicator whose first members
	 * finalize another world: no closing barrier together */
	if (w->size > 1 && !w->joined && !atomic_load(&world->failed)) {
		double t = world->timeout;
		world->timeout = t < 30 ? t : 30;
		struct loom_opdesc bar = { LOOM_OP_BARRIER, NULL, NULL, 0, LOOM_INT8, LOOM_SUM, 0, 0 };
		if (loom_native_coll(world, &bar, NULL) != LOOM_SUCCESS)
			LOOM_INFO("finalize: the closing barrier failed; closing anyway");
		world->timeout = t;
	}
	if (loom_log_level_v >= LOOM_LOG_INFO) {
		/* what docs/scale.md "Memory per process" says stays O(1) for
		 * regular communicators: checked at scale by t2005 */
		struct loom_comm *c;
		size_t bytes = loom_rankmap_bytes(&w->node_of);
		int ncomm = 0;
		pthread_mutex_lock(&w->comms_lock);
		for (c = w->comms; c; c = c->next, ncomm++)
			bytes += loom_comm_table_bytes(c);
		pthread_mutex_unlock(&w->comms_lock);
		LOOM_INFO("finalize: the rank tables of the world and its %d communicator(s) take %zu bytes",
			  ncomm, bytes);
	}
	for (;;) {
		struct loom_comm *c;
		pthread_mutex_lock(&w->comms_lock);
		for (c = w->comms; c && (c == world || c->internal); c = c->next)
			;
		pthread_mutex_unlock(&w->comms_lock);
		if (!c)
			break;
		loom_native_destroy(c);
	}
	loom_nbq_stop(world);
	engine_stop(w);
	loom_comm_destroy(world);
#ifdef HAVE_PMIX
	if (w->pmix)
		loom_pmix_finalize();
#endif
	world_free(w);
	return LOOM_SUCCESS;
}
