/* runtime/boot/bootstrap_node.c: the env rendezvous inside one node
 * (bootstrap_env.c for the whole). LOCAL_RANK 0 listens on an abstract
 * Unix socket named from MASTER_ADDR:MASTER_PORT and the node identity,
 * takes only this user's processes (SO_PEERCRED) with the authenticated
 * hello, gathers its node's entries, sends them to rank 0 as one group
 * hello and hands the table it gets back to its node's ranks. */
#include "boot/bootstrap_env.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static socklen_t node_addr(const struct rv_job *j, struct sockaddr_un *a)
{
	size_t n = strlen(j->sock);
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	/* abstract (sun_path[0] = 0): no file to clean up, gone with its process */
	memcpy(a->sun_path + 1, j->sock, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* the process that holds the name, when it is not us */
static void name_holder(const struct rv_job *j, char *out, size_t len)
{
	struct sockaddr_un a;
	socklen_t al = node_addr(j, &a);
	struct ucred cr;
	socklen_t cl = sizeof cr;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(out, len, "another process");
	if (s >= 0 && !connect(s, (struct sockaddr *)&a, al) && !getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &cl))
		snprintf(out, len, "process %d of uid %u", (int)cr.pid, (unsigned)cr.uid);
	if (s >= 0)
		close(s);
}

static int node_listen(const struct rv_job *j, int *fd)
{
	struct sockaddr_un a;
	socklen_t al = node_addr(j, &a);
	const char *node = j->me.node;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return LOOM_ERR_SYSTEM;
	if (bind(s, (struct sockaddr *)&a, al) || listen(s, 4096)) {
		char who[80];
		int e = errno;
		close(s);
		if (e == EADDRINUSE) {
			name_holder(j, who, sizeof who);
			LOOM_ERR("bootstrap: node %s: LOCAL_RANK 0 cannot listen on the node rendezvous @%s: %s holds "
				 "the name (another process, not this job's)", node, j->sock, who);
		} else
			LOOM_ERR("bootstrap: node %s: LOCAL_RANK 0 cannot listen on @%s: %s", node, j->sock, strerror(e));
		return LOOM_ERR_BOOTSTRAP;
	}
	LOOM_INFO("bootstrap: node %s: LOCAL_RANK 0 listens on @%s for %d local ranks", node, j->sock,
		  j->local_size - 1);
	*fd = s;
	return LOOM_SUCCESS;
}

struct node_group {
	struct rv_job *j;
	struct rv_ranked *g;            /* by local rank */
	struct loom_hs_peer *peers;     /* by local rank; fd -1 until it came */
};

static int local_rank_taken(const struct node_group *n, int rank)
{
	int i;
	for (i = 0; i < n->j->local_size; i++)
		if ((i == 0 || n->peers[i].fd >= 0) && n->g[i].rank == rank)
			return 1;
	return 0;
}

static int local_peer(void *arg, const struct loom_hs_peer *p)
{
	struct node_group *n = arg;
	struct rv_job *j = n->j;
	struct rv_local_hello h;
	int lr;
	memcpy(&h, p->payload, sizeof h);
	h.e.node[63] = 0;
	lr = h.local_rank;
	if (h.local_size != j->local_size) {
		LOOM_ERR("bootstrap: node %s: LOCAL_WORLD_SIZE differs between the ranks of this node: rank %d "
			 "(LOCAL_RANK %d) says %d, LOCAL_RANK 0 (rank %d) says %d", j->me.node, p->rank, lr,
			 h.local_size, j->b->rank, j->local_size);
		return LOOM_ERR_BOOTSTRAP;
	}
	if (p->size != j->b->size || p->rank < 0 || p->rank >= j->b->size || lr < 1 || lr >= j->local_size ||
	    n->peers[lr].fd >= 0 || local_rank_taken(n, p->rank)) {
		LOOM_ERR("bootstrap: node %s: a local rank says rank %d of WORLD_SIZE %d, LOCAL_RANK %d (mine: "
			 "WORLD_SIZE %d, LOCAL_WORLD_SIZE %d)%s", j->me.node, p->rank, p->size, lr, j->b->size,
			 j->local_size, lr >= 1 && lr < j->local_size && n->peers[lr].fd >= 0 ? ": LOCAL_RANK given twice"
			 : local_rank_taken(n, p->rank) ? ": rank given twice" : "");
		return LOOM_ERR_BOOTSTRAP;
	}
	n->g[lr].rank = p->rank;
	n->g[lr].e = h.e;
	n->peers[lr] = *p;
	return 1;
}

static void local_missing(const struct node_group *n, char *out, size_t len)
{
	size_t l = 0;
	int i;
	out[0] = 0;
	for (i = 1; i < n->j->local_size && l + 16 < len; i++)
		if (n->peers[i].fd < 0)
			l += (size_t)snprintf(out + l, len - l, "%s%d", l ? "," : "", i);
}

/* a leader whose node failed tells rank 0, which ends the rendezvous for
 * all: the other nodes fail now instead of at the deadline */
static void abort_rank0(struct rv_job *j)
{
	struct loom_hs_peer p;
	struct rv_hello h;
	double until = loom_now() + 5;
	if (loom_hs_dial_tcp(j->mip, (uint16_t)j->mport, LOOM_HS_RENDEZVOUS, until, &p))
		return;
	memset(&h, 0, sizeof h);
	h.pid = j->me.pid;
	memcpy(h.node, j->me.node, sizeof h.node);
	h.count = RV_ABORT;
	loom_hs_hello(j->b->key, &p, LOOM_HS_RENDEZVOUS, j->b->rank, j->b->size, 0, &h, sizeof h, until);
	close(p.fd);
}

/* gather the node's entries, send them up, pass the table down */
int loom_rv_node_leader(struct rv_job *j, int ls0)
{
	struct loom_boot *b = j->b;
	struct node_group n = { j, NULL, NULL };
	char what[160];
	int L = j->local_size, ls = -1, rc, i, taken, pending = 0;
	struct loom_hs_cfg cfg = { b->key, LOOM_HS_NODE, sizeof(struct rv_local_hello), what, local_peer, &n, 1,
				   &pending, 0 };
	uint8_t digest[32];
	n.g = calloc((size_t)L, sizeof *n.g);
	n.peers = calloc((size_t)L, sizeof *n.peers);
	if (!n.g || !n.peers) {
		rc = LOOM_ERR_NOMEM;
		goto out;
	}
	for (i = 0; i < L; i++)
		n.peers[i].fd = -1;
	n.g[0].rank = b->rank;
	n.g[0].e = j->me;
	snprintf(what, sizeof what, "node %s rendezvous @%s", j->me.node, j->sock);
	if ((rc = node_listen(j, &ls)) == LOOM_SUCCESS)
		rc = loom_hs_accept(ls, &cfg, L - 1, j->deadline);
	if (rc == LOOM_ERR_TIMEOUT) {
		char miss[128];
		local_missing(&n, miss, sizeof miss);
		LOOM_ERR("bootstrap: node %s: LOCAL_RANK %s of LOCAL_WORLD_SIZE %d never reached LOCAL_RANK 0 on @%s "
			 "within %.0f s (LOOM_BOOTSTRAP_TIMEOUT)", j->me.node, miss, L, j->sock, j->tmo);
		rc = LOOM_ERR_BOOTSTRAP;
	}
	if (rc && b->rank != 0)
		abort_rank0(j);
	if (rc && ls >= 0) {
		/* the local ranks still to come would wait for the deadline */
		for (i = 1, taken = 0; i < L; i++)
			taken += n.peers[i].fd >= 0;
		for (i = 1; i < L; i++)
			if (n.peers[i].fd >= 0)
				close(n.peers[i].fd), n.peers[i].fd = -1;
		loom_hs_give_up(ls, L - 1 - taken - pending, j->deadline);
	}
	if (ls >= 0)
		close(ls);
	if (rc)
		goto out;
	if (b->rank == 0)
		rc = loom_rv_rank0(j, ls0, n.g, (uint32_t)L);
	else {
		struct loom_hs_peer p;
		struct rv_hello h;
		memset(&h, 0, sizeof h);
		h.pid = j->me.pid;
		h.port = j->me.port;
		memcpy(h.node, j->me.node, sizeof h.node);
		h.count = (uint32_t)L;
		loom_sha256(n.g, (size_t)L * sizeof *n.g, h.digest);
		rc = loom_rv_dial_rank0(j, &p);
		if (!rc)
			rc = loom_rv_hello_rank0(j, &p, &h, n.g, (size_t)L * sizeof *n.g);
	}
	if (rc)
		goto out;
	loom_sha256(j->reply, j->rlen, digest);
	for (i = 1; i < L && !rc; i++)
		if (loom_hs_reply(b->key, &n.peers[i], j->reply, j->rlen, digest, j->deadline)) {
			LOOM_ERR("bootstrap: node %s: cannot send the table to rank %d", j->me.node, n.peers[i].rank);
			rc = LOOM_ERR_BOOTSTRAP;
		}
out:
	for (i = 1; n.peers && i < L; i++)
		if (n.peers[i].fd >= 0)
			close(n.peers[i].fd);
	free(n.g);
	free(n.peers);
	return rc;
}

/* a node's other ranks: their entry to LOCAL_RANK 0, the table back */
int loom_rv_node_member(struct rv_job *j)
{
	struct loom_boot *b = j->b;
	struct sockaddr_un a;
	socklen_t al = node_addr(j, &a);
	struct loom_hs_peer p;
	struct rv_local_hello h;
	const char *node = j->me.node;
	int rc = loom_hs_dial((struct sockaddr *)&a, al, LOOM_HS_NODE, j->deadline, &p);
	if (rc == LOOM_HS_GAVE_UP) {
		LOOM_ERR("bootstrap: node %s: LOCAL_RANK 0 on @%s gave up on this node's ranks; see its log", node,
			 j->sock);
		return LOOM_ERR_BOOTSTRAP;
	}
	if (rc == LOOM_HS_NOT_OURS) {
		LOOM_ERR("bootstrap: node %s: the node rendezvous @%s is held by process %d of uid %d, not by this "
			 "job's LOCAL_RANK 0: another process holds the name", node, j->sock, p.local_pid, p.local_uid);
		return LOOM_ERR_BOOTSTRAP;
	}
	if (rc == LOOM_ERR_BOOTSTRAP) {
		LOOM_ERR("bootstrap: node %s: what holds the node rendezvous @%s does not answer as loom: another "
			 "process holds the name", node, j->sock);
		return rc;
	}
	if (rc && p.local_pid) {
		LOOM_ERR("bootstrap: node %s: process %d holds the node rendezvous @%s but sent no loom challenge "
			 "within %.0f s (LOOM_BOOTSTRAP_TIMEOUT): another process holds the name, or LOCAL_RANK 0 "
			 "is stuck", node, p.local_pid, j->sock, j->tmo);
		return LOOM_ERR_BOOTSTRAP;
	}
	if (rc) {
		LOOM_ERR("bootstrap: node %s: LOCAL_RANK 0 never listened on @%s within %.0f s "
			 "(LOOM_BOOTSTRAP_TIMEOUT): did it start, with the same MASTER_ADDR:MASTER_PORT?",
			 node, j->sock, j->tmo);
		return LOOM_ERR_BOOTSTRAP;
	}
	memset(&h, 0, sizeof h);
	h.local_rank = j->local_rank;
	h.local_size = j->local_size;
	h.e = j->me;
	rc = loom_rv_alloc_reply(j);
	if (!rc)
		rc = loom_hs_hello(b->key, &p, LOOM_HS_NODE, b->rank, b->size, 0, &h, sizeof h, j->deadline);
	if (!rc)
		rc = loom_hs_read_reply(b->key, &p, j->reply, j->rlen, j->deadline);
	close(p.fd);
	if (rc == LOOM_HS_FORGED)
		LOOM_ERR("bootstrap: node %s: the process on the node rendezvous @%s does not hold this job's "
			 "secret: another process holds the name (or LOOM_JOB_SECRET differs between the ranks)",
			 node, j->sock);
	else if (rc)
		LOOM_ERR("bootstrap: node %s: LOCAL_RANK 0 on @%s refused us (LOOM_JOB_SECRET or LOCAL_WORLD_SIZE "
			 "differs from its?) or gave up; see its log", node, j->sock);
	return rc ? LOOM_ERR_BOOTSTRAP : LOOM_SUCCESS;
}

/* the address this host routes to MASTER_ADDR from: a UDP connect picks
 * the route and source address and sends nothing */
static int outward_ip(const struct rv_job *j, uint32_t *ip)
{
	struct sockaddr_in a;
	socklen_t al = sizeof a;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), rc = -1;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = j->mip;
	a.sin_port = htons((uint16_t)j->mport);
	if (s >= 0 && !connect(s, (struct sockaddr *)&a, sizeof a) && !getsockname(s, (struct sockaddr *)&a, &al))
		rc = 0;
	if (rc)
		LOOM_ERR("bootstrap: no route to MASTER_ADDR %s: %s", j->maddr, strerror(errno));
	if (s >= 0)
		close(s);
	*ip = a.sin_addr.s_addr;
	return rc ? LOOM_ERR_BOOTSTRAP : LOOM_SUCCESS;
}

