/* runtime/core/comm_grow.c: loom_comm_grow on the native backend: the
 * members take nnew newcomers and make the communicator of the members
 * followed by them (docs/fault-tolerance.md, "Grow").
 *
 *   1. an allreduce (MAX) of the world sizes: the newcomers' world ranks
 *      start after the largest, the same on every member;
 *   2. the leader (rank 0) listens on MASTER_PORT (on its engine's
 *      address where its node's name leads there) and takes nnew
 *      newcomers' hellos (the handshake's, kind LOOM_HS_JOIN: each proves
 *      the world's key, bound to its connection, its target and fresh
 *      challenges; a hello without the key is refused and not counted),
 *      until the communicator's timeout;
 *   3. a broadcast from the leader: its status and the newcomers'
 *      addresses; every member grows its world by them (world_grow.c);
 *   4. the leader answers each newcomer: the world's nonce, the new
 *      context, the world's table and the members (core/grow.h);
 *   5. every member and newcomer makes the communicator (new context:
 *      its shared memory under new names, its sub-communicators made on
 *      first use) and meets the others in a barrier on it.
 * Cost: one allreduce and one broadcast of 16 + 76 nnew bytes on the old
 * communicator, a table of 76 bytes a world rank to each newcomer, one
 * barrier on the new one. */
#include "core/grow.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* what the leader broadcasts: its status, then the newcomers */
struct grow_msg {
	int32_t status, nnew, base, pad;
	struct loom_join_entry e[];
};

struct taken {
	struct loom_hs_peer *p;
	int n, max;
};

static int coll(struct loom_comm *c, int kind, void *buf, size_t count, loom_dtype_t dt, loom_op_t op)
{
	struct loom_opdesc d = { kind, buf, buf, count, dt, op, 0, 0 };
	return loom_native_coll(c, &d, NULL);
}

/* a newcomer's hello proved the key: taken while there is room */
static int take_newcomer(void *arg, const struct loom_hs_peer *p)
{
	struct taken *t = arg;
	if (p->size < 1 || p->size > LOOM_GROW_MAX_NEW || p->rank < 0 || p->rank >= p->size ||
	    t->n >= t->max)
		return 0;
	t->p[t->n++] = *p;
	return 1;
}

/* newcomers in the order of their rank in their own step */
static void sort_taken(struct taken *t)
{
	int i, j;
	for (i = 1; i < t->n; i++)
		for (j = i; j > 0 && t->p[j - 1].rank > t->p[j].rank; j--) {
			struct loom_hs_peer x = t->p[j];
			t->p[j] = t->p[j - 1];
			t->p[j - 1] = x;
		}
}

/* where the leader listens: its engine's address when the newcomers,
 * who dial the job's node names (boot/bootstrap_join.c), reach it there;
 * every address when this node's name resolves elsewhere (a PMIx world's
 * engine on another interface) or the engine's is not known */
static uint32_t listen_addr(struct loom_comm *c)
{
	const char *node = getenv("SLURMD_NODENAME");
	uint32_t eng = 0, named = 0;
	uint16_t mine;
	loom_engine_addr(c->w->eng, c->w->rank, &eng, &mine);
	if (!eng || (node && *node && loom_resolve4(node, &named) == 0 && named != eng)) {
		LOOM_INFO("comm %s: grow: listening on every address: node %s is not at the engine's", c->name,
			  node ? node : "?");
		return htonl(INADDR_ANY);
	}
	return eng;
}

/* MASTER_PORT where the newcomers dial (listen_addr) */
static int listen_here(struct loom_comm *c, int port, int *fd)
{
	struct sockaddr_in a;
	int one = 1, s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return LOOM_ERR_SYSTEM;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = listen_addr(c);
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 128)) {
		LOOM_ERR("comm %s: grow: cannot listen on MASTER_PORT %d: %s", c->name, port, strerror(errno));
		close(s);
		return LOOM_ERR_SYSTEM;
	}
	*fd = s;
	return LOOM_SUCCESS;
}

