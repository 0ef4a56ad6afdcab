/* runtime/transport/transport_handshake.c: the authenticated hello that
 * every connection of the rendezvous and of the TCP engine begins with
 * (docs/security.md).
 *
 *   server, on accept:  magic kind challenge_s                 (24 bytes)
 *   client:             magic kind rank size to challenge_c bind
 *                       payload[plen] HMAC(key, "lhel" challenge_s hello)
 *   server, once it takes the peer:
 *                       HMAC(key, "lrep" challenge_s challenge_c kind
 *                       rank to bind SHA-256(reply))
 *                       AES-256-GCM(reply[rlen]) tag       (rlen > 0)
 *   or, in the reply's place, when it will not take the peer:
 *                       magic "RFSD"|"GAVE" zero[24]               (32 bytes)
 *
 * Both sides prove that they hold the job key; the key never travels, and
 * fresh challenges make a recorded exchange useless. Both MACs are bound
 * to the connection and the roles: `to` is the rank (or role) the client
 * means to reach, `bind` the connection's addresses and ports as the
 * client sees them. The server checks the MAC (the key), then compares
 * `to` with who it is and `bind` with its own view of the connection: a
 * relay without the key, which holds one connection to each side, can
 * pass a hello on but never make the two views agree (docs/security.md).
 * A reply is encrypted under a key of this connection's (HMAC(key,
 * "lenc" challenge_s challenge_c)) with its MAC as the IV: the MAC
 * differs for every reply of a connection unless the bytes are the same.
 * Lengths are fixed by the kind and known to both sides, never taken
 * from the wire.
 *
 * The frame in the reply's place says "your hello failed its check"
 * (RFSD) or "this side failed" (GAVE): it tells the client nothing it did
 * not know, and lets it tell a refusal, which ends its rendezvous at
 * once, from a connection closed without a word (evicted under a flood,
 * the server restarting, a relay refused), which it dials again until
 * its deadline. A hello whose MAC holds but whose views differ (a relay)
 * is closed without a word: the real client behind the relay dials again.
 *
 * The server keeps up to HS_PENDING connections in flight at once, each
 * with its own short deadline; a failed hello is logged and dropped. When
 * all are taken, a newcomer may replace only a connection that sent no
 * byte within HS_GRACE of its challenge (a real rank answers within a
 * round trip), or whose hello stalled half-way for HS_STALL (a real hello
 * is one write); else the newcomer is refused: it gets a challenge and is
 * closed at once, which its dialer reads as "closed before a reply" and
 * dials again. So strangers can slow the job's ranks, never evict one.
 * The acceptor is an object that a poll loop drives (the engine keeps one
 * for the job's life; loom_hs_accept loops it until enough peers came),
 * and the client has a non-blocking form for the engine too. */
#include "transport/transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define HS_MAGIC 0x4c4d4832u   /* "LMH2" */
#define HS_GAVE_UP 0x47415645u /* a challenge's or a refusal's kind: "GAVE", the server failed */
#define HS_REFUSED 0x52465344u /* a refusal's kind: "RFSD", the hello failed its check */
#define HS_PENDING LOOM_HS_PENDING
#define HS_PER_CONN 5.0        /* seconds a connection may take for its hello */
/* A connection that sent nothing this long after its challenge may give
 * its place to a newcomer: a real rank answers within a round trip, tens
 * of ms on a loaded host; longer costs a flood's victims more redials
 * (HS_PENDING places free up per HS_GRACE), shorter evicts slow ranks. */
#define HS_GRACE 0.1
#define HS_STALL 1.0           /* a hello begun and unfinished this long is no rank's */
#define HS_ACCEPTS (2 * HS_PENDING)  /* accepts per step: pending hellos are read in between */
#define HS_LOGGED 8            /* refusals logged one by one, then counted */

struct hs_challenge {
	uint32_t magic, kind;
	uint8_t ch[LOOM_HS_CH];
};

