/* runtime/backend/backend_nccl.c: the NCCL backend.
 *
 * An NCCL communicator is a native loom communicator of the same members
 * (its bootstrap, host-memory operations, and abort/peer-lost signalling)
 * plus one ncclComm_t. Per call: when the buffers are device memory
 * (cudaPointerGetAttributes) the operation goes to NCCL on the
 * communicator's stream, else to the native communicator; every rank must
 * pass the same kind of memory to one call, as with dtype and count.
 *
 * World: the native world first; rank 0's ncclUniqueId is broadcast over
 * it. Device: LOOM_LOCAL_DEVICE (loom.so's binding: the task's GPU in
 * CUDA_VISIBLE_DEVICES), else LOCAL_RANK (what loom.so and torchrun
 * write), else the native local rank, modulo the visible devices. NCCL runs
 * non-blocking (ncclConfig_t.blocking = 0): every NCCL call is followed
 * by polling ncclCommGetAsyncError, and completion by polling
 * cudaStreamQuery, against the communicator's deadline; on a timeout, or
 * when the native communicator reports an abort or a lost peer, the
 * ncclComm is aborted (ncclCommAbort, in a thread of its own so that the
 * caller is not held past its deadline) and the call returns the error.
 * A buffer neither kind of memory can serve is refused with
 * LOOM_ERR_INVALID before anything is enqueued (buf_kind): device memory
 * of another device or not addressable from this context, or an address
 * CUDA does not know that is not readable host memory either (a freed
 * cudaMalloc buffer), which the host path would otherwise crash on.
 * 16-bit floats map onto ncclFloat16 / ncclBfloat16: NCCL converts to
 * fp32 for each addition but sends and stores partial results in the
 * 16-bit type, so they are rounded at each step (as the MPI backend's
 * user ops do), not accumulated in fp32 end to end like the native
 * backend. Run on one GPU (a world of one rank) by t/gpu/device-check.sh;
 * several ranks on several GPUs have only been compiled.
 */
#include "backend/backend.h"
#include "flight/flight.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <nccl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct ncomm {
	struct loom_comm *nat;   /* the native communicator of the same members */
	ncclComm_t nc;
	cudaStream_t own, stream;
	int device;
	int aborted;
	unsigned long long nsplit;
	struct loom_comm *world;  /* the world this communicator derives from */
	struct loom_comm *kids;   /* world: its live derived communicators */
	struct loom_comm *sib;    /* next in the world's kids */
};

struct nreq {
	struct loom_comm *c;
	cudaEvent_t ev;
	double started, deadline;
	const char *opname;
};


static int nccl_status(ncclResult_t r)
{
	switch (r) {
	case ncclSuccess: return LOOM_SUCCESS;
	case ncclInvalidArgument: case ncclInvalidUsage: return LOOM_ERR_INVALID;
	case ncclRemoteError: return LOOM_ERR_PEER_LOST;
	case ncclSystemError: case ncclUnhandledCudaError: case ncclInternalError:
	default: return LOOM_ERR_SYSTEM;
	}
}

/* ncclCommAbort runs in a thread of its own: it waits for the work NCCL
 * queued on the communicator's streams, and work held behind the user's
 * own stream (a host function that never returns, a kernel of the user's
 * that spins) would otherwise keep the caller past its deadline, the very
 * hang the timeout is there to end (t/gpu/device-check.sh, held-stream).
 * loom_finalize waits for the aborts in flight, up to ABORT_WAIT_S. */
#define ABORT_WAIT_S 10.0
static pthread_mutex_t abort_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t abort_done = PTHREAD_COND_INITIALIZER;
static int aborts_in_flight;

static void *abort_main(void *arg)
{
	ncclCommAbort((ncclComm_t)arg);
	pthread_mutex_lock(&abort_lock);
	aborts_in_flight--;
	pthread_cond_broadcast(&abort_done);
	pthread_mutex_unlock(&abort_lock);
	return NULL;
}

