/* runtime/boot/bootstrap_env.c: the TCP rendezvous of RANK / WORLD_SIZE /
 * MASTER_ADDR / MASTER_PORT. Rank 0 listens on MASTER_PORT, every other
 * rank connects (retrying until LOOM_BOOTSTRAP_TIMEOUT, default 120 s)
 * and sends its listen port, node identity and pid; rank 0 records the
 * address each connection came from, and sends the whole table back.
 * Then the mesh is built (bootstrap.c). */
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

#define RV_MAGIC 0x4c525631u

struct rv_hello {
	uint32_t magic;
	int32_t rank, size, pid;
	uint16_t port, pad[3];
	char node[64];
};

struct rv_entry {
	uint32_t ip;
	uint16_t port, pad;
	int32_t pid;
	char node[64];
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

static uint64_t fresh_nonce(void)
{
	uint64_t v = 0;
	FILE *f = fopen("/dev/urandom", "rb");
	if (f) {
		if (fread(&v, sizeof v, 1, f) != 1)
			v = 0;
		fclose(f);
	}
	return loom_mix64(v ^ (uint64_t)getpid(), (uint64_t)(loom_now() * 1e9));
}

static int alloc_tables(struct loom_boot *b)
{
	b->peer_fds = calloc((size_t)b->size, sizeof *b->peer_fds);
	b->nodename = calloc((size_t)b->size, sizeof *b->nodename);
	b->pid = calloc((size_t)b->size, sizeof *b->pid);
	return b->peer_fds && b->nodename && b->pid ? LOOM_SUCCESS : LOOM_ERR_NOMEM;
}

static int rank0(struct loom_boot *b, int mport, uint32_t mip, uint16_t myport,
		 struct rv_entry *tab, double deadline, const char *maddr)
{
	struct sockaddr_in a;
	int ls, one = 1, got = 0, i, rc = LOOM_SUCCESS;
	int *fds = calloc((size_t)b->size, sizeof *fds);
	if (!fds)
		return LOOM_ERR_NOMEM;
	for (i = 0; i < b->size; i++)
		fds[i] = -1;
	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	a.sin_port = htons((uint16_t)mport);
	if (ls >= 0)
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 128)) {
		LOOM_ERR("bootstrap: rank 0 cannot listen on MASTER_PORT %d: %s", mport, strerror(errno));
		if (ls >= 0)
			close(ls);
		free(fds);
		return LOOM_ERR_BOOTSTRAP;
	}
	tab[0].ip = mip;
	tab[0].port = myport;
	tab[0].pid = b->pid[0];
	memcpy(tab[0].node, b->nodename[0], 64);
	while (got < b->size - 1) {
		struct pollfd pf = { ls, POLLIN, 0 };
		struct rv_hello h;
		struct sockaddr_in pa;
		socklen_t pl = sizeof pa;
		int s;
		if (loom_now() > deadline) {
			char miss[256] = "";
			size_t l = 0;
			for (i = 1; i < b->size && l + 12 < sizeof miss; i++)
				if (fds[i] < 0)
					l += (size_t)snprintf(miss + l, sizeof miss - l, "%s%d", l ? "," : "", i);
			LOOM_ERR("bootstrap: rendezvous at %s:%d: ranks %s never connected", maddr, mport,
				 miss);
			rc = LOOM_ERR_BOOTSTRAP;
			goto out;
		}
		if (poll(&pf, 1, 200) <= 0)
			continue;
		s = accept4(ls, (struct sockaddr *)&pa, &pl, SOCK_CLOEXEC);
		if (s < 0)
			continue;
		if (loom_fd_read_all(s, &h, sizeof h, loom_now() + 10) || h.magic != RV_MAGIC) {
			LOOM_WARN("bootstrap: ignored a stray connection on MASTER_PORT %d", mport);
			close(s);
			continue;
		}
		if (h.size != b->size || h.rank <= 0 || h.rank >= b->size || fds[h.rank] >= 0) {
			LOOM_ERR("bootstrap: a task says rank %d of WORLD_SIZE %d (mine: WORLD_SIZE %d)%s",
				 h.rank, h.size, b->size,
				 h.rank > 0 && h.rank < b->size && fds[h.rank] >= 0 ? ": rank given twice" : "");
			close(s);
			rc = LOOM_ERR_BOOTSTRAP;
			goto out;
		}
		fds[h.rank] = s;
		tab[h.rank].ip = pa.sin_addr.s_addr;
		tab[h.rank].port = h.port;
		tab[h.rank].pid = h.pid;
		h.node[63] = 0;
		memcpy(tab[h.rank].node, h.node, 64);
		got++;
	}
	for (i = 1; i < b->size; i++) {
		if (loom_fd_write_all(fds[i], &b->nonce, sizeof b->nonce, deadline) ||
		    loom_fd_write_all(fds[i], tab, (size_t)b->size * sizeof *tab, deadline)) {
			LOOM_ERR("bootstrap: cannot send the table to rank %d", i);
			rc = LOOM_ERR_BOOTSTRAP;
			goto out;
		}
	}