/* in the reply's place: the server will not take this hello */
struct hs_refusal {
	uint32_t magic, kind;
	uint8_t zero[LOOM_MAC_LEN - 8];
};

struct hs_hello {
	uint32_t magic, kind;
	int32_t rank, size, to;
	uint8_t ch[LOOM_HS_CH];
	struct loom_hs_bind bind;
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
	uint8_t m[4 + 2 * LOOM_HS_CH + 12 + sizeof p->bind + 32], *q = m;
	int32_t r[3] = { (int32_t)p->kind, p->rank, p->srv_rank };
	memcpy(q, "lrep", 4), q += 4;
	memcpy(q, p->srv_ch, LOOM_HS_CH), q += LOOM_HS_CH;
	memcpy(q, p->cli_ch, LOOM_HS_CH), q += LOOM_HS_CH;
	memcpy(q, r, sizeof r), q += sizeof r;
	memcpy(q, &p->bind, sizeof p->bind), q += sizeof p->bind;
	memcpy(q, digest, 32);
	loom_hmac(key, m, sizeof m, mac);
}

/* the key this connection's replies are encrypted under */
static void reply_key(const uint8_t *key, const struct loom_hs_peer *p, uint8_t k[LOOM_MAC_LEN])
{
	uint8_t m[4 + 2 * LOOM_HS_CH];
	memcpy(m, "lenc", 4);
	memcpy(m + 4, p->srv_ch, LOOM_HS_CH);
	memcpy(m + 4 + LOOM_HS_CH, p->cli_ch, LOOM_HS_CH);
	loom_hmac(key, m, sizeof m, k);
}

/* the connection as this side sees it (zeros but on TCP over IPv4) */
static void view(int fd, int server, struct loom_hs_bind *b)
{
	struct sockaddr_storage me, them;
	socklen_t ml = sizeof me, tl = sizeof them;
	const struct sockaddr_in *m = (const struct sockaddr_in *)&me, *t = (const struct sockaddr_in *)&them;
	memset(b, 0, sizeof *b);
	if (getsockname(fd, (struct sockaddr *)&me, &ml) || getpeername(fd, (struct sockaddr *)&them, &tl) ||
	    me.ss_family != AF_INET || them.ss_family != AF_INET)
		return;
	if (server)
		m = (const struct sockaddr_in *)&them, t = (const struct sockaddr_in *)&me;
	b->cli_ip = m->sin_addr.s_addr;
	b->cli_port = ntohs(m->sin_port);
	b->srv_ip = t->sin_addr.s_addr;
	b->srv_port = ntohs(t->sin_port);
}

static void bind_name(const struct loom_hs_bind *b, char *out, size_t len)
{
	char c[INET_ADDRSTRLEN], s[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &b->cli_ip, c, sizeof c);
	inet_ntop(AF_INET, &b->srv_ip, s, sizeof s);
	snprintf(out, len, "%s:%u -> %s:%u", c, b->cli_port, s, b->srv_port);
}

static int local_peer_pid(int fd, uid_t *uid);

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

/* ---- server ---- */

struct pending {
	int fd;
	double since, until;    /* its challenge went; its deadline */
	double first;           /* its hello's first byte came */
	uint32_t ip;
	uint16_t port;
	int local_pid;          /* AF_UNIX: the peer's pid (SO_PEERCRED), else 0 */
	size_t got;
	uint8_t ch[LOOM_HS_CH];
	uint8_t buf[HS_MAX_MSG];
};

struct loom_hs_acceptor {
	const struct loom_hs_cfg *cfg;
	struct pending p[HS_PENDING];
	int n;
	unsigned refused;
};

/* who a pending connection is, for log lines */
static void peer_name(const struct pending *p, char *out, size_t len)
{
	char addr[INET_ADDRSTRLEN] = "?";
	if (p->local_pid) {
		snprintf(out, len, "local process %d", p->local_pid);
		return;
	}
	inet_ntop(AF_INET, &p->ip, addr, sizeof addr);
	snprintf(out, len, "%s:%u", addr, p->port);
}