/* the leader: nnew hellos on MASTER_PORT within the timeout */
static int leader_accept(struct loom_comm *c, struct taken *t, double deadline)
{
	const char *mp = getenv("MASTER_PORT");
	struct loom_hs_cfg cfg = { loom_engine_key(c->w->eng), LOOM_HS_JOIN, sizeof(struct loom_join_hello),
				   "the grow's MASTER_PORT", take_newcomer, t, 0, NULL, 0 };
	int port = mp ? atoi(mp) : 0, lfd = -1, rc;
	if (port < 1 || port > 65535) {
		LOOM_ERR("comm %s: grow: MASTER_PORT is %s: the newcomers find the leader there (loom.so sets it)",
			 c->name, mp ? mp : "unset");
		return LOOM_ERR_INVALID;
	}
	if ((rc = listen_here(c, port, &lfd)))
		return rc;
	LOOM_INFO("comm %s: grow: waiting for %d newcomer(s) on port %d for %.0f s", c->name, t->max, port,
		  deadline - loom_now());
	rc = loom_hs_accept(lfd, &cfg, t->max, deadline);
	close(lfd);
	if (rc == LOOM_ERR_TIMEOUT)
		LOOM_ERR("comm %s: grow: %d of %d newcomer(s) came within %.0f s (the communicator's timeout); "
			 "started with: srun --jobid=$SLURM_JOB_ID --overlap -N1 -n K -w NODE --loom-join PROG",
			 c->name, t->n, t->max, c->timeout);
	return rc;
}

/* the leader's message: status, then its newcomers' entries */
static void leader_msg(struct grow_msg *m, const struct taken *t, int rc, int base)
{
	int i;
	m->status = rc;
	m->nnew = t->max;
	m->base = base;
	for (i = 0; rc == LOOM_SUCCESS && i < t->n; i++) {
		struct loom_join_hello h;
		memcpy(&h, t->p[i].payload, sizeof h);
		m->e[i].ip = t->p[i].bind.cli_ip;   /* the address its MAC'd hello is bound to */
		m->e[i].port = h.port;
		m->e[i].pid = h.pid;
		snprintf(m->e[i].node, sizeof m->e[i].node, "%.63s", h.node);
	}
}

/* the world's table and the members, for the newcomers: every entry
 * from the grown world */
static void *join_table(struct loom_comm *c, const struct loom_join_head *h)
{
	struct loom_world *w = c->w;
	size_t len = loom_join_table_len(h);
	char *buf = calloc(1, len);
	struct loom_join_entry *e = (struct loom_join_entry *)buf;
	int32_t *mem = (int32_t *)(buf + (size_t)(h->base + h->nnew) * sizeof *e);
	int i;
	if (!buf)
		return NULL;
	for (i = 0; i < h->base + h->nnew; i++) {
		loom_engine_addr(w->eng, i, &e[i].ip, &e[i].port);
		snprintf(e[i].node, sizeof e[i].node, "%.63s", w->node_names[loom_world_node_of(w, i)]);
	}
	for (i = 0; i < h->members; i++)
		mem[i] = loom_comm_wrank(c, i);
	return buf;
}

/* the leader's two replies to each newcomer */
static int answer(struct loom_comm *c, const struct taken *t, struct loom_join_head *h, double deadline)
{
	const uint8_t *key = loom_engine_key(c->w->eng);
	void *tab = join_table(c, h);
	int i, rc = tab ? LOOM_SUCCESS : LOOM_ERR_NOMEM;
	for (i = 0; rc == LOOM_SUCCESS && i < t->n; i++) {
		h->index = i;
		if (loom_hs_reply(key, &t->p[i], h, sizeof *h, NULL, deadline) ||
		    loom_hs_reply(key, &t->p[i], tab, loom_join_table_len(h), NULL, deadline)) {
			LOOM_ERR("comm %s: grow: cannot answer newcomer %d (rank %d of its step)", c->name, i,
				 t->p[i].rank);
			rc = LOOM_ERR_PEER_LOST;
		}
	}
	free(tab);
	return rc;
}

static void close_taken(struct taken *t, int rc)
{
	int i;
	for (i = 0; i < t->n; i++) {
		if (rc)
			loom_hs_refuse(t->p[i].fd, 1);  /* it fails now, not at its deadline */
		close(t->p[i].fd);
	}
	free(t->p);
}

/* steps 1 to 3: the largest world size, the leader's newcomers, their
 * entries on every member (m: the broadcast, nnew entries) */
