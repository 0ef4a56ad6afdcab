/* t/runtime/flight-hang.c: hangs for the flight recorder's cluster tests
 * (t/t2100-flight.t, t/t6002-flight-mpi.t). DIR is a directory every rank
 * sees; a rank leaves DIR/TAG.RANK to say what it is about to do, so the
 * test waits for an event, never a time.
 *   flight-hang hang WHO DIR      six allreduces on the world; rank WHO
 *                                 then leaves asleep.WHO and waits for ever
 *                                 (until killed); the others call a 7th
 *   flight-hang mismatch WHO DIR  six allreduces; then rank WHO calls a
 *                                 broadcast where the others call a 7th
 *                                 allreduce; everyone leaves called.RANK
 *   flight-hang tp WHO DIR        three world barriers, a mesh with tp=2,
 *                                 six allreduces on tp; WHO leaves
 *                                 asleep.WHO and waits; its tp partner calls
 *                                 a 7th; the other groups call theirs and wait */
#include <loom.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void marker(const char *dir, const char *tag, int rank)
{
	char p[1024];
	int fd;
	snprintf(p, sizeof p, "%s/%s.%d", dir, tag, rank);
	if ((fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644)) >= 0)
		close(fd);
}

static void forever(void)
{
	fflush(stdout);
	for (;;)
		pause();
}

static void six(loom_comm_t *c)
{
	int32_t x = 1, y;
	int i, rc;
	for (i = 0; i < 6; i++)
		if ((rc = loom_allreduce(&x, &y, 1, LOOM_INT32, LOOM_SUM, c))) {
			printf("FAIL allreduce %d: %s\n", i + 1, loom_strerror(rc));
			exit(1);
		}
}

int main(int argc, char **argv)
{
	loom_comm_t *w;
	loom_mesh_t m;
	int32_t x = 1, y = 0;
	int rc, r, who;
	const char *dir;
	if (argc != 4) {
		fprintf(stderr, "usage: flight-hang hang|mismatch|tp WHO DIR\n");
		return 2;
	}
	who = atoi(argv[2]);
	dir = argv[3];
	if ((rc = loom_init(&w))) {
		printf("FAIL loom_init: %s\n", loom_strerror(rc));
		return 1;
	}
	r = loom_comm_rank(w);
	if (!strcmp(argv[1], "hang")) {
		six(w);
		if (r == who) {
			marker(dir, "asleep", r);
			forever();
		}
		rc = loom_allreduce(&x, &y, 1, LOOM_INT32, LOOM_SUM, w);
		printf("rank %d: 7th allreduce: %s\n", r, loom_strerror(rc));
		forever();
	} else if (!strcmp(argv[1], "mismatch")) {
		six(w);
		marker(dir, "called", r);
		if (r == who)
			rc = loom_broadcast(&x, &y, 1, LOOM_INT32, 0, w);
		else
			rc = loom_allreduce(&x, &y, 1, LOOM_INT32, LOOM_SUM, w);
		printf("rank %d: 7th call: %s\n", r, loom_strerror(rc));
		forever();
	} else if (!strcmp(argv[1], "tp")) {
		int i;
		for (i = 0; i < 3; i++)
			loom_barrier(w);
		if ((rc = loom_mesh(w, loom_comm_size(w) / 2, 2, 1, &m))) {
			printf("FAIL loom_mesh: %s\n", loom_strerror(rc));
			return 1;
		}
		six(m.tp);
		if (r == who) {
			marker(dir, "asleep", r);
			forever();
		}
		rc = loom_allreduce(&x, &y, 1, LOOM_INT32, LOOM_SUM, m.tp);
		printf("rank %d: 7th tp allreduce: %s\n", r, loom_strerror(rc));
		forever();
	}
	fprintf(stderr, "unknown mode %s\n", argv[1]);
	return 2;
}
