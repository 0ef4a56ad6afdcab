/* runtime/boot/bootstrap.c: what both bootstraps share: node identity, the
 * listening socket, and the full TCP mesh built from an address table
 * (rank i connects to every lower rank and accepts every higher one; a
 * hello carries the rank and the world's nonce, so strays are refused). */
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

#define HELLO_MAGIC 0x4c4d4831u

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

static void tune(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int loom_boot_listen(int *fd, uint16_t *port)
{
	struct sockaddr_in a;
	socklen_t l = sizeof a;
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return LOOM_ERR_SYSTEM;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 128) ||
	    getsockname(s, (struct sockaddr *)&a, &l)) {
		LOOM_ERR("bootstrap: cannot listen: %s", strerror(errno));
		close(s);
		return LOOM_ERR_BOOTSTRAP;
	}
	*fd = s;
	*port = ntohs(a.sin_port);
	return LOOM_SUCCESS;
}

struct hello { uint32_t magic; int32_t rank; uint64_t nonce; };

static int connect_to(uint32_t ip, uint16_t port, double deadline)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = ip;
	a.sin_port = htons(port);
	for (;;) {
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			return -1;
		if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
			tune(s);
			return s;
		}
		close(s);
		if (loom_now() > deadline)
			return -1;
		usleep(100000);
	}
}

int loom_boot_mesh(struct loom_boot *b, const uint32_t *ip, const uint16_t *port, double deadline)
{
	int j, got = 0, need = b->size - 1 - b->rank;
	char addr[32];
	for (j = 0; j < b->size; j++)
		b->peer_fds[j] = -1;
	for (j = 0; j < b->rank; j++) {
		struct hello h = { HELLO_MAGIC, b->rank, b->nonce };
		int s = connect_to(ip[j], port[j], deadline);
		if (s < 0 || loom_fd_write_all(s, &h, sizeof h, deadline)) {
			inet_ntop(AF_INET, &ip[j], addr, sizeof addr);
			LOOM_ERR("bootstrap: cannot connect to rank %d at %s:%u: %s", j, addr, port[j],
				 strerror(errno));
			if (s >= 0)
				close(s);
			return LOOM_ERR_BOOTSTRAP;
		}
		b->peer_fds[j] = s;
	}
	while (got < need) {
		struct pollfd pf = { b->listen_fd, POLLIN, 0 };
		struct hello h;
		double left = deadline - loom_now();
		int s;
		if (left <= 0) {
			char miss[256] = "";
			size_t l = 0;
			for (j = b->rank + 1; j < b->size && l + 12 < sizeof miss; j++)
				if (b->peer_fds[j] < 0)
					l += (size_t)snprintf(miss + l, sizeof miss - l, "%s%d", l ? "," : "", j);
			LOOM_ERR("bootstrap: ranks %s never connected", miss);
			return LOOM_ERR_BOOTSTRAP;
		}
		if (poll(&pf, 1, 200) <= 0)
			continue;
		s = accept4(b->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (s < 0)
			continue;
		tune(s);
		if (loom_fd_read_all(s, &h, sizeof h, loom_now() + 10) || h.magic != HELLO_MAGIC ||
		    h.nonce != b->nonce || h.rank <= b->rank || h.rank >= b->size ||
		    b->peer_fds[h.rank] >= 0) {
			LOOM_WARN("bootstrap: refused a connection that is not from this job");
			close(s);
			continue;
		}
		b->peer_fds[h.rank] = s;
		got++;
	}
	return LOOM_SUCCESS;
}