static void count_refusal(struct loom_hs_acceptor *a, const char *who, const char *why)
{
	if (a->refused < HS_LOGGED)
		LOOM_WARN("bootstrap: %s: refused a connection from %s: %s", a->cfg->what, who, why);
	else if (a->refused == HS_LOGGED)
		LOOM_WARN("bootstrap: %s: more connections refused; not logging each", a->cfg->what);
	a->refused++;
}

static void refuse(struct loom_hs_acceptor *a, int i, const char *why)
{
	struct pending *p = &a->p[i];
	char who[48];
	peer_name(p, who, sizeof who);
	count_refusal(a, who, why);
	close(p->fd);
	a->p[i] = a->p[--a->n];
}

int loom_hs_refuse(int fd, int gave_up)
{
	struct hs_refusal r;
	memset(&r, 0, sizeof r);
	r.magic = HS_MAGIC;
	r.kind = gave_up ? HS_GAVE_UP : HS_REFUSED;
	/* 32 bytes after a hello that waits for them: the buffer has room */
	return send(fd, &r, sizeof r, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof r ? 0 : -1;
}

/* the bytes already there for a pending connection: -1 closed, else how many */
static ssize_t drain(struct loom_hs_acceptor *a, struct pending *p)
{
	size_t msg = sizeof(struct hs_hello) + a->cfg->plen + LOOM_MAC_LEN;
	ssize_t r = recv(p->fd, p->buf + p->got, msg - p->got, MSG_DONTWAIT);
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR && errno != EWOULDBLOCK))
		return -1;
	if (r < 0)
		return 0;
	if (!p->got)
		p->first = loom_now();
	p->got += (size_t)r;
	return r;
}

/* The acceptor is full: free a place for a newcomer if one may go (the
 * oldest silent past HS_GRACE, else the oldest hello stalled past
 * HS_STALL); 0 if none may, and the newcomer is refused. A connection
 * whose bytes wait unread is not silent: its bytes are read first. */
static int make_room(struct loom_hs_acceptor *a, double now)
{
	size_t msg = sizeof(struct hs_hello) + a->cfg->plen + LOOM_MAC_LEN;
	for (;;) {
		int i, silent = -1, stalled = -1;
		for (i = 0; i < a->n; i++) {
			const struct pending *p = &a->p[i];
			if (!p->got && now - p->since > HS_GRACE &&
			    (silent < 0 || p->since < a->p[silent].since))
				silent = i;
			if (p->got && p->got < msg && now - p->first > HS_STALL &&
			    (stalled < 0 || p->first < a->p[stalled].first))
				stalled = i;
		}
		if (silent >= 0) {
			ssize_t r = drain(a, &a->p[silent]);
			if (r < 0) {
				refuse(a, silent, "closed before its hello");
				return 1;
			}
			if (r > 0)
				continue;  /* it spoke after all: judged on the next step */
			refuse(a, silent, "it sent nothing while others waited for its place");
			return 1;
		}
		if (stalled >= 0) {
			refuse(a, stalled, "its hello stalled half-way while others waited for its place");
			return 1;
		}
		return 0;
	}
}

/* AF_UNIX: only this user's processes may take part (the name of an
 * abstract socket is open to every process of the host); 0 if not one */
static int local_peer_pid(int fd, uid_t *uid)
{
	struct ucred cr;
	socklen_t l = sizeof cr;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &l))
		return 0;
	*uid = cr.uid;
	return cr.pid > 0 ? cr.pid : 1;
}

