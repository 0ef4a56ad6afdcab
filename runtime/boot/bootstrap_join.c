/* runtime/boot/bootstrap_join.c: a newcomer's bootstrap (LOOM_JOIN set:
 * loom.so's --loom-join). It dials MASTER_PORT on the job's nodes in
 * turn (LOOM_JOIN_HOSTS) until the leader of a growing communicator
 * answers (core/comm_grow.c): a handshake of kind LOOM_HS_JOIN, the
 * world's key proven both ways (LOOM_JOB_SECRET, which loom.so derives
 * for the world's step from the job key: docs/security.md), bound to the
 * connection and to the leader's role. Its replies give the world's
 * nonce, the grown communicator's context and members, and the world's
 * table; every count is checked (core/grow.h) before it sizes anything.
 * A refusal (this process does not hold the world's key) or a leader
 * that gave up ends the join at once; a node where nothing loom listens
 * is passed over; the whole is bounded by LOOM_BOOTSTRAP_TIMEOUT. */
#include "boot/bootstrap_env.h"
#include "core/grow.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HOST_TRY 1.0   /* seconds a node may take to take our connection */

struct join {
	struct loom_boot *b;
	int port, index, size;
	double deadline, tmo;
	struct loom_join_head h;
};

/* our engine's socket where the leader sees us, and the hello */
static int say_hello(struct join *j, struct loom_hs_peer *p)
{
	struct loom_boot *b = j->b;
	struct loom_join_hello h;
	struct sockaddr_in me;
	socklen_t ml = sizeof me;
	uint16_t port;
	if (b->listen_fd >= 0)
		close(b->listen_fd);
	b->listen_fd = -1;
	if (getsockname(p->fd, (struct sockaddr *)&me, &ml) ||
	    loom_boot_listen(me.sin_addr.s_addr, 0, &b->listen_fd, &port))
		return LOOM_ERR_BOOTSTRAP;
	memset(&h, 0, sizeof h);
	h.pid = (int32_t)getpid();
	h.port = port;
	loom_node_identity(h.node);
	return loom_hs_hello(b->key, p, LOOM_HS_JOIN, j->index, j->size, 0, &h, sizeof h, j->deadline);
}

/* one node: LOOM_SUCCESS with the head read, LOOM_HS_CLOSED or
 * LOOM_ERR_BOOTSTRAP to try the next, else fatal */
static int try_host(struct join *j, const char *host, struct loom_hs_peer *p)
{
	uint32_t ip;
	double until = loom_now() + HOST_TRY;
	char why[160];
	int rc;
	if (loom_resolve4(host, &ip))
		return LOOM_ERR_BOOTSTRAP;
	rc = loom_hs_dial_tcp(ip, (uint16_t)j->port, LOOM_HS_JOIN, until < j->deadline ? until : j->deadline, p);
	if (rc == LOOM_ERR_TIMEOUT || rc == LOOM_ERR_SYSTEM)
		return LOOM_ERR_BOOTSTRAP;
	if (rc == LOOM_SUCCESS && !(rc = say_hello(j, p)))
		rc = loom_hs_read_reply(j->b->key, p, &j->h, sizeof j->h, j->deadline);
	if (rc == LOOM_HS_FORGED) {
		LOOM_WARN("join: the process at %s:%d does not hold this job's secret; trying the next node", host,
			  j->port);
		rc = LOOM_ERR_BOOTSTRAP;
	}
	if (rc == LOOM_SUCCESS && loom_join_head_check(&j->h, why, sizeof why)) {
		LOOM_ERR("join: the leader at %s:%d sent %s", host, j->port, why);
		rc = LOOM_ERR_INVALID;
	}
	if (rc && p->fd >= 0) {
		close(p->fd);
		p->fd = -1;
	}
	return rc;
}

/* the nodes of LOOM_JOIN_HOSTS in turn until a leader takes us */
static int find_leader(struct join *j, struct loom_hs_peer *p)
{
	const char *hosts = getenv("LOOM_JOIN_HOSTS");
	char buf[4096], *save, *h;
	int rc;
	if (!hosts || !*hosts || strlen(hosts) >= sizeof buf) {
		LOOM_ERR("join: LOOM_JOIN_HOSTS %s: loom.so's --loom-join sets it to the job's nodes",
			 hosts && *hosts ? "is too long" : "is unset");
		return LOOM_ERR_BOOTSTRAP;
	}
	for (;;) {
		snprintf(buf, sizeof buf, "%s", hosts);
		for (h = strtok_r(buf, ", ", &save); h; h = strtok_r(NULL, ", ", &save)) {
			rc = try_host(j, h, p);
			if (rc != LOOM_ERR_BOOTSTRAP && rc != LOOM_HS_CLOSED)
				return rc;
			if (loom_now() > j->deadline)
				return LOOM_ERR_TIMEOUT;
		}
		usleep(200000);   /* every node tried: the members may not be in their grow yet */
	}
}

/* the grown communicator: the members (checked: world ranks below
 * base, each once), then the newcomers base.. base+nnew-1 */
