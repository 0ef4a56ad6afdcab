/* t/conformance/devbuf.c: device twins of host buffers (devbuf.h). */
#include "config.h"
#include "devbuf.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef HAVE_CUDA
#include <cuda_runtime_api.h>

struct twin {
	unsigned char *host, *dev;
	size_t bytes;
};

/* a handful live at once (the nonblocking checks hold about twenty) */
#define MAX_TWINS 64
static struct twin twins[MAX_TWINS];
static int ntwins, device = -1;

static void cuda_ok(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "conformance --device: %s: %s\n", what, cudaGetErrorString(e));
	exit(2);
}

int devbuf_start(char *why, size_t cap)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n < 1) {
		snprintf(why, cap, "no CUDA device (cudaGetDeviceCount: %s, %d devices)",
			 e == cudaSuccess ? "ok" : cudaGetErrorString(e), e == cudaSuccess ? n : 0);
		return -1;
	}
	cuda_ok(cudaGetDevice(&device), "cudaGetDevice");
	return 0;
}

int devbuf_device(void)
{
	return device;
}

void devbuf_add(void *host, size_t bytes)
{
	struct cudaPointerAttributes at;
	void *d = NULL;
	if (ntwins == MAX_TWINS) {
		fprintf(stderr, "conformance --device: more than %d buffers live at once\n", MAX_TWINS);
		exit(2);
	}
	cuda_ok(cudaMalloc(&d, bytes ? bytes : 1), "cudaMalloc");
	/* what the backend will see: device memory, not host or managed */
	cuda_ok(cudaPointerGetAttributes(&at, d), "cudaPointerGetAttributes");
	if (at.type != cudaMemoryTypeDevice || at.device != device) {
		fprintf(stderr, "conformance --device: cudaMalloc gave memory of type %d on device %d, "
			"not device memory of device %d\n", (int)at.type, at.device, device);
		exit(2);
	}
	twins[ntwins].host = host;
	twins[ntwins].dev = d;
	twins[ntwins].bytes = bytes;
	ntwins++;
}

void devbuf_drop(void *host)
{
	for (int i = 0; i < ntwins; i++)
		if (twins[i].host == host) {
			cuda_ok(cudaFree(twins[i].dev), "cudaFree");
			twins[i] = twins[--ntwins];
			return;
		}
}

void *devbuf_of(const void *host)
{
	const unsigned char *h = host;
	for (int i = 0; i < ntwins; i++)
		if (h >= twins[i].host && h < twins[i].host + twins[i].bytes)
			return twins[i].dev + (h - twins[i].host);
	fprintf(stderr, "conformance --device: %p is in no buffer with a device twin\n", host);
	exit(2);
}

void devbuf_push(void)
{
	for (int i = 0; i < ntwins; i++)
		cuda_ok(cudaMemcpy(twins[i].dev, twins[i].host, twins[i].bytes, cudaMemcpyHostToDevice),
			"cudaMemcpy to the device");
	/* a copy from pageable memory may return before its DMA is done, and
	 * the communicator's stream does not wait for the default stream */
	cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize after the copies");
}

void devbuf_pull(void)
{
	cuda_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize before the copies back");
	for (int i = 0; i < ntwins; i++)
		cuda_ok(cudaMemcpy(twins[i].host, twins[i].dev, twins[i].bytes, cudaMemcpyDeviceToHost),
			"cudaMemcpy from the device");
}

#else /* !HAVE_CUDA */

int devbuf_start(char *why, size_t cap)
{
	snprintf(why, cap, "this build has no CUDA (configure --with-cuda)");
	return -1;
}

int devbuf_device(void)
{
	return -1;
}

static void never(void)
{
	fprintf(stderr, "conformance --device: built without CUDA\n");
	exit(2);
}

void devbuf_add(void *host, size_t bytes)
{
	(void)host;
	(void)bytes;
	never();
}

void devbuf_drop(void *host)
{
	(void)host;
}

void *devbuf_of(const void *host)
{
	(void)host;
	never();
	return NULL;
}

void devbuf_push(void)
{
	never();
}

void devbuf_pull(void)
{
	never();
}
#endif