static void admit(struct loom_hs_acceptor *a, int fd, const struct sockaddr_storage *from)
{
	struct hs_challenge c;
	struct pending *p;
	int local_pid = 0;
	uid_t uid = 0;
	if (from->ss_family == AF_UNIX) {
		local_pid = local_peer_pid(fd, &uid);
		if (!local_pid || uid != geteuid()) {
			if (a->refused++ < HS_LOGGED)
				LOOM_WARN("bootstrap: %s: refused a connection from local process %d of uid %u: "
					  "not this job's user", a->cfg->what, local_pid, (unsigned)uid);
			close(fd);
			return;
		}
	}
	c.magic = HS_MAGIC;
	c.kind = a->cfg->kind;
	if (a->n == HS_PENDING && !make_room(a, loom_now())) {
		/* a challenge, then closed: its dialer reads "closed before a
		 * reply" and dials again; the places stay with the hellos */
		char who[48];
		struct pending nc;
		memset(&nc, 0, offsetof(struct pending, buf));
		nc.local_pid = local_pid;
		if (from->ss_family == AF_INET) {
			nc.ip = ((const struct sockaddr_in *)from)->sin_addr.s_addr;
			nc.port = ntohs(((const struct sockaddr_in *)from)->sin_port);
		}
		peer_name(&nc, who, sizeof who);
		count_refusal(a, who, "too many connections in their hello at once; it may dial again");
		memset(c.ch, 0, sizeof c.ch);
		send(fd, &c, sizeof c, MSG_DONTWAIT | MSG_NOSIGNAL);
		close(fd);
		return;
	}
	p = &a->p[a->n];
	memset(p, 0, offsetof(struct pending, buf));
	p->fd = fd;
	p->local_pid = local_pid;
	if (from->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)from;
		p->ip = in->sin_addr.s_addr;
		p->port = ntohs(in->sin_port);
	}
	p->since = loom_now();
	p->until = p->since + HS_PER_CONN;
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

/* a hello that failed its check: dropped, or under cfg->strict (only the
 * job's own processes can reach the socket) the job's misconfiguration.
 * say: tell the client so (RFSD), which ends its rendezvous; a relayed
 * hello is closed without a word, so the real rank behind the relay, to
 * which the relay passes what it gets, dials again. */
static int refuse_hello(struct loom_hs_acceptor *a, int i, const char *why, int say)
{
	char who[48];
	if (!a->cfg->strict) {
		if (say)
			loom_hs_refuse(a->p[i].fd, 0);  /* the client knows what it sent */
		refuse(a, i, why);
		return 0;
	}
	peer_name(&a->p[i], who, sizeof who);
	LOOM_ERR("bootstrap: %s: %s: %s", a->cfg->what, who, why);
	return LOOM_ERR_BOOTSTRAP;
}

/* The whole hello is in: check it; 1 when the callback took the peer. */
static int judge(struct loom_hs_acceptor *a, int i)
{
	const struct loom_hs_cfg *cfg = a->cfg;
	struct pending *p = &a->p[i];
	struct hs_hello h;
	struct loom_hs_peer peer;
	struct loom_hs_bind seen;
	uint8_t mac[LOOM_MAC_LEN];
	size_t body = sizeof h + cfg->plen;
	char why[200], theirs[64], mine[64];
	int rc;
	memcpy(&h, p->buf, sizeof h);
	if (h.magic != HS_MAGIC || h.kind != cfg->kind)
		return refuse_hello(a, i, "not a loom hello", 1);
	hello_mac(cfg->key, p->ch, p->buf, body, mac);
	if (!loom_mac_equal(mac, p->buf + body))
		return refuse_hello(a, i, "it does not hold this job's secret (LOOM_JOB_SECRET)", 1);
	/* the key is proven; the hello must also be for this connection and
	 * for this side, not one passed on by a relay */
	view(p->fd, 1, &seen);
	if (h.bind.cli_ip != seen.cli_ip || h.bind.cli_port != seen.cli_port || h.bind.srv_ip != seen.srv_ip ||
	    h.bind.srv_port != seen.srv_port) {
		bind_name(&h.bind, theirs, sizeof theirs);
		bind_name(&seen, mine, sizeof mine);
		snprintf(why, sizeof why, "the peer (rank %d) saw the connection as %s, this side as %s: a relay? "
			 "refused", h.rank, theirs, mine);
		return refuse_hello(a, i, why, 0);
	}
	if (h.to != cfg->self) {
		snprintf(why, sizeof why, "the peer (rank %d) meant to reach %d, this side is %d: a relay? refused",
			 h.rank, h.to, cfg->self);
		return refuse_hello(a, i, why, 0);
	}
	memset(&peer, 0, sizeof peer);
	peer.fd = p->fd;
	peer.rank = h.rank;
	peer.size = h.size;
	peer.srv_rank = cfg->self;
	peer.kind = cfg->kind;
	peer.bind = seen;
	peer.ip = seen.cli_ip;  /* the address the MAC covers */
	peer.local_pid = p->local_pid;
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
	if (rc == LOOM_HS_DECLINE) {
		close(p->fd);  /* a real peer whose connection another one replaces */
		a->p[i] = a->p[--a->n];
		return 0;
	}
	a->p[i] = a->p[--a->n];  /* the fd is the callback's now */
	return 1;
}

