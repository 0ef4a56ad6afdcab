/* t/backend/mpi_adopt.c: an MPI program that adopts loom on a
 * communicator of its own (loom_comm_from_mpi) and keeps MPI to itself:
 * results agree with MPI's own, loom's traffic does not disturb the
 * program's messages in flight, and loom_finalize leaves MPI initialized.
 * Prints "mpi_adopt: rank R: ok" or the failures; exit 0 iff all held. */
#include <mpi.h>
#include <loom.h>

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int provided, wr, ws, half, fin = 1, bad = 0, i, rc, pending_from;
	MPI_Comm sub;
	MPI_Request rq;
	loom_comm_t *lc;
	double x[64], y[64], z[64], msg = -1;

	if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
		return 2;
	MPI_Comm_rank(MPI_COMM_WORLD, &wr);
	MPI_Comm_size(MPI_COMM_WORLD, &ws);
	/* the program's own message in flight while loom works */
	pending_from = (wr + ws - 1) % ws;
	MPI_Irecv(&msg, 1, MPI_DOUBLE, pending_from, 7, MPI_COMM_WORLD, &rq);
	half = wr < (ws + 1) / 2;
	MPI_Comm_split(MPI_COMM_WORLD, half, -wr, &sub);
	rc = loom_comm_from_mpi(sub, &lc);
	if (rc) {
		fprintf(stderr, "mpi_adopt: rank %d: loom_comm_from_mpi: %s\n", wr, loom_strerror(rc));
		return 1;
	}
	{
		int mr;
		MPI_Comm_rank(sub, &mr);
		if (loom_comm_rank(lc) != mr || loom_comm_size(lc) != (half ? (ws + 1) / 2 : ws / 2)) {
			fprintf(stderr, "mpi_adopt: rank %d: rank/size differ from MPI's\n", wr);
			bad++;
		}
	}
	for (i = 0; i < 64; i++)
		x[i] = wr * 64 + i;
	rc = loom_allreduce(x, y, 64, LOOM_FLOAT64, LOOM_SUM, lc);
	MPI_Allreduce(x, z, 64, MPI_DOUBLE, MPI_SUM, sub);
	for (i = 0; i < 64; i++)
		bad += rc || y[i] != z[i];
	if (rc || bad)
		fprintf(stderr, "mpi_adopt: rank %d: loom_allreduce %s, %d elements differ from MPI_Allreduce\n",
			wr, loom_strerror(rc), bad);
	if (!loom_comm_backend(lc) || loom_comm_backend(lc)[0] != 'm') {
		fprintf(stderr, "mpi_adopt: rank %d: backend %s\n", wr, loom_comm_backend(lc));
		bad++;
	}
	rc = loom_finalize(lc);
	bad += rc != 0;
	MPI_Finalized(&fin);
	if (fin) {
		fprintf(stderr, "mpi_adopt: rank %d: loom_finalize finalized MPI\n", wr);
		bad++;
	}
	{
		double v = wr + 0.5;
		MPI_Send(&v, 1, MPI_DOUBLE, (wr + 1) % ws, 7, MPI_COMM_WORLD);
		MPI_Wait(&rq, MPI_STATUS_IGNORE);
		if (msg != pending_from + 0.5) {
			fprintf(stderr, "mpi_adopt: rank %d: own message %g, want %g\n", wr, msg,
				pending_from + 0.5);
			bad++;
		}
	}
	MPI_Comm_free(&sub);
	if (!bad)
		fprintf(stderr, "mpi_adopt: rank %d: ok\n", wr);
	MPI_Finalize();
	return bad ? 1 : 0;
}
