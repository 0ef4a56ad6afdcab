/* t/conformance/devbuf.h: device twins of the conformance program's host
 * buffers, for `conformance --device` (the NCCL backend on device memory).
 * Each host buffer gets a cudaMalloc'd twin of the same size (guard band
 * included); devbuf_push copies every live host buffer to its twin before
 * a collective, devbuf_pull copies every twin back after it, so the checks
 * stay host code and also see a write past the end on the device. Built
 * without CUDA, devbuf_start says so and fails. Any CUDA error is fatal
 * (exit 2, naming the call). */
#ifndef LOOM_T_DEVBUF_H
#define LOOM_T_DEVBUF_H

#include <stddef.h>

/* On the current CUDA device (the one the backend chose for this thread).
 * 0, or -1 with the reason in why. */
int devbuf_start(char *why, size_t cap);
/* the device this runs on (after devbuf_start) */
int devbuf_device(void);
void devbuf_add(void *host, size_t bytes);
void devbuf_drop(void *host);
/* the twin of host, which may point inside a buffer; fatal when it is in none */
void *devbuf_of(const void *host);
void devbuf_push(void);
void devbuf_pull(void);

#endif
