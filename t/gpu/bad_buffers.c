/* t/gpu/bad_buffers --case another-context|freed|mixed: the NCCL backend
 * refuses a buffer it cannot use with LOOM_ERR_INVALID, before anything
 * is enqueued, and the communicator (and the CUDA context) stay usable:
 * an allreduce on good device buffers afterwards gives the right sum.
 *   another-context  device memory allocated in a second CUDA context
 *                    (driver API, libcuda.so.1 found by dlopen as the
 *                    runtime loaded it), not the one the comm runs in:
 *                    refused when CUDA says this context cannot address
 *                    it, else taken and the sum checked
 *   freed            a cudaMalloc'd buffer after cudaFree, as send/recv
 *                    of an allreduce and as the buffer of a send
 *   mixed            device send, host recv
 * One case per process: a case that breaks the context must not decide
 * the others. World of one (or more), LOOM_BACKEND nccl. */
#include <loom.h>

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpucheck.h"

#define N 4096

static loom_comm_t *world;

/* after the bad call: the communicator still reduces good device buffers */
static void still_works(const char *after)
{
	float *d, h[N];
	int size = loom_comm_size(world), bad = 0, rc;
	for (int k = 0; k < N; k++)
		h[k] = (float)(k % 97);
	gpucheck_cuda(cudaMalloc((void **)&d, sizeof h), "cudaMalloc (good buffer)");
	gpucheck_cuda(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice), "copy to the good buffer");
	rc = loom_allreduce(d, d, N, LOOM_FLOAT32, LOOM_SUM, world);
	if (rc == LOOM_SUCCESS)
		gpucheck_cuda(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), "copy back");
	for (int k = 0; rc == LOOM_SUCCESS && k < N; k++)
		bad += h[k] != (float)(k % 97) * (float)size;
	gpucheck(rc == LOOM_SUCCESS && !bad,
		 "after %s the communicator still works: allreduce on good device buffers %s, %d wrong",
		 after, loom_strerror(rc), bad);
	cudaFree(d);
}

static void refused(int rc, const char *what)
{
	gpucheck(rc == LOOM_ERR_INVALID, "%s: LOOM_ERR_INVALID (got %s)", what, loom_strerror(rc));
}

/* the driver calls the case needs; the runtime already loaded libcuda */
typedef CUresult (*ctx_create_fn)(CUcontext *, unsigned, CUdevice);
typedef CUresult (*ctx_create4_fn)(CUcontext *, void *, unsigned, CUdevice);
typedef CUresult (*ctx_fn)(CUcontext);
typedef CUresult (*ctx_pop_fn)(CUcontext *);
typedef CUresult (*mem_alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*mem_free_fn)(CUdeviceptr);
typedef CUresult (*memcpy_htod_fn)(CUdeviceptr, const void *, size_t);
typedef CUresult (*device_get_fn)(CUdevice *, int);

static void *sym(void *h, const char *name)
{
	void *f = dlsym(h, name);
	if (!f)
		gpucheck_not_run("libcuda.so.1 has no %s", name);
	return f;
}

/* cuCtxCreate_v2, which drivers keep for older programs, else _v4 (CUDA
 * 12.5 and later; no creation parameters: NULL) */
static CUresult make_context(void *h, CUcontext *ctx, CUdevice dev)
{
	ctx_create4_fn v4;
	ctx_create_fn v2;
	*(void **)&v2 = dlsym(h, "cuCtxCreate_v2");
	if (v2)
		return v2(ctx, 0, dev);
	*(void **)&v4 = sym(h, "cuCtxCreate_v4");
	return v4(ctx, NULL, 0, dev);
}

/* Device memory of a second context on the same device. Whether the
 * communicator's context can address it is CUDA's answer, not loom's:
 * cudaPointerGetAttributes gives the address to use from the current
 * context, or none. On the H200 of the first device check (driver 580,
 * CUDA 13) it gave one: loom then must take the buffer and move the
 * right values; where CUDA gives none, loom must refuse it with
 * LOOM_ERR_INVALID. Either way the communicator works afterwards. */