static void abort_async(ncclComm_t nc)
{
	pthread_t t;
	pthread_attr_t at;
	int ok;
	pthread_mutex_lock(&abort_lock);
	aborts_in_flight++;
	pthread_mutex_unlock(&abort_lock);
	ok = pthread_attr_init(&at) == 0;
	ok = ok && pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
	     pthread_create(&t, &at, abort_main, nc) == 0;
	pthread_attr_destroy(&at);
	if (!ok)
		abort_main(nc);  /* no thread: abort here, waiting as NCCL does */
}

/* until every abort has returned, or seconds; what is still running is
 * logged and left */
static void aborts_wait(double seconds)
{
	struct timespec until;
	int left;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)seconds;
	pthread_mutex_lock(&abort_lock);
	while (aborts_in_flight &&
	       pthread_cond_timedwait(&abort_done, &abort_lock, &until) != ETIMEDOUT)
		;
	left = aborts_in_flight;
	pthread_mutex_unlock(&abort_lock);
	if (left)
		LOOM_ERR("finalize: %d ncclCommAbort call(s) still waiting after %.0f s for work queued "
			 "on their streams (a stream of yours held?): left running", left, seconds);
}

static void nabort(struct loom_comm *c, int st)
{
	struct ncomm *n = c->impl;
	int zero = 0;
	atomic_compare_exchange_strong(&c->failed, &zero, st);
	if (!n->aborted && n->nc) {
		n->aborted = 1;
		abort_async(n->nc);
		n->nc = NULL;
	}
}

/* Wait until NCCL is no longer "in progress" on the communicator *pnc
 * (non-blocking mode) or the deadline passes; c is the loom communicator
 * that fails (aborted) on an error. NCCL is always asked at least once,
 * whatever r says: a non-blocking call can return ncclSuccess while its
 * group job still runs in NCCL's thread (ncclCommSplit does), and the
 * next call on that communicator would then fail with "invalid argument".
 * *pnc may be NULL until NCCL's thread fills it in (a split's child). */
static int nccl_settle_on(struct loom_comm *c, ncclComm_t *pnc, ncclResult_t r, const char *what,
			  double deadline)
{
	struct ncomm *n = c->impl;
	ncclResult_t a = r == ncclSuccess ? ncclInProgress : r;
	unsigned spins = 0;
	while (a == ncclInProgress) {
		ncclComm_t nc = __atomic_load_n(pnc, __ATOMIC_ACQUIRE);
		int f;
		if (nc && ncclCommGetAsyncError(nc, &a) != ncclSuccess) {
			a = ncclInvalidArgument;
			break;
		}
		if (a != ncclInProgress)
			break;
		if ((f = atomic_load(&n->nat->failed))) {
			nabort(c, f);
			return f;
		}
		if (loom_now() >= deadline) {
			LOOM_ERR("timeout: comm %s: %s still in progress after the deadline; ncclCommAbort",
				 c->name, what);
			loom_flight_log_verdict();
			nabort(c, LOOM_ERR_TIMEOUT);
			return LOOM_ERR_TIMEOUT;
		}
		if (++spins > 1000)
			sched_yield();
	}
	if (a != ncclSuccess) {
		LOOM_ERR("comm %s: %s: %s", c->name, what, ncclGetErrorString(a));
		nabort(c, nccl_status(a));
		return nccl_status(a);
	}
	return LOOM_SUCCESS;
}

static int nccl_settle(struct loom_comm *c, ncclResult_t r, const char *what, double deadline)
{
	return nccl_settle_on(c, &((struct ncomm *)c->impl)->nc, r, what, deadline);
}

/* Poll an event (NULL: the stream) until done, an async error, a failure
 * of the native comm, or the deadline. block 0: once. */
