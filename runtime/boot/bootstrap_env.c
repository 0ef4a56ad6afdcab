/* runtime/boot/bootstrap_env.c: the TCP rendezvous of RANK / WORLD_SIZE /
 * MASTER_ADDR / MASTER_PORT, hierarchical by node (docs/scale.md).
 *
 * Where the launcher says which ranks share a node (LOCAL_RANK and
 * LOCAL_WORLD_SIZE: loom.so, torchrun), the ranks of a node meet first:
 * LOCAL_RANK 0, the node's leader, listens on an abstract Unix socket
 * named from MASTER_ADDR:MASTER_PORT and the node identity, takes only
 * this user's processes (SO_PEERCRED) and each local rank's entry (pid,
 * engine port, node, and the address it routes to MASTER_ADDR from).
 * Each leader then dials rank 0 once with a group hello that carries the
 * count and SHA-256 of its node's entries, which follow on the same
 * connection; rank 0, its own node's leader, takes groups until it holds
 * every rank. Rank 0 answers each connection with a route and sends the
 * table over RV_FANOUT of them; the others take it from their parent in
 * a tree of rank 0's connections (rendezvous.h), and each leader hands it
 * to its node's ranks: rank 0 takes one connection per other node, not
 * one per rank, and sends the table RV_FANOUT times. Without LOCAL_RANK / LOCAL_WORLD_SIZE, or with
 * LOOM_BOOTSTRAP_TREE=0, a rank says hello to rank 0 alone (a group of
 * one; rank 0 records the address it came from), and both kinds mix.
 *
 * Every hello, on TCP and on the Unix socket, is the authenticated one
 * of transport_handshake.c (LOOM_JOB_SECRET); every reply is MAC'd over
 * its SHA-256. Everything taken from the wire is checked (rendezvous.c).
 * Ranks retry until LOOM_BOOTSTRAP_TIMEOUT (default 120 s). Each rank
 * listens for the TCP engine on the address its peers are told; the
 * engine connects to a peer when it first has a message for it. */
#include "boot/bootstrap_env.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>


int rv_env_int(const char *name, long lo, long hi, int *out)
{
	const char *v = getenv(name);
	char *end;
	long l;
	if (!v || !*v) {
		LOOM_ERR("bootstrap: %s unset", name);
		return LOOM_ERR_BOOTSTRAP;
	}
	errno = 0;
	l = strtol(v, &end, 10);
	if (*end || errno || l < lo || l > hi) {
		LOOM_ERR("bootstrap: %s=%s is not a number in %ld..%ld", name, v, lo, hi);
		return LOOM_ERR_BOOTSTRAP;
	}
	*out = (int)l;
	return LOOM_SUCCESS;
}

int rv_alloc_reply(struct rv_job *j)
{
	j->rlen = sizeof(struct rv_head) + (size_t)j->b->size * sizeof(struct rv_entry);
	j->reply = malloc(j->rlen);
	return j->reply ? LOOM_SUCCESS : LOOM_ERR_NOMEM;
}

