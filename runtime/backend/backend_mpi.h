/* runtime/backend/backend_mpi.h: what the two files of the MPI backend
 * share (backend_mpi.c: requests, collectives, point to point, background
 * progress; backend_mpi_comm.c: communicators and worlds, and the backend
 * table over both). backend_mpi_comm.c calls backend_mpi.c, never the
 * reverse. Not installed. */
#ifndef LOOM_BACKEND_MPI_H
#define LOOM_BACKEND_MPI_H

#include "backend/backend.h"

enum { TAG_P2P = 1, TAG_ABORT = 2 };
enum { MP2P_SEND = 100, MP2P_RECV };

/* ---- process-wide state ---- */
extern pthread_mutex_t loom_mpi_mu;  /* guards the two below */
extern int loom_mpi_users;           /* live worlds, own and adopted */
extern int loom_mpi_we_inited;       /* MPI_Init_thread was ours: MPI_Finalize is ours too */

/* With less than MPI_THREAD_MULTIPLE every MPI call of the backend holds
 * this lock (a request may be polled by a progress caller while another
 * thread starts an operation). */
extern pthread_mutex_t loom_mpi_call;
extern int loom_mpi_lock;
#define LK() do { if (loom_mpi_lock) pthread_mutex_lock(&loom_mpi_call); } while (0)
#define UL() do { if (loom_mpi_lock) pthread_mutex_unlock(&loom_mpi_call); } while (0)

struct mcomm {
	MPI_Comm comm;         /* collectives, point to point */
	MPI_Comm ctl;          /* abort notices */
	MPI_Request abort_rq;  /* posted receive of an abort notice */
	int abort_msg;
	unsigned long long seq, nsplit;
	int own_world;         /* world created by loom_init (w is ours) */
};

/* background progress (backend_mpi.c); loom_mpi_mu held */
void loom_mpi_progress_start(int provided);
void loom_mpi_progress_stop(void);
/* the operations (backend_mpi.c): struct loom_backend's coll, p2p,
 * wait and test */
int loom_mpi_coll(struct loom_comm *c, const struct loom_opdesc *d, loom_request_t **req);
int loom_mpi_p2p(struct loom_comm *c, int is_send, void *buf, size_t count, loom_dtype_t dt,
		 int peer, loom_request_t **req);
int loom_mpi_wait(void *impl);
int loom_mpi_test(void *impl, int *done);
/* the communicator entries (backend_mpi_comm.c) */
int loom_mpi_world(struct loom_comm **world);
int loom_mpi_split(struct loom_comm *c, int color, int key, struct loom_comm **out);
int loom_mpi_dup(struct loom_comm *c, struct loom_comm **out);
int loom_mpi_free(struct loom_comm *c);
int loom_mpi_abort(struct loom_comm *c);
int loom_mpi_finalize(struct loom_comm *world);

#endif
