/* unit test: the MPI backend's error mapping (MPI error classes onto loom
 * statuses), then, in a singleton MPI process, the statuses that real MPI
 * errors and deadlines come back as, and that loom leaves the program's
 * MPI alone (no MPI_Finalize on a program that initialized MPI). */
#include "config.h"
#include "backend/backend.h"
#include "../../../t/tap.h"

#include <stdint.h>
#include <stdlib.h>

int main(void)
{
	loom_comm_t *w = NULL, *a = NULL, *d = NULL;
	int32_t x[2] = { 1, 2 }, y[2] = { 0, 0 }, fin = 1, provided;
	loom_request_t *q;
	double t0;

	plan(NO_PLAN);
	is_int(loom_mpi_class_status(MPI_SUCCESS), LOOM_SUCCESS, "success");
	is_int(loom_mpi_class_status(MPI_ERR_RANK), LOOM_ERR_INVALID, "bad rank: invalid");
	is_int(loom_mpi_class_status(MPI_ERR_COUNT), LOOM_ERR_INVALID, "bad count: invalid");
	is_int(loom_mpi_class_status(MPI_ERR_ROOT), LOOM_ERR_INVALID, "bad root: invalid");
	is_int(loom_mpi_class_status(MPI_ERR_TRUNCATE), LOOM_ERR_MISMATCH, "truncation: mismatch");
	is_int(loom_mpi_class_status(MPI_ERR_NO_MEM), LOOM_ERR_NOMEM, "no memory");
	is_int(loom_mpi_class_status(MPI_ERR_UNSUPPORTED_OPERATION), LOOM_ERR_UNSUPPORTED,
	       "unsupported operation");
	is_int(loom_mpi_class_status(MPI_ERR_IO), LOOM_ERR_IO, "I/O");
	is_int(loom_mpi_class_status(MPI_ERR_INTERN), LOOM_ERR_SYSTEM, "internal: system");
	is_int(loom_mpi_class_status(MPI_ERR_OTHER), LOOM_ERR_SYSTEM, "other: system");
	is_int(loom_mpi_class_status(MPI_ERR_LASTCODE + 1), LOOM_ERR_SYSTEM, "unknown: system");

	setenv("OMPI_MCA_btl", "self", 0);
	if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
		diag("MPI_Init failed: the singleton part is not run");
		done_testing();
		return exit_status();
	}
	is_int(loom_comm_from_mpi(MPI_COMM_NULL, &a), LOOM_ERR_INVALID, "MPI_COMM_NULL refused");
	is_int(loom_init_backend(LOOM_BACKEND_MPI, &w), LOOM_SUCCESS, "mpi world on the program's MPI");
	if (!w)
		return exit_status();
	is_str(loom_comm_backend(w), "mpi", "the world runs on mpi");
	is_int(loom_comm_size(w), 1, "singleton: size 1");
	is_int(loom_comm_set_stream(w, NULL), LOOM_ERR_UNSUPPORTED, "streams: nccl only");
	is_int(loom_allreduce(x, y, 2, LOOM_INT32, LOOM_SUM, w), 0, "allreduce of one rank");
	ok(y[0] == 1 && y[1] == 2, "gives the input");
	is_int(loom_send(x, 2, LOOM_INT32, 5, w), LOOM_ERR_INVALID, "send to rank 5 of 1: invalid");
	is_int(loom_isend(x, 2, LOOM_INT32, 0, w, &q), 0, "isend 2 ints to self");
	is_int(loom_recv(y, 1, LOOM_INT32, 0, w), LOOM_ERR_MISMATCH,
	       "recv of 1 int gets 2: mismatch (MPI_ERR_TRUNCATE)");
	is_int(loom_wait(q), 0, "the send completes");
	is_int(loom_comm_dup(w, &d), 0, "dup");
	is_int(loom_comm_set_timeout(d, 0.5), 0, "timeout 0.5 s");
	t0 = MPI_Wtime();
	is_int(loom_recv(y, 1, LOOM_INT32, 0, d), LOOM_ERR_TIMEOUT, "recv nobody sends: timeout");
	ok(MPI_Wtime() - t0 < 20, "within a generous bound (%.2f s)", MPI_Wtime() - t0);
	is_int(loom_allreduce(x, y, 2, LOOM_INT32, LOOM_MAX, d), 0,
	       "a timed-out recv (cancelled) leaves the comm usable");
	is_int(loom_comm_abort(d), 0, "abort");
	is_int(loom_barrier(d), LOOM_ERR_ABORTED, "aborted comm fails later ops");
	is_int(loom_comm_free(w), LOOM_ERR_INVALID, "world freed by finalize only");
	is_int(loom_comm_free(d), 0, "free dup");
	is_int(loom_comm_from_mpi(MPI_COMM_SELF, &a), 0, "adopt MPI_COMM_SELF");
	is_int(loom_finalize(a), 0, "finalize the adopted world");
	is_int(loom_finalize(w), 0, "finalize the mpi world");
	MPI_Finalized(&fin);
	is_int(fin, 0, "MPI is still the program's: not finalized by loom");
	MPI_Finalize();
	done_testing();
	return exit_status();
}