static int nccl_poll(struct loom_comm *c, cudaEvent_t ev, const char *what, double started,
		     double deadline, int block, int *done)
{
	struct ncomm *n = c->impl;
	unsigned spins = 0;
	*done = 1;
	for (;;) {
		cudaError_t e = ev ? cudaEventQuery(ev) : cudaStreamQuery(n->stream);
		ncclResult_t a = ncclSuccess;
		int f;
		if (e == cudaSuccess)
			return LOOM_SUCCESS;
		if (e != cudaErrorNotReady) {
			LOOM_ERR("comm %s: %s: CUDA: %s", c->name, what, cudaGetErrorString(e));
			nabort(c, LOOM_ERR_SYSTEM);
			return LOOM_ERR_SYSTEM;
		}
		if (n->nc && ncclCommGetAsyncError(n->nc, &a) == ncclSuccess && a != ncclSuccess &&
		    a != ncclInProgress) {
			LOOM_ERR("comm %s: %s: %s", c->name, what, ncclGetErrorString(a));
			nabort(c, nccl_status(a));
			return nccl_status(a);
		}
		if ((f = atomic_load(&n->nat->failed)) || (f = atomic_load(&c->failed))) {
			nabort(c, f);
			return f;
		}
		if (loom_now() >= deadline) {
			LOOM_ERR("timeout: comm %s op %s after %.1f s (nccl backend); ncclCommAbort, the "
				 "communicator fails from now on", c->name, what, loom_now() - started);
			loom_flight_log_verdict();
			nabort(c, LOOM_ERR_TIMEOUT);
			return LOOM_ERR_TIMEOUT;
		}
		if (!block) {
			*done = 0;
			return LOOM_SUCCESS;
		}
		if (++spins > 1000)
			sched_yield();
	}
}

/* 1 when the first byte at p can be read by this process: process_vm_readv
 * reports EFAULT instead of faulting. Where the call is not allowed
 * (seccomp: EPERM, ENOSYS) it cannot tell, and says readable. */
static int host_readable(const void *p)
{
	char b;
	struct iovec here = { &b, 1 }, there = { (void *)p, 1 };
	if (process_vm_readv(getpid(), &here, 1, &there, 1, 0) == 1)
		return 1;
	return errno != EFAULT;
}

enum { BUF_BAD = -1, BUF_HOST = 0, BUF_DEV = 1 };

/* What the buffer p (which, for the log line: "send", "recv", "buffer")
 * is to communicator c: BUF_DEV device or managed memory c's device can
 * address, BUF_HOST host memory, BUF_BAD neither (logged). NULL: host.
 * used 0 (no element, or a buffer the call ignores on this rank): host
 * memory is not probed. */
static int buf_kind(const struct loom_comm *c, const void *p, const char *which, int used)
{
	const struct ncomm *n = c->impl;
	struct cudaPointerAttributes at;
	if (!p)
		return BUF_HOST;
	if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
		cudaGetLastError();  /* clear it: CUDA knows nothing of p */
		at.type = cudaMemoryTypeUnregistered;
	}
	if (at.type == cudaMemoryTypeManaged)
		return BUF_DEV;
	if (at.type == cudaMemoryTypeDevice) {
		if (at.device != n->device) {
			LOOM_ERR("comm %s: %s %p is memory of CUDA device %d, the communicator's is device %d: "
				 "allocate it on device %d", c->name, which, p, at.device, n->device, n->device);
			return BUF_BAD;
		}
		if (!at.devicePointer) {
			LOOM_ERR("comm %s: %s %p is device memory this CUDA context cannot address (another "
				 "context's?): allocate it in the context the communicator runs in", c->name,
				 which, p);
			return BUF_BAD;
		}
		return BUF_DEV;
	}
	if (used && !host_readable(p)) {
		LOOM_ERR("comm %s: %s %p is neither device memory CUDA knows nor readable host memory "
			 "(a freed cudaMalloc buffer?)", c->name, which, p);
		return BUF_BAD;
	}
	return BUF_HOST;
}

static ncclDataType_t ntype(loom_dtype_t dt)
{
	switch (dt) {
	case LOOM_INT8: return ncclInt8;
	case LOOM_INT32: return ncclInt32;
	case LOOM_INT64: return ncclInt64;
	case LOOM_FLOAT16: return ncclFloat16;
	case LOOM_BFLOAT16: return ncclBfloat16;
	case LOOM_FLOAT32: return ncclFloat32;
	default: return ncclFloat64;
	}
}