struct loom_hs_acceptor *loom_hs_acceptor_new(const struct loom_hs_cfg *cfg)
{
	struct loom_hs_acceptor *a;
	if (cfg->plen > LOOM_HS_MAX_PAYLOAD)
		return NULL;
	a = calloc(1, sizeof *a);
	if (a)
		a->cfg = cfg;
	return a;
}

void loom_hs_acceptor_free(struct loom_hs_acceptor *a)
{
	int i;
	if (!a)
		return;
	for (i = 0; i < a->n; i++)
		close(a->p[i].fd);
	if (a->refused > HS_LOGGED)
		LOOM_WARN("bootstrap: %s: %u connections refused in all", a->cfg->what, a->refused);
	free(a);
}

int loom_hs_acceptor_poll(struct loom_hs_acceptor *a, struct pollfd *pf, double *wake)
{
	size_t msg = sizeof(struct hs_hello) + a->cfg->plen + LOOM_MAC_LEN;
	int i;
	for (i = 0; i < a->n; i++) {
		pf[i].fd = a->p[i].fd;
		pf[i].events = POLLIN;
		pf[i].revents = 0;
		if (a->p[i].until < *wake)
			*wake = a->p[i].until;
		if (a->p[i].got == msg)
			*wake = 0;  /* read whole while making room: judged next */
	}
	return a->n;
}

int loom_hs_acceptor_step(struct loom_hs_acceptor *a, int lfd, int listen_ready,
			  const struct pollfd *pf, int np, int need)
{
	size_t msg = sizeof(struct hs_hello) + a->cfg->plen + LOOM_MAC_LEN;
	int got = 0, rc, i;
	double now;
	/* the pending ones first (indices move as they leave), newest last */
	for (i = np - 1; i >= 0 && got < need; i--) {
		struct pending *p = &a->p[i];
		size_t had = p->got;
		if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)) && !(p->got == msg && p->fd == pf[i].fd))
			continue;
		if (p->got < msg && drain(a, p) < 0) {
			refuse(a, i, had ? "closed in the middle of its hello" : "closed before its hello");
			continue;
		}
		if (p->got < msg)
			continue;
		rc = judge(a, i);
		if (rc < 0)
			return rc;
		got += rc;
	}
	now = loom_now();
	for (i = a->n - 1; i >= 0; i--)
		if (a->p[i].until < now)
			refuse(a, i, a->p[i].got ? "its hello is incomplete after 5 s"
				   : "it sent no hello within 5 s");
	if (listen_ready) {
		int k;
		for (k = 0; k < HS_ACCEPTS && (!a->cfg->strict || a->n < HS_PENDING); k++) {
			struct sockaddr_storage from;
			socklen_t fl = sizeof from;
			int s = accept4(lfd, (struct sockaddr *)&from, &fl, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (s < 0)
				break;
			admit(a, s, &from);
		}
	}
	return got;
}

