/* t/gpu/nccl_timeout --case held-stream|unmatched-send: an NCCL operation
 * that cannot complete before the communicator's deadline returns
 * LOOM_ERR_TIMEOUT, the backend aborts the NCCL communicator
 * (ncclCommAbort) without waiting for the work, every later operation on
 * it fails at once, and loom_finalize returns.
 *
 * A world of one has no peer that could fail to arrive, so the operation
 * is kept from completing another way:
 *   held-stream     the allreduce is enqueued on a user stream held by a
 *                   host function (gpucheck.h) past the deadline: the
 *                   operation really is incomplete when the deadline
 *                   passes, as with a peer that never joins; the held
 *                   stream is released only after the call returned, so a
 *                   TIMEOUT that came only after the release would show
 *   unmatched-send  a device-buffer send to itself with no receive: NCCL
 *                   may refuse it at once instead of waiting; that is
 *                   reported NOT RUN (exit 77) with what NCCL said, never
 *                   as a pass
 * The deadline is 2 s (loom_comm_set_timeout), the hold's bound 15 s. */
#include <loom.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucheck.h"

#define N ((size_t)1 << 20)
#define DEADLINE 2.0
#define HOLD_LIMIT 15.0

static loom_comm_t *world;

/* after the timeout: fails at once, and finalize returns */
static void after_abort(float *d)
{
	int rc = loom_allreduce(d, d, N, LOOM_FLOAT32, LOOM_SUM, world);
	gpucheck(rc != LOOM_SUCCESS, "the next allreduce on the aborted communicator fails: %s",
		 loom_strerror(rc));
	rc = loom_barrier(world);
	gpucheck(rc != LOOM_SUCCESS, "a barrier on it fails too: %s", loom_strerror(rc));
}

static void case_held_stream(float *d, float *d2)
{
	cudaStream_t s;
	struct gate g;
	cudaError_t e;
	int rc;
	gpucheck_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
	rc = loom_comm_set_stream(world, s);
	gpucheck(rc == LOOM_SUCCESS, "loom_comm_set_stream: %s", loom_strerror(rc));
	gate_hold(&g, s, HOLD_LIMIT);
	/* out of place: NCCL has a copy to enqueue even for one rank */
	rc = loom_allreduce(d, d2, N, LOOM_FLOAT32, LOOM_SUM, world);
	gpucheck(rc == LOOM_ERR_TIMEOUT, "an allreduce held on its stream past the %.0f s deadline: "
		 "LOOM_ERR_TIMEOUT (got %s)", DEADLINE, loom_strerror(rc));
	gpucheck(!atomic_load(&g.expired), "it returned while the stream was still held (else the abort "
		 "waited for the held work, or for CUDA's callback thread the hold occupies)");
	gate_open(&g);
	after_abort(d);
	/* what became of the work queued behind the hold: reported, not judged */
	e = cudaStreamSynchronize(s);
	gpucheck_note("the user stream after the release: %s", cudaGetErrorString(e));
	cudaGetLastError();
	cudaStreamDestroy(s);
}

static void case_unmatched_send(float *d)
{
	int rc = loom_send(d, N, LOOM_FLOAT32, loom_comm_rank(world), world);
	if (rc != LOOM_ERR_TIMEOUT) {
		loom_finalize(world);
		gpucheck_not_run("NCCL did not wait on a send to itself with no receive: loom_send returned "
				 "%s, so a world of one cannot time out this way", loom_strerror(rc));
	}
	gpucheck(1, "a send to itself with no receive: LOOM_ERR_TIMEOUT after the %.0f s deadline",
		 DEADLINE);
	after_abort(d);
}

int main(int argc, char **argv)
{
	const char *cse = argc == 3 && !strcmp(argv[1], "--case") ? argv[2] : NULL;
	float *d, *d2;
	int rc;
	if (!cse || (strcmp(cse, "held-stream") && strcmp(cse, "unmatched-send"))) {
		fprintf(stderr, "usage: nccl_timeout --case held-stream|unmatched-send\n");
		return 2;
	}
	gpucheck_start(!strcmp(cse, "held-stream") ? "nccl_timeout held-stream" : "nccl_timeout unmatched-send");
	rc = loom_init_backend(LOOM_BACKEND_NCCL, &world);
	if (!gpucheck(rc == LOOM_SUCCESS, "loom_init_backend(NCCL): %s", loom_strerror(rc)))
		return gpucheck_done();
	gpucheck_cuda(cudaMalloc((void **)&d, N * sizeof(float)), "cudaMalloc");
	gpucheck_cuda(cudaMalloc((void **)&d2, N * sizeof(float)), "cudaMalloc");
	gpucheck_cuda(cudaMemset(d, 0, N * sizeof(float)), "cudaMemset");
	gpucheck_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	rc = loom_comm_set_timeout(world, DEADLINE);
	gpucheck(rc == LOOM_SUCCESS, "loom_comm_set_timeout(%.0f s): %s", DEADLINE, loom_strerror(rc));
	if (!strcmp(cse, "held-stream"))
		case_held_stream(d, d2);
	else
		case_unmatched_send(d);
	rc = loom_finalize(world);
	gpucheck_note("loom_finalize after the abort returned: %s", loom_strerror(rc));
	gpucheck(1, "loom_finalize returned after the abort");
	cudaFree(d);
	cudaFree(d2);
	return gpucheck_done();
}
