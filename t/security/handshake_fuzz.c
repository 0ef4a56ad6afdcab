/* t/security/handshake_fuzz.c: the authenticated hello
 * (runtime/transport/transport_handshake.c) against hostile bytes, in
 * bounded runs: an acceptor that waits for one real peer gets, before
 * it, hundreds of connections that close at once, send random bytes,
 * truncated hellos, hellos with a random MAC, hellos under another key,
 * and hellos under the right key for another world; some stay open,
 * idle. Only the real peer is taken. Then a client against a server that
 * answers with random challenges and forged replies: every such server
 * is found out. A hello with the key but passed on by a relay (bound to
 * another connection) or meant for another rank is refused as a relay,
 * and an encrypted reply reads back only under its own connection's
 * challenges and roles. t/t7003 runs this under valgrind too. */
#include "boot/boot.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t/tap.h"

#define ROUNDS 240
#define IDLE_MAX 40

static uint8_t key[LOOM_KEY_LEN], other_key[LOOM_KEY_LEN];
static const uint64_t world_nonce = 0x1122334455667788ull;
static int taken, taken_rank = -1;
static int lfd;
static uint16_t lport;

static int on_peer(void *arg, const struct loom_hs_peer *p)
{
	uint64_t n;
	memcpy(&n, p->payload, sizeof n);
	if (n != world_nonce || p->rank != 1)
		return 0;
	if (loom_hs_reply(key, p, NULL, 0, NULL, loom_now() + 5))
		return 0;
	taken++;
	taken_rank = p->rank;
	close(p->fd);
	return 1;
}

static int server_rc = 99;

static void *server(void *arg)
{
	struct loom_hs_cfg cfg = { key, LOOM_HS_MESH, 8, "fuzz port", on_peer, NULL, 0, NULL, 0 };
	server_rc = loom_hs_accept(lfd, &cfg, 1, loom_now() + 120);
	return NULL;
}

static unsigned rnd(void)
{
	return (unsigned)random();
}

static void fill(void *b, size_t n)
{
	unsigned char *p = b;
	while (n--)
		*p++ = (unsigned char)rnd();
}

static int dial_raw(void)
{
	struct sockaddr_in a;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(lport);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a)) {
		if (s >= 0)
			close(s);
		return -1;
	}
	return s;
}

/* one hostile connection; returns its fd when it is to stay open */
static int attack(int i)
{
	struct loom_hs_peer p;
	uint64_t nonce = world_nonce;
	uint8_t junk[400];
	int s, mode = i % 7;
	if (mode <= 1) {
		s = dial_raw();
		if (s < 0)
			return -1;
		if (mode == 1) {
			size_t n = rnd() % sizeof junk;
			fill(junk, n);
			if (send(s, junk, n, MSG_NOSIGNAL) < 0)
				diag("send: short");
		}
		if (i % 3 == 0)
			return s;  /* stays, idle or half-sent */
		close(s);
		return -1;
	}
	if (loom_hs_dial_tcp(htonl(INADDR_LOOPBACK), lport, LOOM_HS_MESH, loom_now() + 10, &p))
		return -1;
	switch (mode) {
	case 2: { /* a truncated hello: magic, kind and part of the rest */
		size_t n = 8 + rnd() % 60;
		uint32_t h[2] = { 0x4c4d4832u, LOOM_HS_MESH };
		fill(junk, n);
		memcpy(junk, h, 8);
		if (send(p.fd, junk, n, MSG_NOSIGNAL) < 0)
			diag("send: short");
		if (i % 2)
			return p.fd;
		break;
	}
	case 3: /* the right frame under another key */
	case 4:
		loom_hs_hello(other_key, &p, LOOM_HS_MESH, 1, 2, 0, &nonce, sizeof nonce, loom_now() + 5);
		break;
	case 5: /* the right key, but a rank that does not connect here */
		loom_hs_hello(key, &p, LOOM_HS_MESH, -1, 2, 0, &nonce, sizeof nonce, loom_now() + 5);
		break;
	case 6: /* the right key, another world */
		nonce = world_nonce ^ 1;
		loom_hs_hello(key, &p, LOOM_HS_MESH, 1, 2, 0, &nonce, sizeof nonce, loom_now() + 5);
		break;
	}
	close(p.fd);
	return -1;
}

/* A relay without the key: it holds connection A to the server and
 * passes on a real client's hello, made for A's challenge but on the
 * client's own connection (here B, to a sink): the MAC is right, the
 * views of the connection differ. Then a hello meant for rank 3. Each
 * is closed by the server (so its refusal is logged before we go on). */
