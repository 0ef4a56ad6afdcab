/* runtime/boot/bootstrap_rank0.c: rank 0's side of the env rendezvous
 * (bootstrap_env.c says the whole). On MASTER_PORT it takes hellos, flat
 * ranks' and node leaders' group hellos, until every rank is in, then
 * answers each connection with its route and sends the table to its own
 * children in the fan-out (rendezvous.h). */
#include "boot/bootstrap_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rank0 {
	struct rv_job *j;
	struct rv_table t;
	struct loom_hs_peer *peers;     /* the connections to answer */
	int npeers, leaders;
};

static int rank0_flat(struct rank0 *z, const struct loom_hs_peer *p, const struct rv_hello *h,
		      char *why, size_t wlen)
{
	struct rv_entry e;
	if (p->rank == 0) {
		snprintf(why, wlen, "rank 0 is this process");
		return -1;
	}
	/* the address its MAC'd hello says it dialed from (the handshake
	 * checked it against the connection), never a source address alone */
	memset(&e, 0, sizeof e);
	e.ip = p->bind.cli_ip;
	e.port = h->port;
	e.pid = h->pid;
	memcpy(e.node, h->node, sizeof e.node);
	return loom_rv_take(&z->t, p->rank, &e, why, wlen);
}

/* a node leader's entries follow its hello: read, match the digest, take */
static int rank0_group(struct rank0 *z, const struct loom_hs_peer *p, const struct rv_hello *h,
		       char *why, size_t wlen)
{
	double until = loom_now() + RV_GROUP_READ;
	struct rv_ranked *g;
	uint8_t d[32];
	size_t len;
	int rc = -1;
	if (h->count > (uint32_t)(z->t.size - z->t.filled)) {
		snprintf(why, wlen, "a group of %u ranks, and %d are missing", h->count, z->t.size - z->t.filled);
		return -1;
	}
	len = (size_t)h->count * sizeof *g;
	if (!(g = malloc(len))) {
		snprintf(why, wlen, "out of memory");
		return -1;
	}
	if (loom_fd_read_all(p->fd, g, len, until < z->j->deadline ? until : z->j->deadline))
		snprintf(why, wlen, "its %u entries did not follow its hello", h->count);
	else if (loom_sha256(g, len, d), memcmp(d, h->digest, sizeof d))
		snprintf(why, wlen, "its entries do not match the digest in its hello");
	else
		rc = loom_rv_take_group(&z->t, p->rank, g, h->count, why, wlen);
	free(g);
	return rc;
}

static int rank0_peer(void *arg, const struct loom_hs_peer *p)
{
	struct rank0 *z = arg;
	struct rv_hello h;
	char why[160];
	int rc;
	memcpy(&h, p->payload, sizeof h);
	h.node[63] = 0;
	/* it holds the job's key: a real task of this job, so a wrong rank
	 * or size is the job's misconfiguration, fatal, not an intruder */
	if (h.count == RV_ABORT) {
		LOOM_ERR("bootstrap: rendezvous at %s:%d: node %s: its LOCAL_RANK 0 (rank %d) gave up on its node's "
			 "ranks; see its log", z->j->maddr, z->j->mport, h.node, p->rank);
		return LOOM_ERR_BOOTSTRAP;
	}
	if (p->size != z->t.size) {
		snprintf(why, sizeof why, "it says WORLD_SIZE %d (mine: %d)", p->size, z->t.size);
		rc = -1;
	} else
		rc = h.count ? rank0_group(z, p, &h, why, sizeof why) : rank0_flat(z, p, &h, why, sizeof why);
	if (rc) {
		LOOM_ERR("bootstrap: rendezvous at %s:%d: %s from rank %d on %s: %s", z->j->maddr, z->j->mport,
			 h.count ? "the group hello of a node's LOCAL_RANK 0" : "a hello", p->rank, h.node, why);
		return LOOM_ERR_BOOTSTRAP;
	}
	z->peers[z->npeers++] = *p;
	z->leaders += h.count > 0;
	return 1;
}

static int rank0_enough(void *arg)
{
	struct rank0 *z = arg;
	return z->t.filled == z->t.size;
}

/* every connection its route, then the table to rank 0's own children
 * in the fan-out (rendezvous.h); the others get it down the tree */