out:
	for (i = 0; i < b->size; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	close(ls);
	return rc;
}

int loom_boot_env(struct loom_boot *b)
{
	const char *maddr;
	int mport, rc, i;
	uint16_t myport;
	double tmo = loom_env_double("LOOM_BOOTSTRAP_TIMEOUT", 120), deadline;
	struct addrinfo hints, *ai = NULL;
	uint32_t mip;
	struct rv_entry *tab = NULL;
	uint32_t *ips = NULL;
	uint16_t *ports = NULL;
	if ((rc = env_int("WORLD_SIZE", 1, 1 << 20, &b->size)))
		return rc;
	if ((rc = env_int("RANK", 0, b->size - 1, &b->rank))) {
		if (getenv("RANK"))
			LOOM_ERR("bootstrap: RANK must be below WORLD_SIZE=%d", b->size);
		return rc;
	}
	if ((rc = alloc_tables(b)))
		return rc;
	loom_node_identity(b->nodename[b->rank]);
	b->pid[b->rank] = (int)getpid();
	b->listen_fd = -1;
	if (b->size == 1) {
		b->peer_fds[0] = -1;
		b->nonce = fresh_nonce();
		return LOOM_SUCCESS;
	}
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
	if ((rc = loom_boot_listen(&b->listen_fd, &myport)))
		return rc;
	deadline = loom_now() + tmo;
	tab = calloc((size_t)b->size, sizeof *tab);
	ips = calloc((size_t)b->size, sizeof *ips);
	ports = calloc((size_t)b->size, sizeof *ports);
	if (!tab || !ips || !ports) {
		rc = LOOM_ERR_NOMEM;
		goto out;
	}
	if (b->rank == 0) {
		b->nonce = fresh_nonce();
		if ((rc = rank0(b, mport, mip, myport, tab, deadline, maddr)))
			goto out;
	} else {
		struct sockaddr_in a;
		struct rv_hello h;
		int s = -1;
		memset(&a, 0, sizeof a);
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = mip;
		a.sin_port = htons((uint16_t)mport);
		for (;;) {
			s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0)
				break;
			if (s >= 0)
				close(s);
			s = -1;
			if (loom_now() > deadline)
				break;
			usleep(100000);
		}
		if (s < 0) {
			LOOM_ERR("bootstrap: cannot reach MASTER_ADDR:MASTER_PORT %s:%d after %.0f s (LOOM_BOOTSTRAP_TIMEOUT)",
				 maddr, mport, tmo);
			rc = LOOM_ERR_BOOTSTRAP;
			goto out;
		}
		memset(&h, 0, sizeof h);
		h.magic = RV_MAGIC;
		h.rank = b->rank;
		h.size = b->size;
		h.pid = b->pid[b->rank];
		h.port = myport;
		memcpy(h.node, b->nodename[b->rank], 64);
		if (loom_fd_write_all(s, &h, sizeof h, deadline) ||
		    loom_fd_read_all(s, &b->nonce, sizeof b->nonce, deadline) ||
		    loom_fd_read_all(s, tab, (size_t)b->size * sizeof *tab, deadline)) {
			LOOM_ERR("bootstrap: rendezvous at %s:%d failed (rank 0 refused us or timed out; see its log)",
				 maddr, mport);
			close(s);
			rc = LOOM_ERR_BOOTSTRAP;
			goto out;
		}
		close(s);
	}
	for (i = 0; i < b->size; i++) {
		ips[i] = tab[i].ip;
		ports[i] = tab[i].port;
		b->pid[i] = tab[i].pid;
		memcpy(b->nodename[i], tab[i].node, 64);
		b->nodename[i][63] = 0;
	}
	rc = loom_boot_mesh(b, ips, ports, deadline);
out:
	free(tab);
	free(ips);
	free(ports);
	if (rc && b->listen_fd >= 0) {
		int k;
		close(b->listen_fd);
		b->listen_fd = -1;
		for (k = 0; k < b->size; k++)
			if (b->peer_fds[k] > 0)
				close(b->peer_fds[k]);
	}
	return rc;
}
