/* runtime/backend.h: what the MPI and NCCL backends (backend_*.c) share
 * with each other and with their unit tests. Not installed.
 *
 * A communicator of such a backend is a struct loom_comm whose be points
 * at the backend's instance of struct loom_backend (loom_internal.h) and
 * whose impl holds the backend's own state; the public layer calls be for
 * every operation, as it does for the native backend.
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