static void case_another_context(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	ctx_fn ctx_push, ctx_destroy;
	ctx_pop_fn ctx_pop;
	mem_alloc_fn mem_alloc;
	mem_free_fn mem_free;
	memcpy_htod_fn htod;
	device_get_fn device_get;
	CUcontext other = NULL, popped = NULL;
	CUdevice dev;
	CUdeviceptr p = 0;
	float *good = NULL, in[N], out[N];
	int cur = 0, rc, addressable, bad = 0;
	if (!h)
		h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h)
		gpucheck_not_run("cannot dlopen libcuda.so.1 (the driver API): %s", dlerror());
	*(void **)&ctx_push = sym(h, "cuCtxPushCurrent_v2");
	*(void **)&ctx_pop = sym(h, "cuCtxPopCurrent_v2");
	*(void **)&ctx_destroy = sym(h, "cuCtxDestroy_v2");
	*(void **)&mem_alloc = sym(h, "cuMemAlloc_v2");
	*(void **)&mem_free = sym(h, "cuMemFree_v2");
	*(void **)&htod = sym(h, "cuMemcpyHtoD_v2");
	*(void **)&device_get = sym(h, "cuDeviceGet");
	gpucheck_cuda(cudaGetDevice(&cur), "cudaGetDevice");
	if (device_get(&dev, cur) != CUDA_SUCCESS || make_context(h, &other, dev) != CUDA_SUCCESS)
		gpucheck_not_run("cannot create a second CUDA context on device %d", cur);
	for (int k = 0; k < N; k++)
		in[k] = (float)(k % 89) + 0.5f;
	/* cuCtxCreate made it current: allocate and fill there, then back */
	if (mem_alloc(&p, sizeof in) != CUDA_SUCCESS || htod(p, in, sizeof in) != CUDA_SUCCESS)
		gpucheck_not_run("cuMemAlloc/cuMemcpyHtoD in the second context failed");
	ctx_pop(&popped);
	gpucheck_note("a buffer of a second context on device %d: %p", cur, (void *)p);
	{
		struct cudaPointerAttributes at;
		cudaError_t e = cudaPointerGetAttributes(&at, (void *)p);
		addressable = e == cudaSuccess && at.type == cudaMemoryTypeDevice && at.device == cur &&
			      at.devicePointer != NULL;
		gpucheck_note("cudaPointerGetAttributes from the runtime's context: %s, type %d, device %d, "
			      "devicePointer %p: %s", cudaGetErrorString(e), e == cudaSuccess ? (int)at.type : -1,
			      e == cudaSuccess ? at.device : -1, e == cudaSuccess ? at.devicePointer : NULL,
			      addressable ? "addressable here" : "not addressable here");
		cudaGetLastError();
	}
	/* out of place into a good buffer: a send that is not refused is then
	 * read by NCCL (an in-place allreduce of one rank may touch nothing) */
	gpucheck_cuda(cudaMalloc((void **)&good, sizeof out), "cudaMalloc (recv)");
	gpucheck_cuda(cudaMemset(good, 0, sizeof out), "cudaMemset (recv)");
	rc = loom_allreduce((void *)p, good, N, LOOM_FLOAT32, LOOM_SUM, world);
	if (addressable) {
		int size = loom_comm_size(world);
		if (rc == LOOM_SUCCESS)
			gpucheck_cuda(cudaMemcpy(out, good, sizeof out, cudaMemcpyDeviceToHost), "copy back");
		for (int k = 0; rc == LOOM_SUCCESS && k < N; k++)
			bad += out[k] != in[k] * (float)size;
		gpucheck(rc == LOOM_SUCCESS && !bad, "allreduce from another context's device buffer, which "
			 "CUDA says this context can address: taken, the right sum (%s, %d wrong)",
			 loom_strerror(rc), bad);
	} else {
		refused(rc, "allreduce from another context's device buffer, which CUDA says this context "
			"cannot address");
	}
	cudaFree(good);
	still_works("the buffer of another context");
	ctx_push(other);
	mem_free(p);
	ctx_pop(&popped);
	ctx_destroy(other);
}

static void case_freed(void)
{
	float *d = NULL;
	int rc;
	gpucheck_cuda(cudaMalloc((void **)&d, N * sizeof(float)), "cudaMalloc");
	gpucheck_cuda(cudaFree(d), "cudaFree");
	gpucheck_note("a freed device buffer: %p", (void *)d);
	rc = loom_allreduce(d, d, N, LOOM_FLOAT32, LOOM_SUM, world);
	refused(rc, "allreduce on a freed device buffer");
	rc = loom_send(d, N, LOOM_FLOAT32, 0, world);
	refused(rc, "send of a freed device buffer");
	still_works("the refusals");
}

static void case_mixed(void)
{
	float *d = NULL, h[N];
	int rc;
	memset(h, 0, sizeof h);
	gpucheck_cuda(cudaMalloc((void **)&d, sizeof h), "cudaMalloc");
	gpucheck_cuda(cudaMemset(d, 0, sizeof h), "cudaMemset");
	rc = loom_allreduce(d, h, N, LOOM_FLOAT32, LOOM_SUM, world);
	refused(rc, "allreduce with a device send and a host recv");
	still_works("the refusal");
	cudaFree(d);
}

int main(int argc, char **argv)
{
	const char *cse = argc == 3 && !strcmp(argv[1], "--case") ? argv[2] : NULL;
	int rc;
	if (!cse || (strcmp(cse, "another-context") && strcmp(cse, "freed") && strcmp(cse, "mixed"))) {
		fprintf(stderr, "usage: bad_buffers --case another-context|freed|mixed\n");
		return 2;
	}
	gpucheck_start(!strcmp(cse, "freed") ? "bad_buffers freed" : !strcmp(cse, "mixed") ?
		       "bad_buffers mixed" : "bad_buffers another-context");
	rc = loom_init_backend(LOOM_BACKEND_NCCL, &world);
	if (!gpucheck(rc == LOOM_SUCCESS, "loom_init_backend(NCCL): %s", loom_strerror(rc)))
		return gpucheck_done();
	/* a call that is not refused must not hang the check */
	loom_comm_set_timeout(world, 20);
	if (!strcmp(cse, "another-context"))
		case_another_context();
	else if (!strcmp(cse, "freed"))
		case_freed();
	else
		case_mixed();
	rc = loom_finalize(world);
	gpucheck(rc == LOOM_SUCCESS, "loom_finalize: %s", loom_strerror(rc));
	return gpucheck_done();
}