/* ranks: the communicator's size. The average of one rank is the value
 * itself: NCCL 2.28's one-rank path for ncclAvg on floats (a pre-multiply
 * kernel) leaves the last element of some counts unwritten (65537
 * float64s: 32 blocks of 2048), found by t/gpu/device-check.sh; a sum of
 * one rank is a plain copy, exact. */
static ncclRedOp_t nop(loom_op_t op, int ranks)
{
	switch (op) {
	case LOOM_PROD: return ncclProd;
	case LOOM_MIN: return ncclMin;
	case LOOM_MAX: return ncclMax;
	case LOOM_AVG: return ranks == 1 ? ncclSum : ncclAvg;
	default: return ncclSum;
	}
}

/* Enqueue d on the stream (device buffers, validated). */
static int enqueue(struct loom_comm *c, const struct loom_opdesc *d, double deadline)
{
	struct ncomm *n = c->impl;
	size_t es = loom_dtype_size(d->dt), cnt = d->count;
	ncclDataType_t t = ntype(d->dt);
	ncclResult_t r = ncclSuccess;
	int i;
	if (!n->nc)
		return atomic_load(&c->failed) ? atomic_load(&c->failed) : LOOM_ERR_ABORTED;
	switch (d->kind) {
	case LOOM_OP_ALLREDUCE:
		r = ncclAllReduce(d->s, d->r, cnt, t, nop(d->op, c->size), n->nc, n->stream);
		break;
	case LOOM_OP_BCAST:
		r = ncclBroadcast(d->s, d->r, cnt, t, d->root, n->nc, n->stream);
		break;
	case LOOM_OP_REDUCE:
		r = ncclReduce(d->s, d->r, cnt, t, nop(d->op, c->size), d->root, n->nc, n->stream);
		break;
	case LOOM_OP_ALLGATHER:
		r = ncclAllGather(d->s, d->r, cnt, t, n->nc, n->stream);
		break;
	case LOOM_OP_REDUCE_SCATTER:
		if (d->s == d->r) {
			/* NCCL's in-place form leaves the result at block rank */
			char *blk = (char *)d->r + (size_t)c->rank * cnt * es;
			r = ncclReduceScatter(d->s, blk, cnt, t, nop(d->op, c->size), n->nc, n->stream);
			if (r == ncclSuccess || r == ncclInProgress) {
				int rc = nccl_settle(c, r, "reduce_scatter", deadline);
				if (rc)
					return rc;
				if (c->rank && cudaMemcpyAsync(d->r, blk, cnt * es, cudaMemcpyDeviceToDevice,
							       n->stream) != cudaSuccess)
					return LOOM_ERR_SYSTEM;
				return LOOM_SUCCESS;
			}
		} else {
			r = ncclReduceScatter(d->s, d->r, cnt, t, nop(d->op, c->size), n->nc, n->stream);
		}
		break;
	case LOOM_OP_ALLTOALL: {
		const char *s = d->s;
		void *tmp = NULL;
		size_t bytes = (size_t)c->size * cnt * es;
		if (d->s == d->r) {
			if (cudaMallocAsync(&tmp, bytes, n->stream) != cudaSuccess ||
			    cudaMemcpyAsync(tmp, d->s, bytes, cudaMemcpyDeviceToDevice, n->stream) !=
				    cudaSuccess)
				return LOOM_ERR_NOMEM;
			s = tmp;
		}
		r = ncclGroupStart();
		for (i = 0; i < c->size && (r == ncclSuccess || r == ncclInProgress); i++) {
			r = ncclSend(s + (size_t)i * cnt * es, cnt, t, i, n->nc, n->stream);
			if (r == ncclSuccess || r == ncclInProgress)
				r = ncclRecv((char *)d->r + (size_t)i * cnt * es, cnt, t, i, n->nc,
					     n->stream);
		}
		{
			ncclResult_t e = ncclGroupEnd();
			if (r == ncclSuccess)
				r = e;
		}
		if (tmp)
			cudaFreeAsync(tmp, n->stream);
		break;
	}
	default:
		return LOOM_ERR_INVALID;
	}
	return nccl_settle(c, r, loom_opdesc_name(d->kind), deadline);
}

