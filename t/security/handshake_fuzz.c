/* t/security/handshake_fuzz.c: the authenticated hello
 * (runtime/transport/transport_handshake.c) against hostile bytes, in
 * bounded runs: an acceptor that waits for one real peer gets, before
 * it, hundreds of connections that close at once, send random bytes,
 * truncated hellos, hellos with a random MAC, hellos under another key,
 * and hellos under the right key for another world; some stay open,
 * idle. Only the real peer is taken. Then a client against a server that
 * answers with random challenges and forged replies: every such server
 * is found out. t/t7003 runs this under valgrind too. */
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
	struct loom_hs_cfg cfg = { key, LOOM_HS_MESH, 8, "fuzz port", on_peer, NULL, 0, NULL };
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
		loom_hs_hello(other_key, &p, LOOM_HS_MESH, 1, 2, &nonce, sizeof nonce, loom_now() + 5);
		break;
	case 5: /* the right key, but a rank that does not connect here */
		loom_hs_hello(key, &p, LOOM_HS_MESH, -1, 2, &nonce, sizeof nonce, loom_now() + 5);
		break;
	case 6: /* the right key, another world */
		nonce = world_nonce ^ 1;
		loom_hs_hello(key, &p, LOOM_HS_MESH, 1, 2, &nonce, sizeof nonce, loom_now() + 5);
		break;
	}
	close(p.fd);
	return -1;
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
		rc = loom_hs_hello(key, &p, LOOM_HS_MESH, 1, 2, &nonce, sizeof nonce, loom_now() + 2);
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
		i = loom_hs_hello(key, &p, LOOM_HS_MESH, 1, 2, &nonce, sizeof nonce, loom_now() + 30);
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
	done_testing();
	return exit_status();
}
