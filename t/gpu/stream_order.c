/* t/gpu/stream_order: loom_comm_set_stream orders the NCCL backend's work
 * on a user stream, shown without a kernel and without timing. On a user
 * stream S: a host function that holds S (gpucheck.h), a producer
 * cudaMemcpyAsync of the input to the device, loom_iallreduce, and a
 * consumer cudaMemcpyAsync of the result to the host. While S is held
 * the request must not complete and recv must still hold its old bytes
 * (read through another stream); once S is released the consumer must
 * see the reduction of the producer's data: work that ran on the
 * library's own stream instead would have reduced the old send bytes, or
 * left the consumer the old recv bytes. Then a blocking loom_allreduce
 * after a producer copy on S, and set_stream(NULL) back to the library's
 * stream, which a held S must not block. World of one or more, nccl. */
#include <loom.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucheck.h"

#define N ((size_t)4 << 20)   /* floats: 16 MiB */
#define PEEK 1024             /* floats read through the other stream */
#define HOLD_LIMIT 20.0       /* s: the held stream's bound */

/* the input of every rank: small integers, exact in float32 sums */
static float input(size_t k, int round)
{
	return (float)((k % 1000) + 1 + round);
}

static size_t wrong(const float *got, size_t n, int round, int size)
{
	size_t bad = 0;
	for (size_t k = 0; k < n; k++)
		bad += got[k] != input(k, round) * (float)size;
	return bad;
}

static int all_bytes(const void *p, size_t n, unsigned char v)
{
	const unsigned char *b = p;
	for (size_t k = 0; k < n; k++)
		if (b[k] != v)
			return 0;
	return 1;
}