/* 1: device path, 0: host path, <0: a bad or mixed pair (logged) */
static int route(const struct loom_comm *c, const struct loom_opdesc *d)
{
	/* loom.h: a non-root's broadcast send and reduce recv are not used */
	int s_used = d->count && !(d->kind == LOOM_OP_BCAST && c->rank != d->root);
	int r_used = d->count && !(d->kind == LOOM_OP_REDUCE && c->rank != d->root);
	int a, b;
	if (d->kind == LOOM_OP_BARRIER)
		return 0;
	if ((a = buf_kind(c, d->s, "send", s_used)) == BUF_BAD ||
	    (b = buf_kind(c, d->r, "recv", r_used)) == BUF_BAD)
		return -1;
	if (d->s && d->r && a != b) {
		LOOM_ERR("comm %s: %s: send is %s memory, recv %s memory: pass the same kind to both",
			 c->name, loom_opdesc_name(d->kind), a ? "device" : "host", b ? "device" : "host");
		return -1;
	}
	return a || b;
}

/* host buffers: the native communicator of the same ranks runs it */
static struct loom_comm *native_of(struct loom_comm *c)
{
	struct loom_comm *nat = ((struct ncomm *)c->impl)->nat;
	nat->timeout = c->timeout;
	return nat;
}

/* one collective (validated): device buffers to NCCL on the stream,
 * host buffers to the native communicator; req NULL: blocking */
static int nccl_coll(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req)
{
	struct ncomm *n = c->impl;
	struct nreq *q;
	int rc, dev, done;
	if ((rc = atomic_load(&c->failed)))
		return rc;
	if ((dev = route(c, d)) < 0)
		return LOOM_ERR_INVALID;
	if (!dev) {
		struct loom_comm *nat = native_of(c);
		return nat->be->coll(nat, d, req);
	}
	if (!(q = calloc(1, sizeof *q)))
		return LOOM_ERR_NOMEM;
	q->c = c;
	q->opname = loom_opdesc_name(d->kind);
	q->started = loom_now();
	q->deadline = q->started + c->timeout;
	if (d->count) {
		rc = enqueue(c, d, q->deadline);
		if (!rc && req &&
		    (cudaEventCreateWithFlags(&q->ev, cudaEventDisableTiming) != cudaSuccess ||
		     cudaEventRecord(q->ev, n->stream) != cudaSuccess))
			rc = LOOM_ERR_SYSTEM;
		if (!rc && !req)  /* blocking: wait for the stream itself */
			rc = nccl_poll(c, NULL, q->opname, q->started, q->deadline, 1, &done);
	}
	if (!rc && req && !(*req = loom_req_wrap(c, q)))
		rc = LOOM_ERR_NOMEM;
	if (rc || !req) {
		if (q->ev)
			cudaEventDestroy(q->ev);
		free(q);
	}
	return rc;
}

static int nreq_poll(struct nreq *q, int block, int *done)
{
	if (!q->ev) {
		*done = 1;
		return LOOM_SUCCESS;
	}
	return nccl_poll(q->c, q->ev, q->opname, q->started, q->deadline, block, done);
}

static void nreq_free(struct nreq *q)
{
	if (q->ev)
		cudaEventDestroy(q->ev);
	free(q);
}

static int bx_wait(void *impl)
{
	int done, rc = nreq_poll(impl, 1, &done);
	nreq_free(impl);
	return rc;
}

static int bx_test(void *impl, int *done)
{
	int rc = nreq_poll(impl, 0, done);
	if (*done)
		nreq_free(impl);
	return rc;
}

