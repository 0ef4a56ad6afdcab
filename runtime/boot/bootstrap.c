/* runtime/boot/bootstrap.c: what both bootstraps share: node identity, the
 * job key, the listening socket, and the full TCP mesh built from an
 * address table (rank i connects to every lower rank and accepts every
 * higher one). Every mesh connection starts with the authenticated hello
 * of handshake.c, carrying the rank and the world's nonce: a process
 * without the job's key, or of another world, is refused. */
#include "boot/boot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void loom_node_identity(char out[64])
{
	const char *n = getenv("SLURMD_NODENAME");
	if (n && *n) {
		snprintf(out, 64, "%s", n);
		return;
	}
	if (gethostname(out, 64) != 0)
		snprintf(out, 64, "localhost");
	out[63] = 0;
}

int loom_fd_write_all(int fd, const void *buf, size_t len, double deadline)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		{
			struct pollfd pf = { fd, POLLOUT, 0 };
			double left = deadline - loom_now();
			if (left <= 0)
				return -1;
			poll(&pf, 1, left > 0.5 ? 500 : (int)(left * 1000) + 1);
		}
	}
	return 0;
}

int loom_fd_read_all(int fd, void *buf, size_t len, double deadline)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0)
			return -1;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		{
			struct pollfd pf = { fd, POLLIN, 0 };
			double left = deadline - loom_now();
			if (left <= 0)
				return -1;
			poll(&pf, 1, left > 0.5 ? 500 : (int)(left * 1000) + 1);
		}
	}
	return 0;
}

int loom_boot_keys(struct loom_boot *b)
{
	return loom_job_key(b->key, &b->have_secret);
}

int loom_boot_fresh_ids(struct loom_boot *b)
{
	int rc = loom_random_bytes(&b->nonce, sizeof b->nonce);
	return rc ? rc : loom_random_bytes(b->shm_key, sizeof b->shm_key);
}

/* ip in network order, 0: every interface; want_port 0: any free one */
int loom_boot_listen(uint32_t ip, uint16_t want_port, int *fd, uint16_t *port)
{
	struct sockaddr_in a;
	socklen_t l = sizeof a;
	char addr[INET_ADDRSTRLEN];
	int one = 1, s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return LOOM_ERR_SYSTEM;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = ip;
	a.sin_port = htons(want_port);
	if (want_port)
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 1024) ||
	    getsockname(s, (struct sockaddr *)&a, &l)) {
		inet_ntop(AF_INET, &ip, addr, sizeof addr);
		LOOM_ERR("bootstrap: cannot listen on %s:%u: %s%s", addr, want_port, strerror(errno),
			 errno == EADDRNOTAVAIL ? " (not an address of this host)" : "");
		close(s);
		return LOOM_ERR_BOOTSTRAP;
	}
	*fd = s;
	*port = ntohs(a.sin_port);
	return LOOM_SUCCESS;
}

struct mesh_hello { uint64_t nonce; };

struct mesh_accept {
	struct loom_boot *b;
	double deadline;
};

static int mesh_peer(void *arg, const struct loom_hs_peer *p)
{
	struct mesh_accept *m = arg;
	struct loom_boot *b = m->b;
	struct mesh_hello h;
	memcpy(&h, p->payload, sizeof h);
	if (h.nonce != b->nonce || p->size != b->size || p->rank <= b->rank || p->rank >= b->size)
		return 0;  /* another world of the same key, or not a rank that connects here */
	if (b->peer_fds[p->rank] >= 0) {
		LOOM_ERR("bootstrap: rank %d connected twice: two tasks have the same rank", p->rank);
		return LOOM_ERR_BOOTSTRAP;
	}
	if (loom_hs_reply(b->key, p, NULL, 0, NULL, m->deadline))
		return 0;
	b->peer_fds[p->rank] = p->fd;
	return 1;
}

int loom_boot_mesh(struct loom_boot *b, const uint32_t *ip, const uint16_t *port, double deadline)
{
	int j, rc;
	char addr[INET_ADDRSTRLEN], what[48];
	struct mesh_hello mh = { b->nonce };
	struct mesh_accept ma = { b, deadline };
	struct loom_hs_cfg cfg = { b->key, LOOM_HS_MESH, sizeof mh, what, mesh_peer, &ma };
	for (j = 0; j < b->size; j++)
		b->peer_fds[j] = -1;
	for (j = 0; j < b->rank; j++) {
		struct loom_hs_peer p;
		inet_ntop(AF_INET, &ip[j], addr, sizeof addr);
		rc = loom_hs_dial(ip[j], port[j], LOOM_HS_MESH, deadline, &p);
		if (!rc)
			rc = loom_hs_hello(b->key, &p, LOOM_HS_MESH, b->rank, b->size, &mh, sizeof mh, deadline);
		if (!rc)
			rc = loom_hs_read_reply(b->key, &p, NULL, 0, deadline);
		if (rc) {
			if (rc == LOOM_HS_FORGED)
				LOOM_ERR("bootstrap: the process at %s:%u (rank %d's address) does not hold this job's secret",
					 addr, port[j], j);
			else
				LOOM_ERR("bootstrap: cannot connect to rank %d at %s:%u%s", j, addr, port[j],
					 rc == LOOM_ERR_BOOTSTRAP ? ": it refused our hello" : "");
			if (p.fd >= 0)
				close(p.fd);
			return LOOM_ERR_BOOTSTRAP;
		}
		b->peer_fds[j] = p.fd;
	}
	snprintf(what, sizeof what, "rank %d's mesh port", b->rank);
	rc = loom_hs_accept(b->listen_fd, &cfg, b->size - 1 - b->rank, deadline);
	if (rc == LOOM_ERR_TIMEOUT) {
		char miss[256] = "";
		size_t l = 0;
		for (j = b->rank + 1; j < b->size && l + 12 < sizeof miss; j++)
			if (b->peer_fds[j] < 0)
				l += (size_t)snprintf(miss + l, sizeof miss - l, "%s%d", l ? "," : "", j);
		LOOM_ERR("bootstrap: ranks %s never connected", miss);
	}
	if (rc)
		return rc == LOOM_ERR_TIMEOUT ? LOOM_ERR_BOOTSTRAP : rc;
	/* every peer is here: nobody has any business connecting any more */
	close(b->listen_fd);
	b->listen_fd = -1;
	return LOOM_SUCCESS;
}