int main(void)
{
	loom_comm_t *world = NULL;
	cudaStream_t s, peek_s;
	struct gate g;
	float *d_send, *d_recv, *d_other, *h_src, *h_dst, *h_peek;
	size_t bytes = N * sizeof(float);
	loom_request_t *req = NULL;
	int rc, size, done = 0;

	gpucheck_start("stream_order");
	rc = loom_init_backend(LOOM_BACKEND_NCCL, &world);
	if (!gpucheck(rc == LOOM_SUCCESS, "loom_init_backend(NCCL): %s", loom_strerror(rc)))
		return gpucheck_done();
	size = loom_comm_size(world);
	gpucheck_note("world of %d, backend %s", size, loom_comm_backend(world));
	gpucheck_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate (user stream)");
	gpucheck_cuda(cudaStreamCreateWithFlags(&peek_s, cudaStreamNonBlocking), "cudaStreamCreate (peek stream)");
	gpucheck_cuda(cudaMalloc((void **)&d_send, bytes), "cudaMalloc send");
	gpucheck_cuda(cudaMalloc((void **)&d_recv, bytes), "cudaMalloc recv");
	gpucheck_cuda(cudaMalloc((void **)&d_other, bytes), "cudaMalloc other");
	/* pinned: the copies on S are truly asynchronous, never staged */
	gpucheck_cuda(cudaMallocHost((void **)&h_src, bytes), "cudaMallocHost src");
	gpucheck_cuda(cudaMallocHost((void **)&h_dst, bytes), "cudaMallocHost dst");
	gpucheck_cuda(cudaMallocHost((void **)&h_peek, PEEK * sizeof(float)), "cudaMallocHost peek");
	for (size_t k = 0; k < N; k++)
		h_src[k] = input(k, 0);
	gpucheck_cuda(cudaMemset(d_send, 0x11, bytes), "cudaMemset send");
	gpucheck_cuda(cudaMemset(d_recv, 0x22, bytes), "cudaMemset recv");
	memset(h_dst, 0x33, bytes);
	gpucheck_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

	rc = loom_comm_set_stream(world, s);
	gpucheck(rc == LOOM_SUCCESS, "loom_comm_set_stream(world, user stream): %s", loom_strerror(rc));

	/* 1. non-blocking, behind a held stream */
	gate_hold(&g, s, HOLD_LIMIT);
	gpucheck_cuda(cudaMemcpyAsync(d_send, h_src, bytes, cudaMemcpyHostToDevice, s), "producer copy");
	rc = loom_iallreduce(d_send, d_recv, N, LOOM_FLOAT32, LOOM_SUM, world, &req);
	gpucheck(rc == LOOM_SUCCESS, "loom_iallreduce on device buffers, enqueued on the held user stream: %s",
		 loom_strerror(rc));
	gpucheck_cuda(cudaMemcpyAsync(h_dst, d_recv, bytes, cudaMemcpyDeviceToHost, s), "consumer copy");
	if (rc == LOOM_SUCCESS) {
		int trc = loom_test(req, &done);
		gpucheck(trc == LOOM_SUCCESS && !done && !atomic_load(&g.expired),
			 "while the user stream is held the iallreduce is not complete (loom_test: %s, done=%d)",
			 loom_strerror(trc), done);
	}
	gpucheck_cuda(cudaMemcpyAsync(h_peek, d_recv, PEEK * sizeof(float), cudaMemcpyDeviceToHost, peek_s),
		      "peek copy");
	gpucheck_cuda(cudaStreamSynchronize(peek_s), "peek stream sync");
	gpucheck(all_bytes(h_peek, PEEK * sizeof(float), 0x22) && !atomic_load(&g.expired),
		 "while the user stream is held recv keeps its old bytes (read on another stream)");
	gate_open(&g);
	if (rc == LOOM_SUCCESS && !done) {
		rc = loom_wait(req);
		gpucheck(rc == LOOM_SUCCESS, "loom_wait after the release: %s", loom_strerror(rc));
	}
	gpucheck_cuda(cudaStreamSynchronize(s), "user stream sync");
	gpucheck(!atomic_load(&g.expired), "the stream was held until released (not by the %.0f s bound)",
		 HOLD_LIMIT);
	{
		size_t bad = wrong(h_dst, N, 0, size);
		gpucheck(bad == 0, "the consumer copy got the sum of the producer's data: %zu of %zu wrong%s",
			 bad, N, bad && all_bytes(h_dst, 4, 0x22) ? " (recv's old bytes: the consumer ran first)" : "");
	}

	/* 2. blocking, right after a producer copy on the same stream */
	for (size_t k = 0; k < N; k++)
		h_src[k] = input(k, 7);
	gpucheck_cuda(cudaMemcpyAsync(d_send, h_src, bytes, cudaMemcpyHostToDevice, s), "producer copy 2");
	rc = loom_allreduce(d_send, d_recv, N, LOOM_FLOAT32, LOOM_SUM, world);
	gpucheck(rc == LOOM_SUCCESS, "blocking loom_allreduce after a producer copy on the user stream: %s",
		 loom_strerror(rc));
	gpucheck(cudaStreamQuery(s) == cudaSuccess,
		 "when the blocking call returns the user stream has no work left");
	memset(h_dst, 0x33, bytes);
	gpucheck_cuda(cudaMemcpyAsync(h_dst, d_recv, bytes, cudaMemcpyDeviceToHost, peek_s), "read back");
	gpucheck_cuda(cudaStreamSynchronize(peek_s), "peek stream sync");
	{
		size_t bad = wrong(h_dst, N, 7, size);
		gpucheck(bad == 0, "the blocking allreduce reduced the producer's data: %zu of %zu wrong", bad, N);
	}

	/* 3. set_stream(NULL): the library's own stream, which the held S does not block */
	rc = loom_comm_set_stream(world, NULL);
	gpucheck(rc == LOOM_SUCCESS, "loom_comm_set_stream(world, NULL): %s", loom_strerror(rc));
	loom_comm_set_timeout(world, HOLD_LIMIT / 2);
	gpucheck_cuda(cudaMemcpy(d_other, h_src, bytes, cudaMemcpyHostToDevice), "copy to other");
	gpucheck_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
	gate_hold(&g, s, HOLD_LIMIT);
	rc = loom_allreduce(d_other, d_other, N, LOOM_FLOAT32, LOOM_SUM, world);
	gpucheck(rc == LOOM_SUCCESS && !atomic_load(&g.expired),
		 "after set_stream(NULL) an allreduce completes while the user stream is held: %s",
		 loom_strerror(rc));
	gate_open(&g);
	gpucheck_cuda(cudaStreamSynchronize(s), "user stream sync");
	memset(h_dst, 0x33, bytes);
	gpucheck_cuda(cudaMemcpy(h_dst, d_other, bytes, cudaMemcpyDeviceToHost), "read back other");
	{
		size_t bad = wrong(h_dst, N, 7, size);
		gpucheck(bad == 0, "and its result is right: %zu of %zu wrong", bad, N);
	}

	rc = loom_finalize(world);
	gpucheck(rc == LOOM_SUCCESS, "loom_finalize: %s", loom_strerror(rc));
	cudaFree(d_send);
	cudaFree(d_recv);
	cudaFree(d_other);
	cudaFreeHost(h_src);
	cudaFreeHost(h_dst);
	cudaFreeHost(h_peek);
	cudaStreamDestroy(s);
	cudaStreamDestroy(peek_s);
	return gpucheck_done();
}