static int nccl_p2p(struct loom_comm *c, int is_send, void *buf, size_t count, loom_dtype_t dt,
		    int peer, loom_request_t **req)
{
	struct ncomm *n = c->impl;
	struct nreq *q;
	ncclResult_t r;
	int rc, kind = buf_kind(c, buf, is_send ? "send buffer" : "recv buffer", count > 0);
	if (kind == BUF_BAD)
		return LOOM_ERR_INVALID;
	if (kind == BUF_HOST) {
		struct loom_comm *nat = native_of(c);
		return nat->be->p2p(nat, is_send, buf, count, dt, peer, req);
	}
	if ((rc = atomic_load(&c->failed)))
		return rc;
	if (!n->nc)
		return LOOM_ERR_ABORTED;
	if (!(q = calloc(1, sizeof *q)))
		return LOOM_ERR_NOMEM;
	q->c = c;
	q->opname = is_send ? "send" : "recv";
	q->started = loom_now();
	q->deadline = q->started + c->timeout;
	r = is_send ? ncclSend(buf, count, ntype(dt), peer, n->nc, n->stream) :
		      ncclRecv(buf, count, ntype(dt), peer, n->nc, n->stream);
	rc = nccl_settle(c, r, q->opname, q->deadline);
	if (!rc && (cudaEventCreateWithFlags(&q->ev, cudaEventDisableTiming) != cudaSuccess ||
		    cudaEventRecord(q->ev, n->stream) != cudaSuccess))
		rc = LOOM_ERR_SYSTEM;
	if (rc) {
		nreq_free(q);
		return rc;
	}
	if (!req)
		return bx_wait(q);
	if (!(*req = loom_req_wrap(c, q))) {
		bx_wait(q);
		return LOOM_ERR_NOMEM;
	}
	return LOOM_SUCCESS;
}

/* ---- communicators ---- */
static int all_ok(struct loom_comm *nat, int mine)
{
	int32_t a = mine ? 1 : 0, m = 0;
	struct loom_opdesc d = { LOOM_OP_ALLREDUCE, &a, &m, 1, LOOM_INT32, LOOM_MIN, 0, 0 };
	if (nat->be->coll(nat, &d, NULL))
		return 0;
	return m == 1;
}

/* A communicator of this backend with nat's members and place in the
 * world, on device; no NCCL communicator yet. NULL: out of memory. */
static struct loom_comm *shell(struct loom_comm *nat, int device)
{
	struct loom_comm *c = calloc(1, sizeof *c);
	struct ncomm *n = calloc(1, sizeof *n);
	if (!c || !n) {
		free(c);
		free(n);
		return NULL;
	}
	c->be = &loom_nccl_backend;
	c->impl = n;
	c->w = nat->w;
	c->rank = nat->rank;
	c->size = nat->size;
	c->local_rank = nat->local_rank;
	c->local_size = nat->local_size;
	c->nnodes = nat->nnodes;
	c->timeout = nat->timeout;
	snprintf(c->name, sizeof c->name, "%s", nat->name);
	n->nat = nat;
	n->device = device;
	return c;
}

/* A new NCCL communicator over nat: ncclCommSplit of parent when given
 * (and this NCCL has it), else a fresh id from nat's rank 0. */