static int rank0_answer(struct rank0 *z)
{
	struct rv_job *j = z->j;
	struct rv_route r;
	uint8_t digest[32];
	int i, parent, direct = 0;
	j->reply->nonce = j->b->nonce;
	memcpy(j->reply + 1, z->t.tab, (size_t)z->t.size * sizeof *z->t.tab);
	loom_sha256(j->reply, j->rlen, digest);
	for (i = 0; i < z->npeers; i++) {
		memset(&r, 0, sizeof r);
		memcpy(r.digest, digest, sizeof digest);
		loom_rv_tree_place(i, z->npeers, RV_FANOUT, &parent, &r.children);
		r.parent = -1;
		if (parent >= 0) {
			struct rv_hello ph;
			memcpy(&ph, z->peers[parent].payload, sizeof ph);
			r.parent = z->peers[parent].rank;
			r.parent_ip = z->peers[parent].bind.cli_ip;
			r.parent_port = ph.tport;
		}
		if (loom_hs_reply(j->b->key, &z->peers[i], &r, sizeof r, NULL, j->deadline) ||
		    (parent < 0 && loom_hs_reply(j->b->key, &z->peers[i], j->reply, j->rlen, digest, j->deadline))) {
			LOOM_ERR("bootstrap: cannot send the table to rank %d", z->peers[i].rank);
			return LOOM_ERR_BOOTSTRAP;
		}
		direct += parent < 0;
	}
	LOOM_INFO("bootstrap: rank 0 sent the %d-entry table over %d of its %d connections; the others take it "
		  "down a tree of fan-out %d", z->t.size, direct, z->npeers, RV_FANOUT);
	return LOOM_SUCCESS;
}

/* own: rank 0's node (rank 0 alone when flat), ls: MASTER_PORT */
int loom_rv_rank0(struct rv_job *j, int ls, const struct rv_ranked *own, uint32_t nown)
{
	struct rank0 z;
	char what[96], why[160];
	struct loom_hs_cfg cfg = { j->b->key, LOOM_HS_RENDEZVOUS, sizeof(struct rv_hello), what, rank0_peer, &z, 0,
				   NULL, 0 };
	double t0 = loom_now();
	int rc, i;
	memset(&z, 0, sizeof z);
	z.j = j;
	z.peers = calloc((size_t)j->b->size, sizeof *z.peers);
	if (!z.peers || loom_rv_table_init(&z.t, j->b->size) || loom_rv_alloc_reply(j)) {
		rc = LOOM_ERR_NOMEM;
		goto out;
	}
	if (loom_rv_take_group(&z.t, 0, own, nown, why, sizeof why)) {
		LOOM_ERR("bootstrap: rank 0's own node: %s", why);
		rc = LOOM_ERR_BOOTSTRAP;
		goto out;
	}
	snprintf(what, sizeof what, "MASTER_PORT %d", j->mport);
	rc = loom_hs_accept_until(ls, &cfg, rank0_enough, j->deadline);
	if (rc == LOOM_ERR_TIMEOUT) {
		char miss[256];
		loom_rv_missing(&z.t, miss, sizeof miss);
		LOOM_ERR("bootstrap: rendezvous at %s:%d: ranks %s never connected, themselves or through their "
			 "node's LOCAL_RANK 0, within %.0f s (LOOM_BOOTSTRAP_TIMEOUT)", j->maddr, j->mport, miss, j->tmo);
		rc = LOOM_ERR_BOOTSTRAP;
	}
	if (rc)
		goto out;
	LOOM_INFO("bootstrap: rank 0 took %d ranks over %d connections (%d node leaders, %d single ranks) "
		  "and %u of its own node, in %.3f s", z.t.size - (int)nown, z.npeers, z.leaders,
		  z.npeers - z.leaders, nown, loom_now() - t0);
	rc = rank0_answer(&z);
out:
	for (i = 0; i < z.npeers; i++) {
		/* they would take a silent close for a flood, and dial again */
		if (rc)
			loom_hs_refuse(z.peers[i].fd, 1);
		close(z.peers[i].fd);
	}
	free(z.peers);
	loom_rv_table_free(&z.t);
	return rc;
}
