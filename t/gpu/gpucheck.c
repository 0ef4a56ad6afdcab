/* t/gpu/gpucheck.c: the GPU check programs' reporting and held stream
 * (gpucheck.h). */
#include "gpucheck.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *prog = "gpucheck";
static int nchecks, nfailed;

int gpucheck_start(const char *name)
{
	int n = 0;
	cudaError_t e;
	prog = name;
	setvbuf(stdout, NULL, _IOLBF, 0);
	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n < 1)
		gpucheck_not_run("no GPU: cudaGetDeviceCount: %s, %d devices",
				 e == cudaSuccess ? "ok" : cudaGetErrorString(e), e == cudaSuccess ? n : 0);
	return n;
}

int gpucheck(int pass, const char *fmt, ...)
{
	va_list ap;
	nchecks++;
	nfailed += !pass;
	printf("%s - ", pass ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return pass;
}

void gpucheck_note(const char *fmt, ...)
{
	va_list ap;
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

int gpucheck_done(void)
{
	if (nfailed || !nchecks) {
		printf("%s: FAIL %d of %d checks failed\n", prog, nfailed, nchecks);
		return 1;
	}
	printf("%s: PASS %d/%d checks\n", prog, nchecks, nchecks);
	return 0;
}

void gpucheck_not_run(const char *fmt, ...)
{
	va_list ap;
	printf("%s: NOT RUN: ", prog);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(GPUCHECK_NOT_RUN);
}

void gpucheck_cuda(cudaError_t e, const char *what)
{
	if (e == cudaSuccess)
		return;
	gpucheck(0, "%s: %s", what, cudaGetErrorString(e));
	exit(gpucheck_done());
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* runs on a CUDA host thread: no CUDA calls in here */
static void CUDART_CB hold(void *arg)
{
	struct gate *g = arg;
	struct timespec ms = { 0, 1000000 };
	double until = mono() + g->limit_s;
	atomic_store(&g->entered, 1);
	while (!atomic_load(&g->open)) {
		if (mono() >= until) {
			atomic_store(&g->expired, 1);
			return;
		}
		nanosleep(&ms, NULL);
	}
}

void gate_hold(struct gate *g, cudaStream_t s, double limit_s)
{
	atomic_store(&g->open, 0);
	atomic_store(&g->expired, 0);
	atomic_store(&g->entered, 0);
	g->limit_s = limit_s;
	gpucheck_cuda(cudaLaunchHostFunc(s, hold, g), "cudaLaunchHostFunc (the held stream)");
}

void gate_open(struct gate *g)
{
	atomic_store(&g->open, 1);
}