static int make(struct loom_comm *nat, struct loom_comm *parent, int color, int key, int device,
		struct loom_comm **out)
{
	struct loom_comm *c = shell(nat, device);
	struct ncomm *n;
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclResult_t r;
	double deadline;
	int rc;
	*out = NULL;
	if (!c)
		return LOOM_ERR_NOMEM;
	n = c->impl;
	deadline = loom_now() + c->timeout;
	cfg.blocking = 0;
	rc = cudaSetDevice(device) == cudaSuccess &&
	     cudaStreamCreateWithFlags(&n->own, cudaStreamNonBlocking) == cudaSuccess ?
		     LOOM_SUCCESS : LOOM_ERR_SYSTEM;
	n->stream = n->own;
	if (!all_ok(nat, rc == LOOM_SUCCESS)) {
		rc = rc ? rc : LOOM_ERR_SYSTEM;
		goto fail;
	}
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
	if (parent) {
		struct ncomm *pn = parent->impl;
		r = ncclCommSplit(pn->nc, color, key, &n->nc, &cfg);
		/* non-blocking: NCCL's thread initializes the child, fills in
		 * n->nc and only then takes the parent out of "in progress";
		 * the parent is settled first, so that the next call on it
		 * (another split, a collective) is not refused */
		if ((r == ncclSuccess || r == ncclInProgress) &&
		    (rc = nccl_settle(parent, r, "ncclCommSplit", deadline)))
			goto settled;
		(void)nat;
	} else
#endif
	{
		ncclUniqueId id;
		memset(&id, 0, sizeof id);
		(void)parent; (void)color; (void)key;
		rc = nat->rank == 0 && ncclGetUniqueId(&id) != ncclSuccess ? LOOM_ERR_SYSTEM : 0;
		if (!all_ok(nat, rc == 0)) {
			rc = rc ? rc : LOOM_ERR_SYSTEM;
			goto fail;
		}
		struct loom_opdesc bd = { LOOM_OP_BCAST, &id, &id, sizeof id, LOOM_INT8, LOOM_SUM, 0, 0 };
		rc = nat->be->coll(nat, &bd, NULL);
		if (rc)
			goto fail;
		r = ncclCommInitRankConfig(&n->nc, c->size, id, c->rank, &cfg);
	}
	if (r != ncclSuccess && r != ncclInProgress) {
		LOOM_ERR("comm %s: NCCL init: %s", c->name, ncclGetErrorString(r));
		rc = nccl_status(r);
		n->nc = NULL;
	} else {
		rc = nccl_settle(c, r, "NCCL init", deadline);
	}
settled: __attribute__((unused));
	if (!all_ok(nat, rc == LOOM_SUCCESS)) {
		rc = rc ? rc : LOOM_ERR_SYSTEM;
		goto fail;
	}
	LOOM_INFO("comm %s: NCCL %d ranks, device %d", c->name, c->size, device);
	if (parent) {
		struct ncomm *wn = ((struct ncomm *)parent->impl)->world->impl;
		n->world = ((struct ncomm *)parent->impl)->world;
		n->sib = wn->kids;
		wn->kids = c;
	} else {
		n->world = c;
	}
	*out = c;
	return LOOM_SUCCESS;
fail:
	if (n->nc)
		abort_async(n->nc);
	if (n->own)
		cudaStreamDestroy(n->own);
	free(n);
	free(c);
	return rc;
}

static void destroy(struct loom_comm *c, int free_nat)
{
	struct ncomm *n = c->impl;
	if (n->world && n->world != c) {
		struct ncomm *wn = n->world->impl;
		struct loom_comm **pp;
		for (pp = &wn->kids; *pp; pp = &((struct ncomm *)(*pp)->impl)->sib)
			if (*pp == c) {
				*pp = n->sib;
				break;
			}
	}
	if (n->nc) {
		double deadline = loom_now() + (c->timeout < 30 ? c->timeout : 30);
		ncclResult_t r = ncclCommFinalize(n->nc);
		if (nccl_settle(c, r, "ncclCommFinalize", deadline) == LOOM_SUCCESS && n->nc)
			ncclCommDestroy(n->nc);
	}
	cudaStreamDestroy(n->own);
	if (free_nat)
		loom_native_free(n->nat);
	free(n);
	free(c);
}

static int bx_split_named(struct loom_comm *c, int color, int key, struct loom_comm **out, int dup)
{
	struct ncomm *n;
	struct loom_comm *nat = NULL;
	int rc;
	if (!c || !out)
		return LOOM_ERR_INVALID;
	*out = NULL;
	if ((rc = atomic_load(&c->failed)))
		return rc;
	n = c->impl;
	n->nat->timeout = c->timeout;
	rc = dup ? loom_native_dup(n->nat, &nat) : loom_native_split(n->nat, color, key, &nat);
	if (rc)
		return rc;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
	{
		/* every member of c takes part in ncclCommSplit, also those
		 * with LOOM_UNDEFINED */
		ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
		ncclComm_t none = NULL;
		if (!nat) {
			ncclResult_t r;
			cfg.blocking = 0;
			r = ncclCommSplit(n->nc, NCCL_SPLIT_NOCOLOR, key, &none, &cfg);
			return nccl_settle(c, r, "ncclCommSplit", loom_now() + c->timeout);
		}
	}
	rc = make(nat, c, dup ? 0 : color, key, n->device, out);
#else
	if (!nat)
		return LOOM_SUCCESS;
	rc = make(nat, c, 0, 0, n->device, out);
#endif
	if (rc) {
		loom_native_free(nat);
		return rc;
	}
	n->nsplit++;
	return LOOM_SUCCESS;
}