/* LOCAL_RANK / LOCAL_WORLD_SIZE, unless LOOM_BOOTSTRAP_TREE=0: the node
 * rendezvous; local_size stays 0 (flat) without them or alone on a node */
int loom_rv_tree_mode(struct rv_job *j)
{
	const char *t = getenv("LOOM_BOOTSTRAP_TREE");
	int rc;
	j->local_size = 0;
	if ((t && !strcmp(t, "0")) || !getenv("LOCAL_RANK") || !getenv("LOCAL_WORLD_SIZE"))
		return LOOM_SUCCESS;
	if ((rc = loom_rv_env_int("LOCAL_WORLD_SIZE", 1, j->b->size, &j->local_size)) ||
	    (rc = loom_rv_env_int("LOCAL_RANK", 0, j->local_size - 1, &j->local_rank)))
		return rc;
	if (j->local_size == 1)
		j->local_size = 0;
	else if (j->b->rank == 0 && j->local_rank != 0) {
		LOOM_ERR("bootstrap: rank 0 has LOCAL_RANK %d: the node rendezvous needs rank 0 to be its node's "
			 "LOCAL_RANK 0 (LOOM_BOOTSTRAP_TREE=0: every rank to rank 0 directly)", j->local_rank);
		return LOOM_ERR_BOOTSTRAP;
	}
	return LOOM_SUCCESS;
}

/* this rank's entry and engine socket, on the address that routes to MASTER_ADDR */
int loom_rv_tree_entry(struct rv_job *j)
{
	struct loom_boot *b = j->b;
	uint32_t ip = j->mip;
	uint16_t port = j->me.port;     /* rank 0's, already listening */
	int rc;
	if (b->rank != 0 && (rc = outward_ip(j, &ip)))
		return rc;
	if (b->listen_fd < 0 && (rc = loom_boot_listen(ip, 0, &b->listen_fd, &port)))
		return rc;
	memset(&j->me, 0, sizeof j->me);
	j->me.ip = ip;
	j->me.port = port;
	j->me.pid = b->pid[b->rank];
	memcpy(j->me.node, b->nodename[b->rank], sizeof j->me.node);
	loom_rv_node_socket_name(j->maddr, j->mport, j->me.node, j->sock);
	return LOOM_SUCCESS;
}