/* accept until `need` peers were taken, or (enough != NULL) until it says so */
static int accept_loop(int lfd, const struct loom_hs_cfg *cfg, int need, int (*enough)(void *arg),
		       double deadline)
{
	struct loom_hs_acceptor *a = loom_hs_acceptor_new(cfg);
	struct pollfd pf[1 + HS_PENDING];
	int got = 0, rc = LOOM_SUCCESS, i;
	if (!a)
		return cfg->plen > LOOM_HS_MAX_PAYLOAD ? LOOM_ERR_INVALID : LOOM_ERR_NOMEM;
	/* accept until EAGAIN: the listening socket must not block */
	i = fcntl(lfd, F_GETFL);
	if (i >= 0)
		fcntl(lfd, F_SETFL, i | O_NONBLOCK);
	while (enough ? !enough(cfg->arg) : got < need) {
		double now = loom_now(), wake = now + 0.2;
		int np;
		if (now > deadline) {
			rc = LOOM_ERR_TIMEOUT;
			break;
		}
		np = loom_hs_acceptor_poll(a, pf + 1, &wake);
		/* trusted peers (strict) wait in the backlog, none evicted */
		pf[0].fd = cfg->strict && np == HS_PENDING ? -1 : lfd;
		pf[0].events = POLLIN;
		pf[0].revents = 0;
		if (poll(pf, (nfds_t)(1 + np), wake > now ? (int)((wake - now) * 1000) + 1 : 0) < 0 &&
		    errno != EINTR) {
			rc = LOOM_ERR_SYSTEM;
			break;
		}
		/* with `enough`, each taken peer may be the last one needed */
		rc = loom_hs_acceptor_step(a, lfd, pf[0].revents & POLLIN, pf + 1, np, enough ? 1 : need - got);
		if (rc < 0)
			break;
		got += rc;
		rc = LOOM_SUCCESS;
	}
	if (cfg->left_pending)
		*cfg->left_pending = a->n;
	loom_hs_acceptor_free(a);
	return rc;
}

void loom_hs_give_up(int lfd, int count, double deadline)
{
	struct hs_challenge c;
	memset(&c, 0, sizeof c);
	c.magic = HS_MAGIC;
	c.kind = HS_GAVE_UP;
	while (count > 0) {
		struct pollfd pf = { lfd, POLLIN, 0 };
		double left = deadline - loom_now();
		int s;
		if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) <= 0)
			return;
		while (count > 0 && (s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
			send(s, &c, sizeof c, MSG_DONTWAIT | MSG_NOSIGNAL);
			close(s);
			count--;
		}
	}
}

int loom_hs_accept(int lfd, const struct loom_hs_cfg *cfg, int need, double deadline)
{
	return accept_loop(lfd, cfg, need, NULL, deadline);
}

int loom_hs_accept_until(int lfd, const struct loom_hs_cfg *cfg, int (*enough)(void *arg), double deadline)
{
	return accept_loop(lfd, cfg, 0, enough, deadline);
}

int loom_hs_reply(const uint8_t *key, const struct loom_hs_peer *p, const void *reply, size_t rlen,
		  const uint8_t *digest, double deadline)
{
	uint8_t mac[LOOM_MAC_LEN], d[32], k[LOOM_MAC_LEN], *c = NULL;
	int rc = LOOM_SUCCESS;
	if (!digest) {
		loom_sha256(reply, rlen, d);
		digest = d;
	}
	reply_mac(key, p, digest, mac);
	if (rlen) {
		/* sealed per connection: a table sent to many costs one AES
		 * pass each (GB/s), the digest is shared */
		if (!(c = malloc(rlen + LOOM_AEAD_TAG)))
			return LOOM_ERR_NOMEM;
		reply_key(key, p, k);
		if (loom_aead_seal(k, mac, reply, rlen, c, c + rlen))
			rc = LOOM_ERR_SYSTEM;
		OPENSSL_cleanse(k, sizeof k);
	}
	if (!rc && (loom_fd_write_all(p->fd, mac, sizeof mac, deadline) ||
		    (rlen && loom_fd_write_all(p->fd, c, rlen + LOOM_AEAD_TAG, deadline))))
		rc = LOOM_ERR_BOOTSTRAP;
	free(c);
	return rc;
}

