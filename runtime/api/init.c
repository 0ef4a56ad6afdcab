/* runtime/api/init.c: loom_init and loom_finalize: which backend forms the
 * world (LOOM_BACKEND), and its finalize. */
#include "backend/backend.h"
#include "flight/flight.h"
#include "metrics/metrics.h"

#include <stdlib.h>
#include <string.h>

int loom_init_backend(loom_backend_t backend, loom_comm_t **world)
{
	const struct loom_backend *be = NULL;
	loom_log_init();
	if (!world)
		return LOOM_ERR_INVALID;
	*world = NULL;
	if (backend == LOOM_BACKEND_AUTO) {
		const char *e = getenv("LOOM_BACKEND");
		if (!e || !*e || !strcmp(e, "auto") || !strcmp(e, "native"))
			backend = LOOM_BACKEND_NATIVE;
		else if (!strcmp(e, "mpi"))
			backend = LOOM_BACKEND_MPI;
		else if (!strcmp(e, "nccl"))
			backend = LOOM_BACKEND_NCCL;
		else {
			LOOM_ERR("LOOM_BACKEND=%s: expected native, mpi, nccl or auto", e);
			return LOOM_ERR_INVALID;
		}
	}
	if (backend == LOOM_BACKEND_NATIVE)
		be = &loom_native_backend;
#ifdef HAVE_MPI
	if (backend == LOOM_BACKEND_MPI)
		be = &loom_mpi_backend;
#endif
#ifdef HAVE_NCCL
	if (backend == LOOM_BACKEND_NCCL)
		be = &loom_nccl_backend;
#endif
	if (!be && (backend == LOOM_BACKEND_MPI || backend == LOOM_BACKEND_NCCL)) {
		LOOM_ERR("the %s backend is not built into this libloom (configure found no %s)",
			 backend == LOOM_BACKEND_MPI ? "mpi" : "nccl",
			 backend == LOOM_BACKEND_MPI ? "MPI" : "NCCL");
		return LOOM_ERR_UNSUPPORTED;
	}
	if (!be)
		return LOOM_ERR_INVALID;
	return be->world(world);
}

int loom_init(loom_comm_t **world)
{
	return loom_init_backend(LOOM_BACKEND_AUTO, world);
}

int loom_finalize(loom_comm_t *world)
{
	int rc;
	if (!world || !world->is_world)
		return LOOM_ERR_INVALID;
	/* the record tells a rank stuck in teardown from one that never got there */
	loom_flight_finalized(1);
	rc = world->be->finalize(world);
	loom_flight_finalized(2);
	/* the job's metrics file goes with it (LOOM_METRICS_KEEP=1 keeps it) */
	loom_metrics_finish();
	return rc;
}
