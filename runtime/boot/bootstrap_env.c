/* runtime/boot/bootstrap_env.c: the TCP rendezvous of RANK / WORLD_SIZE /
 * MASTER_ADDR / MASTER_PORT. Rank 0 listens on MASTER_ADDR:MASTER_PORT;
 * every other rank connects (retrying until LOOM_BOOTSTRAP_TIMEOUT,
 * default 120 s), proves that it holds the job key (LOOM_JOB_SECRET,
 * transport_handshake.c) and sends its listen port, node identity and pid; rank 0
 * records the address each connection came from and, once every rank is
 * in, sends the world's random nonce and shm key and the whole table
 * back, authenticated the same way. Each rank listens for the TCP engine
 * on the address rank 0 saw it come from, the one its peers are told;
 * the engine connects to a peer when it first has a message for it. */
#include "boot/boot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* a rank's hello payload (rank and size travel in the handshake) */
struct rv_hello {
	int32_t pid;
	uint16_t port, pad;
	char node[64];
};

struct rv_entry {
	uint32_t ip;
	uint16_t port, pad;
	int32_t pid;
	char node[64];
};

/* rank 0's reply: the world's random bits, then the table */
struct rv_head {
	uint64_t nonce;
	uint8_t shm_key[16];
};

static int env_int(const char *name, long lo, long hi, int *out)
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

struct rank0 {
	struct loom_boot *b;
	struct loom_hs_peer *peers;   /* by rank; fd -1 until it came */
	struct rv_entry *tab;
};

static int rank0_peer(void *arg, const struct loom_hs_peer *p)
{
	struct rank0 *z = arg;
	struct loom_boot *b = z->b;
	struct rv_hello h;
	/* it holds the job's key: a real task of this job, so a wrong rank
	 * or size is the job's misconfiguration, fatal, not an intruder */
	if (p->size != b->size || p->rank <= 0 || p->rank >= b->size || z->peers[p->rank].fd >= 0) {
		LOOM_ERR("bootstrap: a task says rank %d of WORLD_SIZE %d (mine: WORLD_SIZE %d)%s",
			 p->rank, p->size, b->size,
			 p->rank > 0 && p->rank < b->size && z->peers[p->rank].fd >= 0 ? ": rank given twice" : "");
		return LOOM_ERR_BOOTSTRAP;
	}
	memcpy(&h, p->payload, sizeof h);
	z->peers[p->rank] = *p;
	z->tab[p->rank].ip = p->ip;
	z->tab[p->rank].port = h.port;
	z->tab[p->rank].pid = h.pid;
	memcpy(z->tab[p->rank].node, h.node, 64);
	z->tab[p->rank].node[63] = 0;
	return 1;
}

static int rank0(struct loom_boot *b, int mport, uint32_t mip, uint16_t myport,
		 struct rv_entry *tab, double deadline, const char *maddr)
{
	struct rank0 z = { b, NULL, tab };
	char what[96];
	struct loom_hs_cfg cfg = { b->key, LOOM_HS_RENDEZVOUS, sizeof(struct rv_hello), what, rank0_peer, &z };
	size_t rlen = sizeof(struct rv_head) + (size_t)b->size * sizeof *tab;
	struct rv_head *reply = NULL;
	uint8_t digest[32];
	int ls = -1, i, rc;
	uint16_t got_port;
	z.peers = calloc((size_t)b->size, sizeof *z.peers);
	if (!z.peers)
		return LOOM_ERR_NOMEM;
	for (i = 0; i < b->size; i++)
		z.peers[i].fd = -1;
	snprintf(what, sizeof what, "MASTER_PORT %d", mport);
	if ((rc = loom_boot_listen(mip, (uint16_t)mport, &ls, &got_port))) {
		LOOM_ERR("bootstrap: rank 0 cannot listen on MASTER_ADDR:MASTER_PORT %s:%d", maddr, mport);
		goto out;
	}
	tab[0].ip = mip;
	tab[0].port = myport;
	tab[0].pid = b->pid[0];
	memcpy(tab[0].node, b->nodename[0], 64);
	rc = loom_hs_accept(ls, &cfg, b->size - 1, deadline);
	if (rc == LOOM_ERR_TIMEOUT) {
		char miss[256] = "";
		size_t l = 0;
		for (i = 1; i < b->size && l + 12 < sizeof miss; i++)
			if (z.peers[i].fd < 0)
				l += (size_t)snprintf(miss + l, sizeof miss - l, "%s%d", l ? "," : "", i);
		LOOM_ERR("bootstrap: rendezvous at %s:%d: ranks %s never connected", maddr, mport, miss);
		rc = LOOM_ERR_BOOTSTRAP;
	}
	if (rc)
		goto out;
	reply = malloc(rlen);
	if (!reply) {
		rc = LOOM_ERR_NOMEM;
		goto out;
	}
	reply->nonce = b->nonce;
	memcpy(reply->shm_key, b->shm_key, sizeof reply->shm_key);
	memcpy(reply + 1, tab, (size_t)b->size * sizeof *tab);
	loom_sha256(reply, rlen, digest);
	for (i = 1; i < b->size; i++) {
		if (loom_hs_reply(b->key, &z.peers[i], reply, rlen, digest, deadline)) {
			LOOM_ERR("bootstrap: cannot send the table to rank %d", i);
			rc = LOOM_ERR_BOOTSTRAP;
			goto out;
		}
	}
out:
	for (i = 0; i < b->size; i++)
		if (z.peers[i].fd >= 0)
			close(z.peers[i].fd);
	free(z.peers);
	free(reply);
	if (ls >= 0)
		close(ls);
	return rc;
}

