/* runtime/boot/bootstrap.c: what both bootstraps share: node identity, the
 * job key, the listening socket the TCP engine keeps for the job's life,
 * and the tables they fill (address, port, node, pid of every rank). No
 * connection between ranks is made here: the engine makes each on first
 * use, with the authenticated hello of transport_handshake.c. */
#include "boot/boot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
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

int loom_boot_keys(struct loom_boot *b)
{
	return loom_job_key(b->key, &b->have_secret);
}

int loom_boot_fresh_ids(struct loom_boot *b)
{
	int rc = loom_random_bytes(&b->nonce, sizeof b->nonce);
	if (!rc)
		loom_boot_shm_key(b);
	return rc;
}

/* HMAC(key, "lshm" nonce): the same on every rank, never on the wire,
 * unguessable without the key */
void loom_boot_shm_key(struct loom_boot *b)
{
	uint8_t m[4 + 8], mac[LOOM_MAC_LEN];
	memcpy(m, "lshm", 4);
	memcpy(m + 4, &b->nonce, 8);
	loom_hmac(b->key, m, sizeof m, mac);
	memcpy(b->shm_key, mac, sizeof b->shm_key);
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

int loom_boot_tables(struct loom_boot *b)
{
	b->ip = calloc((size_t)b->size, sizeof *b->ip);
	b->port = calloc((size_t)b->size, sizeof *b->port);
	b->nodename = calloc((size_t)b->size, sizeof *b->nodename);
	b->pid = calloc((size_t)b->size, sizeof *b->pid);
	return b->ip && b->port && b->nodename && b->pid ? LOOM_SUCCESS : LOOM_ERR_NOMEM;
}
