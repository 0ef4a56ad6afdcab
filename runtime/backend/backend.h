/* runtime/backend/backend.h: what the MPI and NCCL backends (backend_*.c) share
 * with each other and with their unit tests. Not installed.
 *
 * A communicator of such a backend is a struct loom_comm whose be points
 * at the backend's instance of struct loom_backend (comm/comm.h) and
 * whose impl holds the backend's own state; the public layer calls be for
 * every operation, as it does for the native backend.
 */
#ifndef LOOM_BACKEND_H
#define LOOM_BACKEND_H

#include "config.h"
#ifdef HAVE_MPI
#include <mpi.h>  /* before loom.h: declares loom_comm_from_mpi */
#endif
#include "boot/boot.h"

extern const struct loom_backend loom_native_backend;
#ifdef HAVE_MPI
extern const struct loom_backend loom_mpi_backend;   /* backend_mpi_comm.c */
#endif
#ifdef HAVE_NCCL
extern const struct loom_backend loom_nccl_backend;  /* backend_nccl.c */
#endif

#ifdef HAVE_MPI
/* The MPI status of an MPI error class, as a loom status. */
int loom_mpi_class_status(int mpi_error_class);
/* The reduction function the backend registers for a 16-bit float dtype
 * and op (AVG: the SUM function); NULL for anything else. */
MPI_User_function *loom_mpi_user_fn(loom_dtype_t dtype, loom_op_t op);
/* An MPI return code as a loom status, with one log line naming what
 * failed on comm c (NULL: none). */
int loom_mpi_status(const struct loom_comm *c, const char *what, int code);
MPI_Datatype loom_mpi_type(loom_dtype_t dtype);
MPI_Op loom_mpi_op(loom_dtype_t dtype, loom_op_t op);  /* 16-bit: the user ops */
/* the user ops: made when the first world is, freed with the last */
int loom_mpi_ops_create(void);
void loom_mpi_ops_free(void);
#endif

#endif