static int relay_round(int wrong_target)
{
	struct loom_hs_peer a, b;
	uint64_t nonce = world_nonce;
	uint8_t buf[512], x;
	struct sockaddr_in sa;
	int ls, sink = -1, n = 0, closed;
	uint16_t port;
	if (loom_hs_dial_tcp(htonl(INADDR_LOOPBACK), lport, LOOM_HS_MESH, loom_now() + 10, &a))
		return -1;
	if (wrong_target) {
		loom_hs_hello(key, &a, LOOM_HS_MESH, 1, 2, 3, &nonce, sizeof nonce, loom_now() + 5);
	} else {
		if (loom_boot_listen(htonl(INADDR_LOOPBACK), 0, &ls, &port))
			return -1;
		memset(&b, 0, sizeof b);
		b.fd = socket(AF_INET, SOCK_STREAM, 0);
		memset(&sa, 0, sizeof sa);
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa.sin_port = htons(port);
		if (b.fd < 0 || connect(b.fd, (struct sockaddr *)&sa, sizeof sa) || (sink = accept(ls, NULL, NULL)) < 0)
			return -1;
		memcpy(b.srv_ch, a.srv_ch, LOOM_HS_CH);
		loom_hs_hello(key, &b, LOOM_HS_MESH, 1, 2, 0, &nonce, sizeof nonce, loom_now() + 5);
		n = (int)recv(sink, buf, sizeof buf, 0);
		if (n <= 0 || send(a.fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
			return -1;
		close(sink);
		close(b.fd);
		close(ls);
	}
	closed = recv(a.fd, &x, 1, 0) == 0;
	close(a.fd);
	return closed ? 0 : -1;
}

/* replies with a body: sealed, and open only for the connection and
 * roles they were made for */
static void sealed_replies(void)
{
	struct loom_hs_peer srv, cli;
	char table[1000], got[1000], wire[LOOM_MAC_LEN + sizeof table + LOOM_AEAD_TAG + 8];
	int sv[2], sv2[2], n, rc, plain = 0;
	size_t i;
	memset(&srv, 0, sizeof srv);
	srv.kind = LOOM_HS_RENDEZVOUS;
	srv.rank = 1;
	srv.srv_rank = 0;
	fill(srv.srv_ch, LOOM_HS_CH);
	fill(srv.cli_ch, LOOM_HS_CH);
	cli = srv;
	memset(table, 'T', sizeof table);
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv2);
	srv.fd = sv[1];
	ok(loom_hs_reply(key, &srv, table, sizeof table, NULL, loom_now() + 5) == 0, "a reply of %zu bytes sent",
	   sizeof table);
	n = (int)recv(sv[0], wire, sizeof wire, MSG_WAITALL | MSG_DONTWAIT);
	is_int(n, (int)(LOOM_MAC_LEN + sizeof table + LOOM_AEAD_TAG), "MAC, body and GCM tag on the wire");
	for (i = LOOM_MAC_LEN; i + 8 <= LOOM_MAC_LEN + sizeof table; i++)
		plain += !memcmp(wire + i, "TTTTTTTT", 8);
	is_int(plain, 0, "the body is not in clear");
	/* as sent: it opens */
	send(sv2[1], wire, (size_t)n, 0);
	cli.fd = sv2[0];
	rc = loom_hs_read_reply(key, &cli, got, sizeof got, loom_now() + 5);
	ok(rc == 0 && !memcmp(got, table, sizeof table), "the client opens it");
	/* one bit flipped in the body */
	wire[LOOM_MAC_LEN + 10] ^= 1;
	send(sv2[1], wire, (size_t)n, 0);
	is_int(loom_hs_read_reply(key, &cli, got, sizeof got, loom_now() + 5), LOOM_HS_FORGED,
	       "a flipped bit: forged");
	wire[LOOM_MAC_LEN + 10] ^= 1;
	/* made for rank 0, read by a client that meant to reach rank 2 */
	cli.srv_rank = 2;
	send(sv2[1], wire, (size_t)n, 0);
	is_int(loom_hs_read_reply(key, &cli, got, sizeof got, loom_now() + 5), LOOM_HS_FORGED,
	       "a reply from another rank than the one dialed: forged");
	cli.srv_rank = 0;
	/* made for another connection's view */
	cli.bind.cli_port = 1;
	send(sv2[1], wire, (size_t)n, 0);
	is_int(loom_hs_read_reply(key, &cli, got, sizeof got, loom_now() + 5), LOOM_HS_FORGED,
	       "a reply bound to another view of the connection: forged");
	close(sv[0]);
	close(sv[1]);
	close(sv2[0]);
	close(sv2[1]);
}

/* a server that is not the job: challenge, then a forged reply */
static int fake_server_round(int i, int *found_out)
{
	int ls, s, rc;
	uint16_t port;
	struct loom_hs_peer p;
	uint64_t nonce = world_nonce;
	pid_t pid;
	if (loom_boot_listen(htonl(INADDR_LOOPBACK), 0, &ls, &port))
		return -1;
	pid = fork();
	if (pid == 0) {
		uint8_t b[256];
		uint32_t h[2] = { 0x4c4d4832u, LOOM_HS_MESH };
		s = accept(ls, NULL, NULL);
		fill(b, sizeof b);
		if (i % 2)
			memcpy(b, h, 8);  /* a well-formed challenge, then random */
		if (send(s, b, i % 3 ? sizeof b : 24 + (size_t)(i % 17), MSG_NOSIGNAL) < 0)
			_exit(1);
		usleep(50000);
		_exit(0);
	}
	close(ls);
	rc = loom_hs_dial_tcp(htonl(INADDR_LOOPBACK), port, LOOM_HS_MESH, loom_now() + 2, &p);
	if (rc == 0) {
		rc = loom_hs_hello(key, &p, LOOM_HS_MESH, 1, 2, 0, &nonce, sizeof nonce, loom_now() + 2);
		if (rc == 0)
			rc = loom_hs_read_reply(key, &p, NULL, 0, loom_now() + 2);
		close(p.fd);
	}
	*found_out = rc != 0;
	waitpid(pid, NULL, 0);
	return 0;
}

int main(void)
{
	pthread_t th;
	int idle[IDLE_MAX], nidle = 0, i, fooled = 0, have;
	struct loom_hs_peer p;
	uint64_t nonce = world_nonce;
	plan(NO_PLAN);
	srandom(12345);
	setenv("LOOM_JOB_SECRET", "00112233445566778899aabbccddeeff", 1);
	ok(loom_job_key(key, &have) == 0 && have, "the job key from LOOM_JOB_SECRET");
	setenv("LOOM_JOB_SECRET", "ffeeddccbbaa99887766554433221100", 1);
	ok(loom_job_key(other_key, &have) == 0 && memcmp(key, other_key, sizeof key),
	   "another secret gives another key");
	ok(loom_boot_listen(htonl(INADDR_LOOPBACK), 0, &lfd, &lport) == 0, "listening");
	pthread_create(&th, NULL, server, NULL);
	/* first, while the acceptor still logs each refusal */
	ok(relay_round(0) == 0 && taken == 0, "a relayed hello (right key, another connection): refused");
	ok(relay_round(1) == 0 && taken == 0, "a hello meant for rank 3 at rank 0: refused");
	for (i = 0; i < ROUNDS; i++) {
		int s = attack(i);
		if (s >= 0) {
			if (nidle == IDLE_MAX) {
				close(idle[0]);
				memmove(idle, idle + 1, sizeof idle[0] * (IDLE_MAX - 1));
				nidle--;
			}
			idle[nidle++] = s;
		}
	}
	ok(taken == 0, "%d hostile connections (%d still open): none taken", ROUNDS, nidle);
	/* the real peer, while the idle ones are still open */
	i = loom_hs_dial_tcp(htonl(INADDR_LOOPBACK), lport, LOOM_HS_MESH, loom_now() + 30, &p);
	if (!i)
		i = loom_hs_hello(key, &p, LOOM_HS_MESH, 1, 2, 0, &nonce, sizeof nonce, loom_now() + 30);
	if (!i)
		i = loom_hs_read_reply(key, &p, NULL, 0, loom_now() + 30);
	is_int(i, 0, "the real peer's handshake succeeds both ways");
	if (p.fd >= 0)
		close(p.fd);
	pthread_join(th, NULL);
	is_int(server_rc, 0, "the acceptor returns success");
	ok(taken == 1 && taken_rank == 1, "exactly one peer taken, rank 1");
	while (nidle)
		close(idle[--nidle]);
	close(lfd);
	for (i = 0; i < 24; i++) {
		int out = 0;
		if (fake_server_round(i, &out) == 0 && !out)
			fooled++;
	}
	is_int(fooled, 0, "24 servers without the key, random and forged answers: the client is never fooled");
	sealed_replies();
	done_testing();
	return exit_status();
}