/* rank > 0: reach rank 0, listen where it sees us, say who we are, get
 * the table */
static int rank_n(struct loom_boot *b, int mport, uint32_t mip, struct rv_entry *tab,
		  double deadline, double tmo, const char *maddr)
{
	struct loom_hs_peer p;
	struct sockaddr_in me;
	socklen_t ml = sizeof me;
	struct rv_hello h;
	size_t rlen = sizeof(struct rv_head) + (size_t)b->size * sizeof *tab;
	struct rv_head *reply = malloc(rlen);
	uint16_t myport;
	int rc;
	if (!reply)
		return LOOM_ERR_NOMEM;
	rc = loom_hs_dial(mip, (uint16_t)mport, LOOM_HS_RENDEZVOUS, deadline, &p);
	if (rc) {
		LOOM_ERR("bootstrap: cannot reach MASTER_ADDR:MASTER_PORT %s:%d after %.0f s (LOOM_BOOTSTRAP_TIMEOUT)%s",
			 maddr, mport, tmo, rc == LOOM_ERR_BOOTSTRAP ? ": what answers there is not loom" : "");
		free(reply);
		return LOOM_ERR_BOOTSTRAP;
	}
	if (getsockname(p.fd, (struct sockaddr *)&me, &ml) ||
	    (rc = loom_boot_listen(me.sin_addr.s_addr, 0, &b->listen_fd, &myport))) {
		close(p.fd);
		free(reply);
		return LOOM_ERR_BOOTSTRAP;
	}
	memset(&h, 0, sizeof h);
	h.pid = b->pid[b->rank];
	h.port = myport;
	memcpy(h.node, b->nodename[b->rank], 64);
	rc = loom_hs_hello(b->key, &p, LOOM_HS_RENDEZVOUS, b->rank, b->size, &h, sizeof h, deadline);
	if (!rc)
		rc = loom_hs_read_reply(b->key, &p, reply, rlen, deadline);
	close(p.fd);
	if (rc == LOOM_HS_FORGED)
		LOOM_ERR("bootstrap: the process at MASTER_ADDR:MASTER_PORT %s:%d does not hold this job's secret: "
			 "another program holds that port (or LOOM_JOB_SECRET differs between the ranks)",
			 maddr, mport);
	else if (rc)
		LOOM_ERR("bootstrap: rendezvous at %s:%d failed: rank 0 refused us (LOOM_JOB_SECRET differs from "
			 "rank 0's?) or gave up; see its log", maddr, mport);
	if (!rc) {
		b->nonce = reply->nonce;
		memcpy(b->shm_key, reply->shm_key, sizeof b->shm_key);
		memcpy(tab, reply + 1, (size_t)b->size * sizeof *tab);
	}
	free(reply);
	return rc ? LOOM_ERR_BOOTSTRAP : LOOM_SUCCESS;
}

int loom_boot_env(struct loom_boot *b)
{
	const char *maddr;
	int mport, rc, i;
	uint16_t myport = 0;
	double tmo = loom_env_double("LOOM_BOOTSTRAP_TIMEOUT", 120), deadline;
	struct addrinfo hints, *ai = NULL;
	uint32_t mip;
	struct rv_entry *tab = NULL;
	if ((rc = env_int("WORLD_SIZE", 1, 1 << 20, &b->size)))
		return rc;
	if ((rc = env_int("RANK", 0, b->size - 1, &b->rank))) {
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
	maddr = getenv("MASTER_ADDR");
	if (!maddr || !*maddr) {
		LOOM_ERR("bootstrap: MASTER_ADDR unset (RANK=%d WORLD_SIZE=%d)", b->rank, b->size);
		return LOOM_ERR_BOOTSTRAP;
	}
	if ((rc = env_int("MASTER_PORT", 1, 65535, &mport)))
		return rc;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(maddr, NULL, &hints, &ai) || !ai) {
		LOOM_ERR("bootstrap: MASTER_ADDR=%s does not resolve", maddr);
		return LOOM_ERR_BOOTSTRAP;
	}
	mip = ((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr;
	freeaddrinfo(ai);
	deadline = loom_now() + tmo;
	tab = calloc((size_t)b->size, sizeof *tab);
	if (!tab) {
		rc = LOOM_ERR_NOMEM;
		goto out;
	}
	if (b->rank == 0) {
		/* rank 0's mesh port is on the address the others are told */
		if ((rc = loom_boot_fresh_ids(b)) || (rc = loom_boot_listen(mip, 0, &b->listen_fd, &myport)) ||
		    (rc = rank0(b, mport, mip, myport, tab, deadline, maddr)))
			goto out;
	} else if ((rc = rank_n(b, mport, mip, tab, deadline, tmo, maddr)))
		goto out;
	for (i = 0; i < b->size; i++) {
		b->ip[i] = tab[i].ip;
		b->port[i] = tab[i].port;
		b->pid[i] = tab[i].pid;
		memcpy(b->nodename[i], tab[i].node, 64);
		b->nodename[i][63] = 0;
	}
out:
	free(tab);
	if (rc) {
		if (b->listen_fd >= 0)
			close(b->listen_fd);
		b->listen_fd = -1;
	}
	return rc;
}