static int joined(struct loom_boot *b, const struct loom_join_head *h, const int32_t *mem)
{
	struct loom_joined *q = calloc(1, sizeof *q);
	char *seen = calloc((size_t)h->base, 1);
	int i, n = h->members + h->nnew;
	if (!q || !seen || !(q->wr = malloc((size_t)n * sizeof *q->wr))) {
		free(seen);
		if (q)
			free(q->wr);
		free(q);
		return LOOM_ERR_NOMEM;
	}
	for (i = 0; i < h->members; i++) {
		if (mem[i] < 0 || mem[i] >= h->base || seen[mem[i]]++) {
			LOOM_ERR("join: the leader's member %d is world rank %d (a world of %d before us)", i,
				 (int)mem[i], h->base);
			free(seen);
			free(q->wr);
			free(q);
			return LOOM_ERR_BOOTSTRAP;
		}
		q->wr[i] = mem[i];
	}
	for (i = 0; i < h->nnew; i++)
		q->wr[h->members + i] = h->base + i;
	free(seen);
	q->n = n;
	q->me = h->members + h->index;
	q->ctx = h->ctx;
	memcpy(q->name, h->name, sizeof q->name);
	q->name[sizeof q->name - 1] = 0;
	b->nonce = h->nonce;
	loom_boot_shm_key(b);
	b->joined = q;
	return LOOM_SUCCESS;
}

/* the table reply: every world rank's entry, then the members */
static int read_table(struct join *j, struct loom_hs_peer *p)
{
	struct loom_boot *b = j->b;
	size_t len = loom_join_table_len(&j->h);
	char *buf = malloc(len);
	const struct loom_join_entry *e = (const struct loom_join_entry *)buf;
	int i, rc;
	b->size = j->h.base + j->h.nnew;
	b->rank = j->h.base + j->h.index;
	if (!buf || loom_boot_tables(b)) {
		free(buf);
		return LOOM_ERR_NOMEM;
	}
	rc = loom_hs_read_reply(b->key, p, buf, len, j->deadline);
	for (i = 0; rc == LOOM_SUCCESS && i < b->size; i++) {
		b->ip[i] = e[i].ip;
		b->port[i] = e[i].port;
		b->pid[i] = e[i].pid;
		memcpy(b->nodename[i], e[i].node, 64);
		b->nodename[i][63] = 0;
	}
	if (rc == LOOM_SUCCESS)
		rc = joined(b, &j->h, (const int32_t *)(buf + (size_t)b->size * sizeof *e));
	free(buf);
	return rc;
}

static void join_failed(const struct join *j, int rc)
{
	if (rc == LOOM_HS_REFUSED)
		LOOM_ERR("join: refused by the leader: this process does not hold the world's key (not a step of "
			 "the job the world runs in, or LOOM_JOB_SECRET not from loom.so's --loom-join)");
	else if (rc == LOOM_HS_GAVE_UP)
		LOOM_ERR("join: the leader gave up on its grow (it took its newcomers, or failed); see its log");
	else if (rc == LOOM_ERR_TIMEOUT)
		LOOM_ERR("join: no leader of a growing communicator answered on port %d of LOOM_JOIN_HOSTS within "
			 "%.0f s (LOOM_BOOTSTRAP_TIMEOUT): do the members call loom_comm_grow?", j->port, j->tmo);
	else if (rc)
		LOOM_ERR("join: failed: %s", rc > 0 ? "the leader closed the connection" : loom_strerror(rc));
}

int loom_boot_join(struct loom_boot *b)
{
	struct join j;
	struct loom_hs_peer p = { .fd = -1 };
	int rc;
	memset(&j, 0, sizeof j);
	j.b = b;
	b->listen_fd = -1;
	j.tmo = loom_env_double("LOOM_BOOTSTRAP_TIMEOUT", 120);
	if ((rc = loom_boot_keys(b)))
		return rc;
	if (!b->have_secret) {
		LOOM_ERR("join: LOOM_JOB_SECRET is unset: a newcomer proves the world's key (loom.so's --loom-join "
			 "gives it)");
		return LOOM_ERR_BOOTSTRAP;
	}
	if ((rc = loom_rv_env_int("MASTER_PORT", 1, 65535, &j.port)))
		return rc;
	j.index = (int)loom_env_double("RANK", 0);
	j.size = (int)loom_env_double("WORLD_SIZE", 1);
	if (j.size < 1 || j.size > LOOM_GROW_MAX_NEW || j.index < 0 || j.index >= j.size)
		j.index = 0, j.size = 1;
	j.deadline = loom_now() + j.tmo;
	rc = find_leader(&j, &p);
	if (rc == LOOM_SUCCESS)
		rc = read_table(&j, &p);
	if (p.fd >= 0)
		close(p.fd);
	join_failed(&j, rc);
	if (rc && b->listen_fd >= 0) {
		close(b->listen_fd);
		b->listen_fd = -1;
	}
	memset(&j.h, 0, sizeof j.h);
	return rc ? LOOM_ERR_BOOTSTRAP : LOOM_SUCCESS;
}
