/* runtime/boot/handshake.c: the authenticated hello that every connection
 * of the rendezvous and of the mesh begins with (docs/security.md).
 *
 *   server, on accept:  magic kind challenge_s                 (24 bytes)
 *   client:             magic kind rank size challenge_c
 *                       payload[plen] HMAC(key, "lhel" challenge_s hello)
 *   server, once it takes the peer:
 *                       HMAC(key, "lrep" challenge_s challenge_c rank
 *                       SHA-256(reply)) reply[rlen]
 *
 * Both sides prove that they hold the job key; the key never travels, and
 * fresh challenges make a recorded exchange useless. Lengths are fixed by
 * the kind and known to both sides, never taken from the wire. The server
 * keeps up to HS_PENDING connections in flight at once, each with its own
 * short deadline, so idle or garbage connections neither block the job's
 * ranks nor take their place; a failed hello is logged and dropped. */
#include "boot/boot.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HS_MAGIC 0x4c4d4832u   /* "LMH2" */
#define HS_PENDING 64          /* connections in their hello at once */
#define HS_PER_CONN 5.0        /* seconds a connection may take for its hello */
#define HS_LOGGED 8            /* refusals logged one by one, then counted */

struct hs_challenge {
	uint32_t magic, kind;
	uint8_t ch[LOOM_HS_CH];
};

struct hs_hello {
	uint32_t magic, kind;
	int32_t rank, size;
	uint8_t ch[LOOM_HS_CH];
};

#define HS_MAX_MSG (sizeof(struct hs_hello) + LOOM_HS_MAX_PAYLOAD + LOOM_MAC_LEN)

static void hello_mac(const uint8_t *key, const uint8_t srv_ch[LOOM_HS_CH], const void *hello,
		      size_t len, uint8_t mac[LOOM_MAC_LEN])
{
	uint8_t m[4 + LOOM_HS_CH + sizeof(struct hs_hello) + LOOM_HS_MAX_PAYLOAD];
	memcpy(m, "lhel", 4);
	memcpy(m + 4, srv_ch, LOOM_HS_CH);
	memcpy(m + 4 + LOOM_HS_CH, hello, len);
	loom_hmac(key, m, 4 + LOOM_HS_CH + len, mac);
}

static void reply_mac(const uint8_t *key, const struct loom_hs_peer *p, const uint8_t digest[32],
		      uint8_t mac[LOOM_MAC_LEN])
{
	uint8_t m[4 + 2 * LOOM_HS_CH + 4 + 32];
	int32_t r = p->rank;
	memcpy(m, "lrep", 4);
	memcpy(m + 4, p->srv_ch, LOOM_HS_CH);
	memcpy(m + 4 + LOOM_HS_CH, p->cli_ch, LOOM_HS_CH);
	memcpy(m + 4 + 2 * LOOM_HS_CH, &r, 4);
	memcpy(m + 8 + 2 * LOOM_HS_CH, digest, 32);
	loom_hmac(key, m, sizeof m, mac);
}

static void set_blocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

static void nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* ---- server ---- */

struct pending {
	int fd;
	double until;
	uint32_t ip;
	uint16_t port;
	size_t got;
	uint8_t ch[LOOM_HS_CH];
	uint8_t buf[HS_MAX_MSG];
};

struct acceptor {
	const struct loom_hs_cfg *cfg;
	struct pending p[HS_PENDING];
	int n;
	unsigned refused;
};

static void refuse(struct acceptor *a, int i, const char *why)
{
	struct pending *p = &a->p[i];
	char addr[INET_ADDRSTRLEN] = "?";
	inet_ntop(AF_INET, &p->ip, addr, sizeof addr);
	if (a->refused < HS_LOGGED)
		LOOM_WARN("bootstrap: %s: refused a connection from %s:%u: %s", a->cfg->what, addr,
			  p->port, why);
	else if (a->refused == HS_LOGGED)
		LOOM_WARN("bootstrap: %s: more connections refused; not logging each", a->cfg->what);
	a->refused++;
	close(p->fd);
	a->p[i] = a->p[--a->n];
}

