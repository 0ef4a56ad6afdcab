/* runtime/backend.h: what the MPI and NCCL backends (backend_*.c) share
 * with each other and with their unit tests. Not installed.
 *
 * A communicator of such a backend is a struct loom_comm with ops (the
 * blocking collectives and point to point), bx (the rest: non-blocking,
 * requests, split/dup/free/abort, finalize, streams) and impl (the
 * backend's own state). The public functions of the native files
 * dispatch to bx when it is set; a native communicator has bx == NULL.
 */
#ifndef LOOM_BACKEND_H
#define LOOM_BACKEND_H

#include "config.h"
#ifdef HAVE_MPI
#include <mpi.h>  /* before loom.h: declares loom_comm_from_mpi */
#endif
#include "loom_internal.h"

#ifdef HAVE_MPI
/* The MPI status of an MPI error class, as a loom status. */
int loom_mpi_class_status(int mpi_error_class);
/* The reduction function the backend registers for a 16-bit float dtype
 * and op (AVG: the SUM function); NULL for anything else. */
MPI_User_function *loom_mpi_user_fn(loom_dtype_t dtype, loom_op_t op);
#endif

#endif
