/* spank/test/rendezvous.c: a torchrun-style program. It reads only RANK,
 * WORLD_SIZE, MASTER_ADDR and MASTER_PORT: rank 0 listens on
 * MASTER_ADDR:MASTER_PORT, every other rank connects and sends its rank,
 * rank 0 answers with the world size and the sum of all ranks, and each
 * rank prints "rank R of N: rendezvous ok sum=S". */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int need(const char *n, char **v)
{
	*v = getenv(n);
	if (!*v || !**v) {
		fprintf(stderr, "rendezvous: %s is not set\n", n);
		return -1;
	}
	return 0;
}

int main(void)
{
	char *r, *w, *addr, *port;
	if (need("RANK", &r) || need("WORLD_SIZE", &w) || need("MASTER_ADDR", &addr) ||
	    need("MASTER_PORT", &port))
		return 2;
	int rank = atoi(r), world = atoi(w);
	struct addrinfo hints = { 0 }, *ai;
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = rank == 0 ? AI_PASSIVE : 0;
	if (getaddrinfo(addr, port, &hints, &ai) != 0) {
		fprintf(stderr, "rendezvous: cannot resolve %s\n", addr);
		return 2;
	}
	long sum = rank;
	if (rank == 0) {
		int one = 1, s = socket(AF_INET, SOCK_STREAM, 0), peers[1024], np = 0;
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(s, ai->ai_addr, ai->ai_addrlen) < 0 || listen(s, 128) < 0) {
			perror("rendezvous: bind/listen");
			return 2;
		}
		while (np < world - 1 && np < 1024) {
			int c = accept(s, NULL, NULL), peer;
			if (c < 0 || read(c, &peer, sizeof peer) != sizeof peer)
				return 3;
			sum += peer;
			peers[np++] = c;
		}
		long msg[2] = { world, sum };
		for (int i = 0; i < np; i++) {
			if (write(peers[i], msg, sizeof msg) != sizeof msg)
				return 3;
			close(peers[i]);
		}
		close(s);
	} else {
		int s = -1;
		for (int tries = 0; tries < 200; tries++) {     /* rank 0 may not listen yet */
			s = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(s, ai->ai_addr, ai->ai_addrlen) == 0)
				break;
			close(s);
			s = -1;
			usleep(50000);
		}
		long msg[2];
		if (s < 0 || write(s, &rank, sizeof rank) != sizeof rank ||
		    read(s, msg, sizeof msg) != sizeof msg || msg[0] != world) {
			fprintf(stderr, "rendezvous: rank %d could not reach %s:%s\n", rank, addr, port);
			return 3;
		}
		sum = msg[1];
		close(s);
	}
	freeaddrinfo(ai);
	printf("rank %d of %d: rendezvous ok sum=%ld\n", rank, world, sum);
	return 0;
}
