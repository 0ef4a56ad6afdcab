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
 * one; rank 0 records the address its hello is bound to), and both
 * kinds mix.
 *
 * Every hello, on TCP and on the Unix socket, is the authenticated one
 * of transport_handshake.c (LOOM_JOB_SECRET), bound to its connection and
 * to the rank it means to reach; every reply is MAC'd over its SHA-256
 * and encrypted under a key of its connection's. Everything taken from the wire is checked (rendezvous.c).
 * Ranks retry until LOOM_BOOTSTRAP_TIMEOUT (default 120 s). Each rank
 * listens for the TCP engine on the address its peers are told; the
 * engine connects to a peer when it first has a message for it.
 *
 * The files, each calling only those after it: this one (the job, and
 * which side each rank takes), bootstrap_node.c (the meeting inside a
 * node), bootstrap_hello.c (a hello to rank 0 and the table back),
 * bootstrap_rank0.c (rank 0's side), bootstrap_job.c (the settings and
 * the reply buffer they share), rendezvous.c (the wire's tables). */
#include "boot/bootstrap_env.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* flat: reach rank 0, listen where it sees us, say who we are */
static int rank_n(struct rv_job *j)
{
	struct loom_boot *b = j->b;
	struct loom_hs_peer p;
	struct sockaddr_in me;
	socklen_t ml = sizeof me;
	struct rv_hello h;
	uint16_t myport;
	if (loom_rv_dial_rank0(j, &p))
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
	return loom_rv_hello_rank0(j, &p, &h, NULL, 0);
}

static int resolve_master(struct rv_job *j)
{
	int rc;
	j->maddr = getenv("MASTER_ADDR");
	if (!j->maddr || !*j->maddr) {
		LOOM_ERR("bootstrap: MASTER_ADDR unset (RANK=%d WORLD_SIZE=%d)", j->b->rank, j->b->size);
		return LOOM_ERR_BOOTSTRAP;
	}
	if ((rc = loom_rv_env_int("MASTER_PORT", 1, 65535, &j->mport)))
		return rc;
	if (loom_resolve4(j->maddr, &j->mip)) {
		LOOM_ERR("bootstrap: MASTER_ADDR=%s does not resolve", j->maddr);
		return LOOM_ERR_BOOTSTRAP;
	}
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
			rc = loom_rv_tree_entry(j) ? LOOM_ERR_BOOTSTRAP : loom_rv_node_leader(j, ls0);
		else {
			memset(&self, 0, sizeof self);
			self.e.ip = j->mip;
			self.e.port = j->me.port;
			self.e.pid = b->pid[0];
			memcpy(self.e.node, b->nodename[0], sizeof self.e.node);
			rc = loom_rv_rank0(j, ls0, &self, 1);
		}
		close(ls0);
		return rc;
	}
	if (!j->local_size)
		return rank_n(j);
	if ((rc = loom_rv_tree_entry(j)))
		return rc;
	return j->local_rank == 0 ? loom_rv_node_leader(j, -1) : loom_rv_node_member(j);
}

int loom_boot_env(struct loom_boot *b)
{
	struct rv_job j;
	const struct rv_entry *tab;
	int rc, i;
	memset(&j, 0, sizeof j);
	j.b = b;
	j.tmo = loom_env_double("LOOM_BOOTSTRAP_TIMEOUT", 120);
	if ((rc = loom_rv_env_int("WORLD_SIZE", 1, 1 << 20, &b->size)))
		return rc;
	if ((rc = loom_rv_env_int("RANK", 0, b->size - 1, &b->rank))) {
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
	if ((rc = resolve_master(&j)) || (rc = loom_rv_tree_mode(&j)))
		return rc;
	j.deadline = loom_now() + j.tmo;
	if ((rc = rendezvous(&j)))
		goto out;
	if (b->rank != 0) {
		b->nonce = j.reply->nonce;
		loom_boot_shm_key(b);
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