/* ---- rank 0: take hellos on MASTER_PORT until every rank is in ---- */

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
	memset(&e, 0, sizeof e);
	e.ip = p->ip;
	e.port = h->port;
	e.pid = h->pid;
	memcpy(e.node, h->node, sizeof e.node);
	return rv_take(&z->t, p->rank, &e, why, wlen);
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
		rc = rv_take_group(&z->t, p->rank, g, h->count, why, wlen);
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
	memcpy(j->reply->shm_key, j->b->shm_key, sizeof j->reply->shm_key);
	memcpy(j->reply + 1, z->t.tab, (size_t)z->t.size * sizeof *z->t.tab);
	loom_sha256(j->reply, j->rlen, digest);
	for (i = 0; i < z->npeers; i++) {
		memset(&r, 0, sizeof r);
		memcpy(r.digest, digest, sizeof digest);
		rv_tree_place(i, z->npeers, RV_FANOUT, &parent, &r.children);
		r.parent = -1;
		if (parent >= 0) {
			struct rv_hello ph;
			memcpy(&ph, z->peers[parent].payload, sizeof ph);
			r.parent = z->peers[parent].rank;
			r.parent_ip = z->peers[parent].ip;
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
int rv_rank0(struct rv_job *j, int ls, const struct rv_ranked *own, uint32_t nown)
{
	struct rank0 z;
	char what[96], why[160];
	struct loom_hs_cfg cfg = { j->b->key, LOOM_HS_RENDEZVOUS, sizeof(struct rv_hello), what, rank0_peer, &z, 0, NULL };
	double t0 = loom_now();
	int rc, i;
	memset(&z, 0, sizeof z);
	z.j = j;
	z.peers = calloc((size_t)j->b->size, sizeof *z.peers);
	if (!z.peers || rv_table_init(&z.t, j->b->size) || rv_alloc_reply(j)) {
		rc = LOOM_ERR_NOMEM;
		goto out;
	}
	if (rv_take_group(&z.t, 0, own, nown, why, sizeof why)) {
		LOOM_ERR("bootstrap: rank 0's own node: %s", why);
		rc = LOOM_ERR_BOOTSTRAP;
		goto out;
	}
	snprintf(what, sizeof what, "MASTER_PORT %d", j->mport);
	rc = loom_hs_accept_until(ls, &cfg, rank0_enough, j->deadline);
	if (rc == LOOM_ERR_TIMEOUT) {
		char miss[256];
		rv_missing(&z.t, miss, sizeof miss);
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
	for (i = 0; i < z.npeers; i++)
		close(z.peers[i].fd);
	free(z.peers);
	rv_table_free(&z.t);
	return rc;
}

/* ---- any other rank, or node leader: a hello to rank 0 ---- */

int rv_dial_rank0(struct rv_job *j, struct loom_hs_peer *p)
{
	int rc = loom_hs_dial_tcp(j->mip, (uint16_t)j->mport, LOOM_HS_RENDEZVOUS, j->deadline, p);
	if (rc)
		LOOM_ERR("bootstrap: cannot reach MASTER_ADDR:MASTER_PORT %s:%d after %.0f s (LOOM_BOOTSTRAP_TIMEOUT)%s",
			 j->maddr, j->mport, j->tmo, rc == LOOM_ERR_BOOTSTRAP ? ": what answers there is not loom" : "");
	return rc ? LOOM_ERR_BOOTSTRAP : LOOM_SUCCESS;
}

/* the children in the fan-out that came to the tree socket */
struct tree_kids {
	int size, n;                    /* the world's size; children taken */
	struct loom_hs_peer *p;
};

/* a tree hello: it proved the key, so it is a rank of this job */
static int tree_child(void *arg, const struct loom_hs_peer *p)
{
	struct tree_kids *k = arg;
	if (p->size != k->size)
		return 0;
	k->p[k->n++] = *p;
	return 1;
}

/* the table to the n children that dial the tree socket ts */
static int table_to_children(struct rv_job *j, int ts, int n, const uint8_t *digest)
{
	struct loom_boot *b = j->b;
	struct tree_kids k = { b->size, 0, calloc((size_t)n, sizeof(struct loom_hs_peer)) };
	struct loom_hs_cfg cfg = { b->key, LOOM_HS_TREE, 0, "the bootstrap tree socket", tree_child, &k, 0, NULL };
	int rc, i;
	if (!k.p)
		return LOOM_ERR_NOMEM;
	rc = loom_hs_accept(ts, &cfg, n, j->deadline);
	if (rc)
		LOOM_ERR("bootstrap: rank %d: %d of its %d children in the table's fan-out came for it within %.0f s "
			 "(LOOM_BOOTSTRAP_TIMEOUT)", b->rank, k.n, n, j->tmo);
	for (i = 0; i < k.n; i++) {
		if (!rc && loom_hs_reply(b->key, &k.p[i], j->reply, j->rlen, digest, j->deadline)) {
			LOOM_ERR("bootstrap: rank %d: cannot send the table to rank %d", b->rank, k.p[i].rank);
			rc = LOOM_ERR_BOOTSTRAP;
		}
		close(k.p[i].fd);
	}
	free(k.p);
	return rc;
}

/* the table from this rank's parent in the fan-out, on its tree socket */
static int table_from_parent(struct rv_job *j, const struct rv_route *r)
{
	struct loom_boot *b = j->b;
	struct loom_hs_peer p;
	struct in_addr a = { r->parent_ip };
	int rc = loom_hs_dial_tcp(r->parent_ip, r->parent_port, LOOM_HS_TREE, j->deadline, &p);
	if (!rc)
		rc = loom_hs_hello(b->key, &p, LOOM_HS_TREE, b->rank, b->size, NULL, 0, j->deadline);
	if (!rc)
		rc = loom_hs_read_reply(b->key, &p, j->reply, j->rlen, j->deadline);
	if (p.fd >= 0)
		close(p.fd);
	if (rc == LOOM_HS_GAVE_UP)
		LOOM_ERR("bootstrap: rank %d, this rank's parent in the table's fan-out, gave up; see its log", r->parent);
	else if (rc)
		LOOM_ERR("bootstrap: no table from rank %d at %s:%u, this rank's parent in the table's fan-out, within "
			 "%.0f s (LOOM_BOOTSTRAP_TIMEOUT): see its log", r->parent, inet_ntoa(a), r->parent_port, j->tmo);
	return rc ? LOOM_ERR_BOOTSTRAP : LOOM_SUCCESS;
}

/* The hello (and what follows it, a group's entries), then the route and
 * the table, from rank 0 or from this rank's parent in the fan-out; then
 * the table to this rank's own children there. The tree socket listens
 * where rank 0 sees us, before the hello that names it. */
int rv_hello_rank0(struct rv_job *j, struct loom_hs_peer *p, const struct rv_hello *hello,
		   const void *follow, size_t flen)
{
	struct loom_boot *b = j->b;
	struct rv_hello h = *hello;
	struct rv_route r;
	struct sockaddr_in me;
	socklen_t ml = sizeof me;
	uint8_t d[32];
	int ts = -1, rc = rv_alloc_reply(j);
	memset(&r, 0, sizeof r);
	r.parent = -1;
	if (!rc && (getsockname(p->fd, (struct sockaddr *)&me, &ml) ||
		    loom_boot_listen(me.sin_addr.s_addr, 0, &ts, &h.tport)))
		rc = LOOM_ERR_BOOTSTRAP;
	if (!rc)
		rc = loom_hs_hello(b->key, p, LOOM_HS_RENDEZVOUS, b->rank, b->size, &h, sizeof h, j->deadline);
	if (!rc && flen && loom_fd_write_all(p->fd, follow, flen, j->deadline))
		rc = LOOM_ERR_BOOTSTRAP;
	if (!rc)
		rc = loom_hs_read_reply(b->key, p, &r, sizeof r, j->deadline);
	if (rc) {
		memset(&r, 0, sizeof r);
		r.parent = -1;
	} else if (r.parent < 0)
		rc = loom_hs_read_reply(b->key, p, j->reply, j->rlen, j->deadline);
	close(p->fd);
	if (rc == LOOM_HS_FORGED)
		LOOM_ERR("bootstrap: the process at MASTER_ADDR:MASTER_PORT %s:%d does not hold this job's secret: "
			 "another program holds that port (or LOOM_JOB_SECRET differs between the ranks)",
			 j->maddr, j->mport);
	else if (rc)
		LOOM_ERR("bootstrap: rendezvous at %s:%d failed: rank 0 refused us (LOOM_JOB_SECRET differs from "
			 "rank 0's?) or gave up; see its log", j->maddr, j->mport);
	if (!rc && (r.children < 0 || r.children > b->size || r.parent >= b->size)) {
		LOOM_ERR("bootstrap: rank 0's route says parent %d and %d children in a world of %d", r.parent,
			 r.children, b->size);
		r.children = 0;
		rc = LOOM_ERR_BOOTSTRAP;
	}
	if (!rc && r.parent >= 0)
		rc = table_from_parent(j, &r);
	if (!rc && (loom_sha256(j->reply, j->rlen, d), memcmp(d, r.digest, sizeof d))) {
		LOOM_ERR("bootstrap: the table from rank %d does not match the digest rank 0 sent", r.parent < 0 ? 0 : r.parent);
		rc = LOOM_ERR_BOOTSTRAP;
	}
	if (!rc && r.children > 0)
		rc = table_to_children(j, ts, r.children, r.digest);
	else if (rc && ts >= 0 && r.children > 0)
		loom_hs_give_up(ts, r.children, loom_now() + 5);  /* they fail now, not at the deadline */
	if (ts >= 0)
		close(ts);
	return rc ? LOOM_ERR_BOOTSTRAP : LOOM_SUCCESS;
}

/* flat: reach rank 0, listen where it sees us, say who we are */
static int rank_n(struct rv_job *j)
{
	struct loom_boot *b = j->b;
	struct loom_hs_peer p;
	struct sockaddr_in me;
	socklen_t ml = sizeof me;
	struct rv_hello h;
	uint16_t myport;
	if (rv_dial_rank0(j, &p))
		return LOOM_ERR_BOOTSTRAP;
	if (getsockname(p.fd, (struct sockaddr *)&me, &ml) ||
	    loom_boot_listen(me.sin_addr.s_addr, 0, &b->listen_fd, &myport)) {
		close(p.fd);
		return LOOM_ERR_BOOTSTRAP;
	}
	memset(&h, 0, sizeof h);
	h.pid = b->pid[b->rank];
	h.port = myport;
	memcpy(h.node, b->nodename[b->rank], 64);
	return rv_hello_rank0(j, &p, &h, NULL, 0);
}

static int resolve_master(struct rv_job *j)
{
	struct addrinfo hints, *ai = NULL;
	int rc;
	j->maddr = getenv("MASTER_ADDR");
	if (!j->maddr || !*j->maddr) {
		LOOM_ERR("bootstrap: MASTER_ADDR unset (RANK=%d WORLD_SIZE=%d)", j->b->rank, j->b->size);
		return LOOM_ERR_BOOTSTRAP;
	}
	if ((rc = rv_env_int("MASTER_PORT", 1, 65535, &j->mport)))
		return rc;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(j->maddr, NULL, &hints, &ai) || !ai) {
		LOOM_ERR("bootstrap: MASTER_ADDR=%s does not resolve", j->maddr);
		return LOOM_ERR_BOOTSTRAP;
	}
	j->mip = ((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr;
	freeaddrinfo(ai);
	return LOOM_SUCCESS;
}

/* rank 0 binds MASTER_PORT first, so that early hellos wait in its backlog */
static int rendezvous(struct rv_job *j)
{
	struct loom_boot *b = j->b;
	int ls0 = -1, rc;
	uint16_t got;
	if (b->rank == 0) {
		struct rv_ranked self;
		if ((rc = loom_boot_fresh_ids(b)) || (rc = loom_boot_listen(j->mip, 0, &b->listen_fd, &j->me.port)))
			return rc;
		if ((rc = loom_boot_listen(j->mip, (uint16_t)j->mport, &ls0, &got))) {
			LOOM_ERR("bootstrap: rank 0 cannot listen on MASTER_ADDR:MASTER_PORT %s:%d", j->maddr, j->mport);
			return rc;
		}
		if (j->local_size)
			rc = rv_tree_entry(j) ? LOOM_ERR_BOOTSTRAP : rv_node_leader(j, ls0);
		else {
			memset(&self, 0, sizeof self);
			self.e.ip = j->mip;
			self.e.port = j->me.port;
			self.e.pid = b->pid[0];
			memcpy(self.e.node, b->nodename[0], sizeof self.e.node);
			rc = rv_rank0(j, ls0, &self, 1);
		}
		close(ls0);
		return rc;
	}
	if (!j->local_size)
		return rank_n(j);
	if ((rc = rv_tree_entry(j)))
		return rc;
	return j->local_rank == 0 ? rv_node_leader(j, -1) : rv_node_member(j);
}

int loom_boot_env(struct loom_boot *b)
{
	struct rv_job j;
	const struct rv_entry *tab;
	int rc, i;
	memset(&j, 0, sizeof j);
	j.b = b;
	j.tmo = loom_env_double("LOOM_BOOTSTRAP_TIMEOUT", 120);
	if ((rc = rv_env_int("WORLD_SIZE", 1, 1 << 20, &b->size)))
		return rc;
	if ((rc = rv_env_int("RANK", 0, b->size - 1, &b->rank))) {
		if (getenv("RANK"))
			LOOM_ERR("bootstrap: RANK must be below WORLD_SIZE=%d", b->size);
		return rc;
	}
	if ((rc = loom_boot_tables(b)))
		return rc;
	loom_node_identity(b->nodename[b->rank]);
	b->pid[b->rank] = (int)getpid();
	b->listen_fd = -1;
	if ((rc = loom_boot_keys(b)))
		return rc;
	if (b->size == 1)
		return loom_boot_fresh_ids(b);
	if (!b->have_secret && b->rank == 0)
		LOOM_WARN("bootstrap: LOOM_JOB_SECRET is unset, so any process that reaches MASTER_PORT can join "
			  "this job as a rank. loom.so sets it under srun; other launchers should give every rank "
			  "the same random value, e.g. LOOM_JOB_SECRET=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \\n')");
	if ((rc = resolve_master(&j)) || (rc = rv_tree_mode(&j)))
		return rc;
	j.deadline = loom_now() + j.tmo;
	if ((rc = rendezvous(&j)))
		goto out;
	if (b->rank != 0) {
		b->nonce = j.reply->nonce;
		memcpy(b->shm_key, j.reply->shm_key, sizeof b->shm_key);
	}
	tab = (const struct rv_entry *)(j.reply + 1);
	for (i = 0; i < b->size; i++) {
		b->ip[i] = tab[i].ip;
		b->port[i] = tab[i].port;
		b->pid[i] = tab[i].pid;
		memcpy(b->nodename[i], tab[i].node, 64);
		b->nodename[i][63] = 0;
	}
out:
	free(j.reply);
	if (rc) {
		if (b->listen_fd >= 0)
			close(b->listen_fd);
		b->listen_fd = -1;
	}
	return rc;
}
