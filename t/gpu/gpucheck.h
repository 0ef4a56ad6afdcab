/* t/gpu/gpucheck.h: what the GPU check programs (stream_order,
 * bad_buffers, nccl_timeout) share: the GPU gate, one line per check, a
 * summary line, a held stream.
 *
 * Output: "ok - ..." / "not ok - ..." per check, then one line
 *   NAME: PASS N/N checks | NAME: FAIL K of N checks failed | NAME: NOT RUN: why
 * Exit 0 (PASS), 1 (FAIL), 77 (NOT RUN: no CUDA device, or the case cannot
 * be made honestly here), 2 (usage). */
#ifndef LOOM_T_GPUCHECK_H
#define LOOM_T_GPUCHECK_H

#include <cuda_runtime_api.h>
#include <stdatomic.h>

#define GPUCHECK_NOT_RUN 77

/* Remember NAME for the lines; exit 77 with NOT RUN when this machine has
 * no CUDA device. Returns the device count. */
int gpucheck_start(const char *name);
/* one check; returns pass */
int gpucheck(int pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* note: a "# ..." line that is no check */
void gpucheck_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* print the summary line and return the exit status */
int gpucheck_done(void);
/* print NOT RUN with the reason and exit 77 */
void gpucheck_not_run(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* a CUDA call that must work: else FAIL naming it, exit 1 */
void gpucheck_cuda(cudaError_t e, const char *what);

/* A stream held without a kernel: gate_hold enqueues a host function on
 * the stream that returns only when gate_open is called, or after
 * limit_s (a bound so that nothing can hang; then expired is set, and a
 * check that relied on the hold fails). */
struct gate {
	atomic_int open, expired, entered;
	double limit_s;
};
void gate_hold(struct gate *g, cudaStream_t s, double limit_s);
void gate_open(struct gate *g);

#endif