static int gather_newcomers(struct loom_comm *c, int nnew, struct taken *t, struct grow_msg *m, int *base)
{
	size_t len = sizeof *m + (size_t)nnew * sizeof m->e[0];
	int32_t size = c->w->size;
	double keep = c->timeout;
	int rc = coll(c, LOOM_OP_ALLREDUCE, &size, 1, LOOM_INT32, LOOM_MAX);
	if (rc)
		return rc;
	*base = size;
	if (c->rank == 0) {
		rc = size > LOOM_GROW_MAX_WORLD - nnew ? LOOM_ERR_INVALID
						       : leader_accept(c, t, loom_now() + c->timeout);
		if (rc == LOOM_SUCCESS)
			sort_taken(t);
		leader_msg(m, t, rc, size);
	}
	/* the others wait for the leader's whole accept */
	c->timeout = keep * 2 + 10;
	rc = coll(c, LOOM_OP_BCAST, m, len, LOOM_INT8, LOOM_SUM);
	c->timeout = keep;
	if (rc == LOOM_SUCCESS && (m->nnew != nnew || m->base != size)) {
		LOOM_ERR("comm %s: grow: the leader grows by %d, this member by %d: give every member the same nnew",
			 c->name, m->nnew, nnew);
		rc = LOOM_ERR_INVALID;
	}
	return rc ? rc : m->status;
}

static struct loom_comm *grown_comm(struct loom_comm *c, uint64_t ctx, int base, int nnew, const char *name)
{
	int i, n = c->size + nnew, *wr = malloc((size_t)n * sizeof *wr);
	struct loom_comm *g;
	if (!wr)
		return NULL;
	for (i = 0; i < c->size; i++)
		wr[i] = loom_comm_wrank(c, i);
	for (i = 0; i < nnew; i++)
		wr[c->size + i] = base + i;
	g = loom_comm_create(c->w, ctx, n, wr, c->rank, name);
	free(wr);
	if (g) {
		g->be = c->be;
		g->timeout = c->timeout;
	}
	return g;
}

int loom_native_grow(struct loom_comm *c, int nnew, struct loom_comm **out)
{
	struct taken t = { calloc((size_t)nnew, sizeof *t.p), 0, nnew };
	struct grow_msg *m = calloc(1, sizeof *m + (size_t)nnew * sizeof m->e[0]);
	struct loom_join_head h;
	int rc, base = 0;
	double t0 = loom_now();
	*out = NULL;
	if (!strcmp(c->w->how, "single")) {
		LOOM_ERR("comm %s: grow: a world started alone (no RANK / WORLD_SIZE, no PMIx) has no engine "
			 "to take newcomers", c->name);
		free(t.p);
		free(m);
		return LOOM_ERR_UNSUPPORTED;
	}
	if (!t.p || !m) {
		free(t.p);
		free(m);
		return LOOM_ERR_NOMEM;
	}
	memset(&h, 0, sizeof h);
	h.ctx = loom_mix64(loom_mix64(c->ctx, 0x67726f77ull), ++c->ft_epoch);
	snprintf(h.name, sizeof h.name, "%.40s.g%llu", c->name, (unsigned long long)c->ft_epoch);
	rc = gather_newcomers(c, nnew, &t, m, &base);
	if (rc == LOOM_SUCCESS)
		rc = loom_world_grow(c->w, base, nnew, m->e);
	if (rc == LOOM_SUCCESS && c->rank == 0) {
		h.nonce = c->w->nonce;
		h.base = base;
		h.nnew = nnew;
		h.members = c->size;
		rc = answer(c, &t, &h, loom_now() + c->timeout);
	}
	close_taken(&t, rc);
	free(m);
	if (rc == LOOM_SUCCESS && !(*out = grown_comm(c, h.ctx, base, nnew, h.name)))
		rc = LOOM_ERR_NOMEM;
	if (rc == LOOM_SUCCESS && (rc = coll(*out, LOOM_OP_BARRIER, NULL, 0, LOOM_INT8, LOOM_SUM))) {
		loom_native_destroy(*out);
		*out = NULL;
	}
	if (rc == LOOM_SUCCESS)
		LOOM_INFO("comm %s: grown to %s: %d members and %d newcomer(s), world of %d, in %.3f s", c->name,
			  h.name, c->size, nnew, c->w->size, loom_now() - t0);
	else
		LOOM_ERR("comm %s: grow by %d failed: %s", c->name, nnew, loom_strerror(rc));
	return rc;
}