static int bx_split(struct loom_comm *c, int color, int key, struct loom_comm **out)
{
	if (color < 0 && color != LOOM_UNDEFINED)
		return LOOM_ERR_INVALID;
	return bx_split_named(c, color, key, out, 0);
}

static int bx_dup(struct loom_comm *c, struct loom_comm **out)
{
	return bx_split_named(c, 0, c->rank, out, 1);
}

static int bx_free(struct loom_comm *c)
{
	destroy(c, 1);
	return LOOM_SUCCESS;
}

static int bx_abort(struct loom_comm *c)
{
	struct ncomm *n = c->impl;
	nabort(c, LOOM_ERR_ABORTED);
	return loom_native_abort(n->nat);  /* tells the peers through the native engine */
}

static int bx_set_stream(struct loom_comm *c, void *stream)
{
	struct ncomm *n = c->impl;
	n->stream = stream ? (cudaStream_t)stream : n->own;
	return LOOM_SUCCESS;
}

static int bx_device(const struct loom_comm *c)
{
	return ((const struct ncomm *)c->impl)->device;
}

static int bx_finalize(struct loom_comm *world)
{
	struct ncomm *n = world->impl;
	struct loom_comm *nat = n->nat;
	while (n->kids)
		destroy(n->kids, 1);
	destroy(world, 0);
	aborts_wait(ABORT_WAIT_S);
	return loom_native_finalize(nat);  /* frees every native comm derived from it */
}

static int pick_device(struct loom_comm *nat, int *dev, char *why, size_t cap)
{
	int count = 0;
	const char *lr = getenv("LOOM_LOCAL_DEVICE");
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count <= 0) {
		snprintf(why, cap, "no CUDA device (cudaGetDeviceCount: %s, %d devices)",
			 e == cudaSuccess ? "ok" : cudaGetErrorString(e), e == cudaSuccess ? count : 0);
		cudaGetLastError();
		return LOOM_ERR_UNSUPPORTED;
	}
	if (!lr || !*lr)
		lr = getenv("LOCAL_RANK");
	*dev = (lr && *lr ? atoi(lr) : nat->local_rank) % count;
	return LOOM_SUCCESS;
}

static int nccl_world(loom_comm_t **world)
{
	struct loom_comm *nat = NULL;
	char why[160] = "";
	int rc, dev = 0, ok;
	*world = NULL;
	rc = loom_native_backend.world(&nat);
	if (rc)
		return rc;
	rc = pick_device(nat, &dev, why, sizeof why);
	ok = all_ok(nat, rc == LOOM_SUCCESS);
	if (!ok) {
		if (rc)
			LOOM_ERR("LOOM_BACKEND=nccl: %s", why);
		else
			LOOM_ERR("LOOM_BACKEND=nccl: another rank has no CUDA device");
		loom_native_finalize(nat);
		return LOOM_ERR_UNSUPPORTED;
	}
	rc = make(nat, NULL, 0, 0, dev, world);
	if (rc) {
		loom_native_finalize(nat);
		return rc;
	}
	(*world)->is_world = 1;
	LOOM_INFO("world of %d ranks, backend nccl, device %d, timeout %g s", (*world)->size, dev,
		  (*world)->timeout);
	return LOOM_SUCCESS;
}

const struct loom_backend loom_nccl_backend = {
	.name = "nccl",
	.world = nccl_world,
	.coll = nccl_coll,
	.p2p = nccl_p2p,
	.wait = bx_wait,
	.test = bx_test,
	.split = bx_split,
	.dup = bx_dup,
	.free = bx_free,
	.abort = bx_abort,
	.finalize = bx_finalize,
	.set_stream = bx_set_stream,
	.device = bx_device,
};