/* ---- client ---- */

/* AF_UNIX: is the process behind the name another user's? (named in p) */
static int foreign_listener(int s, struct loom_hs_peer *p)
{
	uid_t uid = 0;
	int pid = local_peer_pid(s, &uid);
	p->local_pid = pid;
	p->local_uid = (int)uid;
	return !pid || uid != geteuid();
}

int loom_hs_dial(const struct sockaddr *to, socklen_t tolen, uint32_t kind, double deadline,
		 struct loom_hs_peer *p)
{
	memset(p, 0, sizeof *p);
	p->fd = -1;
	if (to->sa_family == AF_INET)
		p->ip = ((const struct sockaddr_in *)to)->sin_addr.s_addr;
	for (;;) {
		struct hs_challenge c;
		int s = socket(to->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			return LOOM_ERR_SYSTEM;
		if (connect(s, to, tolen) == 0) {
			if (to->sa_family == AF_UNIX && foreign_listener(s, p)) {
				close(s);
				return LOOM_HS_NOT_OURS;
			}
			nodelay(s);
			/* the server may be busy for a while before it accepts */
			if (loom_fd_read_all(s, &c, sizeof c, deadline) == 0) {
				if (c.magic == HS_MAGIC && c.kind == HS_GAVE_UP) {
					close(s);
					return LOOM_HS_GAVE_UP;
				}
				if (c.magic != HS_MAGIC || c.kind != kind) {
					close(s);
					return LOOM_ERR_BOOTSTRAP;
				}
				p->fd = s;
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

int loom_hs_dial_tcp(uint32_t ip, uint16_t port, uint32_t kind, double deadline, struct loom_hs_peer *p)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = ip;
	a.sin_port = htons(port);
	return loom_hs_dial((const struct sockaddr *)&a, sizeof a, kind, deadline, p);
}

int loom_hs_hello(const uint8_t *key, struct loom_hs_peer *p, uint32_t kind, int rank, int size, int to,
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
	h.to = to;
	view(p->fd, 0, &h.bind);
	if (loom_random_bytes(h.ch, sizeof h.ch))
		return LOOM_ERR_SYSTEM;
	memcpy(p->cli_ch, h.ch, LOOM_HS_CH);
	p->rank = rank;
	p->size = size;
	p->srv_rank = to;
	p->kind = kind;
	p->bind = h.bind;
	memcpy(m, &h, sizeof h);
	if (plen)
		memcpy(m + sizeof h, payload, plen);
	hello_mac(key, p->srv_ch, m, sizeof h + plen, m + sizeof h + plen);
	return loom_fd_write_all(p->fd, m, sizeof h + plen + LOOM_MAC_LEN, deadline) ? LOOM_HS_CLOSED
										   : LOOM_SUCCESS;
}

int loom_hs_read_reply(const uint8_t *key, const struct loom_hs_peer *p, void *reply, size_t rlen,
		       double deadline)
{
	uint8_t mac[LOOM_MAC_LEN], want[LOOM_MAC_LEN], d[32], k[LOOM_MAC_LEN], tag[LOOM_AEAD_TAG];
	struct hs_refusal no;
	int bad;
	if (loom_fd_read_all(p->fd, mac, sizeof mac, deadline))
		return loom_now() < deadline ? LOOM_HS_CLOSED : LOOM_ERR_TIMEOUT;
	memset(&no, 0, sizeof no);
	no.magic = HS_MAGIC;
	no.kind = HS_REFUSED;
	if (!memcmp(mac, &no, sizeof no))
		return LOOM_HS_REFUSED;
	no.kind = HS_GAVE_UP;
	if (!memcmp(mac, &no, sizeof no))
		return LOOM_HS_GAVE_UP;
	if (rlen && (loom_fd_read_all(p->fd, reply, rlen, deadline) ||
		     loom_fd_read_all(p->fd, tag, sizeof tag, deadline)))
		return LOOM_ERR_BOOTSTRAP;
	if (rlen) {
		reply_key(key, p, k);
		bad = loom_aead_open(k, mac, reply, rlen, reply, tag);
		OPENSSL_cleanse(k, sizeof k);
		if (bad)
			return LOOM_HS_FORGED;
	}
	loom_sha256(reply, rlen, d);
	reply_mac(key, p, d, want);
	return loom_mac_equal(mac, want) ? LOOM_SUCCESS : LOOM_HS_FORGED;
}

/* ---- the non-blocking client, for the engine's poll loop ---- */

enum { D_CONNECT = 1, D_CHALLENGE, D_REPLY };

int loom_hs_dialer_start(struct loom_hs_dialer *d, uint32_t ip, uint16_t port, int to)
{
	struct sockaddr_in a;
	memset(d, 0, sizeof *d);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = ip;
	a.sin_port = htons(port);
	d->p.fd = -1;
	d->p.ip = ip;
	d->to = to;
	d->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (d->fd < 0)
		return LOOM_HS_DIAL_UNREACHABLE;
	if (connect(d->fd, (struct sockaddr *)&a, sizeof a) && errno != EINPROGRESS) {
		close(d->fd);
		d->fd = -1;
		return LOOM_HS_DIAL_UNREACHABLE;
	}
	nodelay(d->fd);
	d->phase = D_CONNECT;
	d->events = POLLOUT;
	return 0;
}

/* read into d->buf up to want bytes: 1 when all are in, 0 not yet, -1 closed */
static int dial_read(struct loom_hs_dialer *d, size_t want)
{
	ssize_t n = recv(d->fd, d->buf + d->got, want - d->got, MSG_DONTWAIT);
	if (n > 0)
		d->got += (size_t)n;
	else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		return -1;
	return d->got == want;
}

int loom_hs_dialer_step(struct loom_hs_dialer *d, const uint8_t *key, uint32_t kind, int rank,
			int size, const void *payload, size_t plen)
{
	if (d->phase == D_CONNECT) {
		int err = 0;
		socklen_t el = sizeof err;
		if (getsockopt(d->fd, SOL_SOCKET, SO_ERROR, &err, &el) || err)
			return LOOM_HS_DIAL_UNREACHABLE;
		d->phase = D_CHALLENGE;
		d->events = POLLIN;
		d->got = 0;
		return 0;
	}
	if (d->phase == D_CHALLENGE) {
		struct hs_challenge c;
		int r = dial_read(d, sizeof c);
		if (r <= 0)
			return r < 0 ? LOOM_HS_DIAL_UNREACHABLE : 0;
		memcpy(&c, d->buf, sizeof c);
		if (c.magic != HS_MAGIC || c.kind != kind)
			return LOOM_HS_DIAL_UNREACHABLE;
		d->p.fd = d->fd;
		memcpy(d->p.srv_ch, c.ch, LOOM_HS_CH);
		/* ~100 bytes into a fresh socket's empty buffer */
		if (loom_hs_hello(key, &d->p, kind, rank, size, d->to, payload, plen, loom_now() + HS_PER_CONN))
			return LOOM_HS_DIAL_UNREACHABLE;
		d->phase = D_REPLY;
		d->got = 0;
		return 0;
	}
	{
		uint8_t want[LOOM_MAC_LEN], dg[32];
		int r = dial_read(d, LOOM_MAC_LEN);
		if (r <= 0)
			return r < 0 ? LOOM_HS_DIAL_DECLINED : 0;
		loom_sha256(NULL, 0, dg);
		reply_mac(key, &d->p, dg, want);
		return loom_mac_equal(d->buf, want) ? 1 : LOOM_HS_DIAL_FORGED;
	}
}
