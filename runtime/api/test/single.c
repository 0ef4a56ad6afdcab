/* unit test: a world of size 1 (no RANK/WORLD_SIZE/PMIx): every call of
 * loom.h does what it says, in place and out of place, every dtype. */
#include "config.h"
#include "loom.h"
#include "../../../t/tap.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

static void fill(void *buf, size_t n, loom_dtype_t dt, int seed)
{
	for (size_t i = 0; i < n; i++) {
		int v = (int)((i * 7 + (size_t)seed) % 50) - 20;
		switch (dt) {
		case LOOM_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
		case LOOM_INT32: ((int32_t *)buf)[i] = v * 1000; break;
		case LOOM_INT64: ((int64_t *)buf)[i] = (int64_t)v << 40; break;
		case LOOM_FLOAT16: ((uint16_t *)buf)[i] = (uint16_t)(0x3c00 + v); break;
		case LOOM_BFLOAT16: ((uint16_t *)buf)[i] = (uint16_t)(0x3f80 + v); break;
		case LOOM_FLOAT32: ((float *)buf)[i] = (float)v * 0.25f; break;
		case LOOM_FLOAT64: ((double *)buf)[i] = v * 0.125; break;
		default: break;
		}
	}
}

int main(void)
{
	loom_comm_t *w = NULL, *s = NULL, *d = NULL, *u = (loom_comm_t *)1;
	loom_mesh_t m;
	loom_request_t *rq;
	size_t n = 1000;
	int done, rc;

	unsetenv("RANK"); unsetenv("WORLD_SIZE"); unsetenv("PMIX_RANK");
	unsetenv("LOOM_BACKEND"); unsetenv("LOOM_TRANSPORT");
	plan(NO_PLAN);
	is_int(loom_init(&w), LOOM_SUCCESS, "loom_init forms a world without any launcher");
	if (!w) {
		done_testing();
		return exit_status();
	}
	is_int(loom_comm_rank(w), 0, "rank 0");
	is_int(loom_comm_size(w), 1, "size 1");
	is_int(loom_comm_local_rank(w), 0, "local rank 0");
	is_int(loom_comm_local_size(w), 1, "local size 1");
	is_str(loom_comm_name(w), "world", "the world is called world");
	is_int(loom_comm_set_name(w, "everyone"), 0, "set_name");
	is_str(loom_comm_name(w), "everyone", "name is copied");
	is_int(loom_comm_set_timeout(w, 5), 0, "set_timeout");
	is_int(loom_comm_set_timeout(w, -1), LOOM_ERR_INVALID, "negative timeout refused");
	is_int(loom_comm_rank(NULL), -1, "rank of NULL is -1");

	for (int dt = 0; dt < LOOM_DTYPE_COUNT; dt++) {
		size_t es = loom_dtype_size(dt);
		char *a = malloc(n * es), *b = malloc(n * es), *c = malloc(n * es);
		int bad = 0;
		fill(a, n, dt, dt);
		for (int op = 0; op < LOOM_OP_COUNT; op++) {
			memset(b, 0x55, n * es);
			rc = loom_allreduce(a, b, n, dt, op, w);
			bad += rc != 0 || memcmp(a, b, n * es) != 0;
			memcpy(c, a, n * es);
			rc = loom_allreduce(c, c, n, dt, op, w);
			bad += rc != 0 || memcmp(a, c, n * es) != 0;
			memset(b, 0x55, n * es);
			rc = loom_reduce(a, b, n, dt, op, 0, w);
			bad += rc != 0 || memcmp(a, b, n * es) != 0;
			memset(b, 0x55, n * es);
			rc = loom_reduce_scatter(a, b, n, dt, op, w);
			bad += rc != 0 || memcmp(a, b, n * es) != 0;
		}
		ok(bad == 0, "%s: allreduce/reduce/reduce_scatter on one rank copy, every op, in place too",
		   loom_dtype_name(dt));
		memset(b, 0, n * es);
		ok(loom_broadcast(a, b, n, dt, 0, w) == 0 && !memcmp(a, b, n * es), "%s: broadcast copies",
		   loom_dtype_name(dt));
		memset(b, 0, n * es);
		ok(loom_allgather(a, b, n, dt, w) == 0 && !memcmp(a, b, n * es), "%s: allgather copies",
		   loom_dtype_name(dt));
		memset(b, 0, n * es);
		ok(loom_alltoall(a, b, n, dt, w) == 0 && !memcmp(a, b, n * es), "%s: alltoall copies",
		   loom_dtype_name(dt));
		memcpy(c, a, n * es);
		ok(loom_alltoall(c, c, n, dt, w) == 0 && !memcmp(a, c, n * es), "%s: alltoall in place",
		   loom_dtype_name(dt));
		free(a); free(b); free(c);
	}
	{
		int32_t x = 7, y = 0;
		is_int(loom_allreduce(&x, &y, 0, LOOM_INT32, LOOM_SUM, w), 0, "count 0 is fine");
		is_int(y, 0, "count 0 touches nothing");
		is_int(loom_allreduce(&x, &y, 1, 99, LOOM_SUM, w), LOOM_ERR_INVALID, "bad dtype refused");
		is_int(loom_allreduce(&x, &y, 1, LOOM_INT32, 99, w), LOOM_ERR_INVALID, "bad op refused");
		is_int(loom_allreduce(&x, &y, 1, LOOM_INT32, LOOM_SUM, NULL), LOOM_ERR_INVALID,
		       "NULL comm refused");
		is_int(loom_broadcast(&x, &y, 1, LOOM_INT32, 1, w), LOOM_ERR_INVALID, "root out of range refused");
		/* counts whose bytes pass half the address space, or wrap it */
		is_int(loom_allreduce(&x, &y, SIZE_MAX / 8 + 1, LOOM_INT32, LOOM_SUM, w),
		       LOOM_ERR_INVALID, "a count of more than SIZE_MAX/2 bytes refused");
		is_int(loom_allreduce(&x, &y, SIZE_MAX / 2, LOOM_INT64, LOOM_SUM, w), LOOM_ERR_INVALID,
		       "a count whose bytes wrap size_t refused");
		is_int(loom_broadcast(&x, &y, SIZE_MAX, LOOM_INT8, 0, w), LOOM_ERR_INVALID,
		       "a count of SIZE_MAX bytes refused");
		is_int(loom_barrier(w), 0, "barrier");
		is_int(loom_send(&x, 1, LOOM_INT32, 0, w), 0, "send to self");
		is_int(loom_recv(&y, 1, LOOM_INT32, 0, w), 0, "recv from self");
		is_int(y, 7, "self message arrives");
		is_int(loom_send(&x, 1, LOOM_INT32, 1, w), LOOM_ERR_INVALID, "send to rank 1 of 1 refused");
		x = 41;
		is_int(loom_irecv(&y, 1, LOOM_INT32, 0, w, &rq), 0, "irecv posted first");
		{
			loom_request_t *sq;
			is_int(loom_isend(&x, 1, LOOM_INT32, 0, w, &sq), 0, "isend");
			is_int(loom_wait(sq), 0, "isend completes");
		}
		is_int(loom_wait(rq), 0, "irecv completes");
		is_int(y, 41, "irecv got the isend's value");
	}
	{
		float in[3] = { 1, 2, 3 }, out[3] = { 0 };
		is_int(loom_iallreduce(in, out, 3, LOOM_FLOAT32, LOOM_AVG, w, &rq), 0, "iallreduce starts");
		is_int(loom_wait(rq), 0, "wait returns its status");
		ok(out[0] == 1 && out[1] == 2 && out[2] == 3, "AVG over one rank is the value");
		is_int(loom_ibarrier(w, &rq), 0, "ibarrier starts");
		done = 0;
		for (int k = 0; k < 10000 && !done; k++) {
			rc = loom_test(rq, &done);
			if (!done)
				usleep(100);
		}
		ok(done && rc == 0, "loom_test reports completion");
		is_int(loom_ibroadcast(in, out, 3, LOOM_FLOAT32, 0, w, &rq), 0, "ibroadcast");
		is_int(loom_wait(rq), 0, "ibroadcast done");
		is_int(loom_ireduce(in, out, 3, LOOM_FLOAT32, LOOM_MAX, 0, w, &rq), 0, "ireduce");
		is_int(loom_wait(rq), 0, "ireduce done");
		is_int(loom_iallgather(in, out, 3, LOOM_FLOAT32, w, &rq), 0, "iallgather");
		is_int(loom_wait(rq), 0, "iallgather done");
		is_int(loom_ireduce_scatter(in, out, 3, LOOM_FLOAT32, LOOM_MIN, w, &rq), 0, "ireduce_scatter");
		is_int(loom_wait(rq), 0, "ireduce_scatter done");
		is_int(loom_ialltoall(in, out, 3, LOOM_FLOAT32, w, &rq), 0, "ialltoall");
		is_int(loom_wait(rq), 0, "ialltoall done");
		ok(out[2] == 3, "results land");
		rq = (loom_request_t *)1;
		is_int(loom_iallreduce(in, out, 3, 77, LOOM_SUM, w, &rq), LOOM_ERR_INVALID, "bad i-call refused");
		ok(rq == NULL, "and gives no request");
		is_int(loom_wait(NULL), LOOM_ERR_INVALID, "wait(NULL) refused");
	}
	is_int(loom_comm_split(w, 3, 0, &s), 0, "split");
	ok(s && loom_comm_size(s) == 1 && loom_comm_rank(s) == 0, "split of one is one");
	is_int(loom_comm_split(w, LOOM_UNDEFINED, 0, &u), 0, "split with LOOM_UNDEFINED");
	ok(u == NULL, "LOOM_UNDEFINED gives NULL");
	is_int(loom_comm_dup(w, &d), 0, "dup");
	ok(d && d != w && loom_comm_size(d) == 1, "dup is a new communicator");
	{
		int32_t x = 5, y = 0;
		ok(loom_allreduce(&x, &y, 1, LOOM_INT32, LOOM_SUM, d) == 0 && y == 5, "dup works");
	}
	is_int(loom_comm_free(s), 0, "free split");
	is_int(loom_comm_free(d), 0, "free dup");
	is_int(loom_comm_free(w), LOOM_ERR_INVALID, "world is freed by finalize only");
	is_int(loom_mesh(w, 2, 1, 1, &m), LOOM_ERR_INVALID, "mesh dp*tp*pp != size refused");
	is_int(loom_mesh(w, 1, 1, 1, &m), 0, "mesh 1x1x1");
	ok(m.dp && m.tp && m.pp && m.dp_size == 1 && m.tp_index == 0 && loom_comm_size(m.tp) == 1,
	   "mesh gives three communicators of one");
	is_int(loom_mesh_free(&m), 0, "mesh_free");
	is_int(loom_comm_device(w), -1, "a native comm has no CUDA device");
	is_int(loom_comm_device(NULL), -1, "nor does a NULL comm");
	ok(loom_backend_built(LOOM_BACKEND_NATIVE) && loom_backend_built(LOOM_BACKEND_AUTO),
	   "native and auto are always built");
#ifdef HAVE_MPI
	is_int(loom_backend_built(LOOM_BACKEND_MPI), 1, "mpi built, as configure found");
#else
	is_int(loom_backend_built(LOOM_BACKEND_MPI), 0, "mpi not built, as configure found");
#endif
#ifdef HAVE_NCCL
	is_int(loom_backend_built(LOOM_BACKEND_NCCL), 1, "nccl built, as configure found");
#else
	is_int(loom_backend_built(LOOM_BACKEND_NCCL), 0, "nccl not built, as configure found");
#endif
	is_int(loom_backend_built((loom_backend_t)42), 0, "an unknown backend is not built");
#ifndef HAVE_MPI  /* with MPI: runtime/test/backend_mpi_world.c, t/t6*.t */
	is_int(loom_init_backend(LOOM_BACKEND_MPI, &s), LOOM_ERR_UNSUPPORTED, "mpi backend: not built");
#endif
#ifndef HAVE_NCCL  /* with NCCL: t/t6010-backend-nccl.t */
	is_int(loom_init_backend(LOOM_BACKEND_NCCL, &s), LOOM_ERR_UNSUPPORTED, "nccl backend: not built");
#endif
	{
		loom_comm_t *c2 = NULL;
		is_int(loom_comm_abort(w), 0, "abort");
		int32_t x = 1, y;
		is_int(loom_allreduce(&x, &y, 1, LOOM_INT32, LOOM_SUM, w), LOOM_ERR_ABORTED,
		       "an aborted comm fails every later op");
		is_int(loom_comm_dup(w, &c2), LOOM_ERR_ABORTED, "even splits");
	}
	is_int(loom_finalize(w), 0, "finalize");
	done_testing();
	return exit_status();
}