static void admit(struct acceptor *a, int fd, const struct sockaddr_in *from)
{
	struct hs_challenge c;
	struct pending *p;
	if (a->n == HS_PENDING) {
		/* full of connections that sent nothing yet: the oldest goes;
		 * a real rank's hello follows its connect at once */
		int oldest = 0, i;
		for (i = 1; i < a->n; i++)
			if (a->p[i].until < a->p[oldest].until)
				oldest = i;
		refuse(a, oldest, "too many connections in their hello at once");
	}
	p = &a->p[a->n];
	memset(p, 0, offsetof(struct pending, buf));
	p->fd = fd;
	p->ip = from->sin_addr.s_addr;
	p->port = ntohs(from->sin_port);
	p->until = loom_now() + HS_PER_CONN;
	c.magic = HS_MAGIC;
	c.kind = a->cfg->kind;
	if (loom_random_bytes(p->ch, sizeof p->ch)) {
		close(fd);
		return;
	}
	memcpy(c.ch, p->ch, sizeof c.ch);
	/* 24 bytes into an empty socket buffer: cannot block */
	if (send(fd, &c, sizeof c, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof c) {
		close(fd);
		return;
	}
	nodelay(fd);
	a->n++;
}

/* The whole hello is in: check it; 1 when the callback took the peer. */
static int judge(struct acceptor *a, int i)
{
	const struct loom_hs_cfg *cfg = a->cfg;
	struct pending *p = &a->p[i];
	struct hs_hello h;
	struct loom_hs_peer peer;
	uint8_t mac[LOOM_MAC_LEN];
	size_t body = sizeof h + cfg->plen;
	int rc;
	memcpy(&h, p->buf, sizeof h);
	if (h.magic != HS_MAGIC || h.kind != cfg->kind) {
		refuse(a, i, "not a loom hello");
		return 0;
	}
	hello_mac(cfg->key, p->ch, p->buf, body, mac);
	if (!loom_mac_equal(mac, p->buf + body)) {
		refuse(a, i, "it does not hold this job's secret (LOOM_JOB_SECRET)");
		return 0;
	}
	memset(&peer, 0, sizeof peer);
	peer.fd = p->fd;
	peer.rank = h.rank;
	peer.size = h.size;
	peer.ip = p->ip;
	memcpy(peer.srv_ch, p->ch, LOOM_HS_CH);
	memcpy(peer.cli_ch, h.ch, LOOM_HS_CH);
	memcpy(peer.payload, p->buf + sizeof h, cfg->plen);
	set_blocking(p->fd);
	rc = cfg->on_peer(cfg->arg, &peer);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		refuse(a, i, "the job's secret, but not a rank this one waits for");
		return 0;
	}
	a->p[i] = a->p[--a->n];  /* the fd is the callback's now */
	return 1;
}

int loom_hs_accept(int lfd, const struct loom_hs_cfg *cfg, int need, double deadline)
{
	struct acceptor *a = calloc(1, sizeof *a);
	struct pollfd pf[1 + HS_PENDING];
	size_t msg = sizeof(struct hs_hello) + cfg->plen + LOOM_MAC_LEN;
	int got = 0, rc = LOOM_SUCCESS, i;
	if (!a)
		return LOOM_ERR_NOMEM;
	if (cfg->plen > LOOM_HS_MAX_PAYLOAD) {
		free(a);
		return LOOM_ERR_INVALID;
	}
	a->cfg = cfg;
	/* accept until EAGAIN below: the listening socket must not block */
	i = fcntl(lfd, F_GETFL);
	if (i >= 0)
		fcntl(lfd, F_SETFL, i | O_NONBLOCK);
	while (got < need) {
		double now = loom_now(), wake = now + 0.2;
		int np;
		if (now > deadline) {
			rc = LOOM_ERR_TIMEOUT;
			break;
		}
		pf[0].fd = lfd;
		pf[0].events = POLLIN;
		for (i = 0; i < a->n; i++) {
			pf[1 + i].fd = a->p[i].fd;
			pf[1 + i].events = POLLIN;
			if (a->p[i].until < wake)
				wake = a->p[i].until;
		}
		np = a->n;
		if (poll(pf, (nfds_t)(1 + np), wake > now ? (int)((wake - now) * 1000) + 1 : 0) < 0 &&
		    errno != EINTR) {
			rc = LOOM_ERR_SYSTEM;
			break;
		}
		/* the pending ones first (indices move as they leave), newest last */
		for (i = np - 1; i >= 0 && got < need; i--) {
			struct pending *p = &a->p[i];
			ssize_t r;
			if (!(pf[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = recv(p->fd, p->buf + p->got, msg - p->got, MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR && errno != EWOULDBLOCK)) {
				refuse(a, i, p->got ? "closed in the middle of its hello" : "closed before its hello");
				continue;
			}
			if (r < 0)
				continue;
			p->got += (size_t)r;
			if (p->got < msg)
				continue;
			rc = judge(a, i);
			if (rc < 0)
				goto out;
			got += rc;
			rc = LOOM_SUCCESS;
		}
		now = loom_now();
		for (i = a->n - 1; i >= 0; i--)
			if (a->p[i].until < now)
				refuse(a, i, a->p[i].got ? "its hello is incomplete after 5 s"
					   : "it sent no hello within 5 s");
		if (pf[0].revents & POLLIN) {
			for (;;) {
				struct sockaddr_in from;
				socklen_t fl = sizeof from;
				int s = accept4(lfd, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC | SOCK_NONBLOCK);
				if (s < 0)
					break;
				admit(a, s, &from);
			}
		}
	}
out:
	for (i = 0; i < a->n; i++)
		close(a->p[i].fd);
	if (a->refused > HS_LOGGED)
		LOOM_WARN("bootstrap: %s: %u connections refused in all", cfg->what, a->refused);
	free(a);
	return rc;
}

int loom_hs_reply(const uint8_t *key, const struct loom_hs_peer *p, const void *reply, size_t rlen,
		  const uint8_t *digest, double deadline)
{
	uint8_t mac[LOOM_MAC_LEN], d[32];
	if (!digest) {
		loom_sha256(reply, rlen, d);
		digest = d;
	}
	reply_mac(key, p, digest, mac);
	if (loom_fd_write_all(p->fd, mac, sizeof mac, deadline) ||
	    (rlen && loom_fd_write_all(p->fd, reply, rlen, deadline)))
		return LOOM_ERR_BOOTSTRAP;
	return LOOM_SUCCESS;
}

/* ---- client ---- */

int loom_hs_dial(uint32_t ip, uint16_t port, uint32_t kind, double deadline, struct loom_hs_peer *p)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = ip;
	a.sin_port = htons(port);
	memset(p, 0, sizeof *p);
	p->fd = -1;
	for (;;) {
		struct hs_challenge c;
		int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			return LOOM_ERR_SYSTEM;
		if (connect(s, (struct sockaddr *)&a, sizeof a) == 0) {
			nodelay(s);
			/* the server may be busy for a while before it accepts */
			if (loom_fd_read_all(s, &c, sizeof c, deadline) == 0) {
				if (c.magic != HS_MAGIC || c.kind != kind) {
					close(s);
					return LOOM_ERR_BOOTSTRAP;
				}
				p->fd = s;
				p->ip = ip;
				memcpy(p->srv_ch, c.ch, LOOM_HS_CH);
				return LOOM_SUCCESS;
			}
		}
		close(s);
		if (loom_now() > deadline)
			return LOOM_ERR_TIMEOUT;
		usleep(100000);
	}
}

int loom_hs_hello(const uint8_t *key, struct loom_hs_peer *p, uint32_t kind, int rank, int size,
		  const void *payload, size_t plen, double deadline)
{
	uint8_t m[HS_MAX_MSG];
	struct hs_hello h;
	if (plen > LOOM_HS_MAX_PAYLOAD)
		return LOOM_ERR_INVALID;
	memset(&h, 0, sizeof h);
	h.magic = HS_MAGIC;
	h.kind = kind;
	h.rank = rank;
	h.size = size;
	if (loom_random_bytes(h.ch, sizeof h.ch))
		return LOOM_ERR_SYSTEM;
	memcpy(p->cli_ch, h.ch, LOOM_HS_CH);
	p->rank = rank;
	p->size = size;
	memcpy(m, &h, sizeof h);
	if (plen)
		memcpy(m + sizeof h, payload, plen);
	hello_mac(key, p->srv_ch, m, sizeof h + plen, m + sizeof h + plen);
	return loom_fd_write_all(p->fd, m, sizeof h + plen + LOOM_MAC_LEN, deadline) ? LOOM_ERR_BOOTSTRAP
										   : LOOM_SUCCESS;
}

int loom_hs_read_reply(const uint8_t *key, const struct loom_hs_peer *p, void *reply, size_t rlen,
		       double deadline)
{
	uint8_t mac[LOOM_MAC_LEN], want[LOOM_MAC_LEN], d[32];
	if (loom_fd_read_all(p->fd, mac, sizeof mac, deadline))
		return LOOM_ERR_BOOTSTRAP;  /* refused: closed without a reply */
	if (rlen && loom_fd_read_all(p->fd, reply, rlen, deadline))
		return LOOM_ERR_BOOTSTRAP;
	loom_sha256(reply, rlen, d);
	reply_mac(key, p, d, want);
	return loom_mac_equal(mac, want) ? LOOM_SUCCESS : LOOM_HS_FORGED;
}
