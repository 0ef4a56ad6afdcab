/* runtime/api/backend.c: the backend-independent calls of loom.h's backend
 * section (always built, whatever configure found). */
#include "backend/backend.h"

#include <string.h>

const char *loom_comm_backend(const loom_comm_t *c)
{
	if (!c)
		return NULL;
	return c->be->name;
}

const char *loom_comm_bootstrap(const loom_comm_t *c)
{
	if (!c || !c->w)
		return NULL;
	/* the MPI backend's world is MPI's; w->how there is prose for logs */
	return !strcmp(c->be->name, "mpi") ? "mpi" : c->w->how;
}

const char *loom_comm_peer_transport(const loom_comm_t *c, int peer)
{
	if (!c || peer < 0 || peer >= c->size)
		return NULL;
	if (c->be != &loom_native_backend)
		return c->be->name;
	if (peer == c->rank)
		return "self";
	return loom_comm_uses_shm(c, peer) ? "shm" : "tcp";
}

int loom_comm_set_stream(loom_comm_t *c, void *stream)
{
	if (!c)
		return LOOM_ERR_INVALID;
	if (!c->be->set_stream)
		return LOOM_ERR_UNSUPPORTED;
	return c->be->set_stream(c, stream);
}

int loom_comm_device(const loom_comm_t *c)
{
	if (!c || !c->be->device)
		return -1;
	return c->be->device(c);
}

int loom_backend_built(loom_backend_t b)
{
	switch (b) {
	case LOOM_BACKEND_AUTO:
	case LOOM_BACKEND_NATIVE:
		return 1;
#ifdef HAVE_MPI
	case LOOM_BACKEND_MPI:
		return 1;
#endif
#ifdef HAVE_NCCL
	case LOOM_BACKEND_NCCL:
		return 1;
#endif
	default:
		return 0;
	}
}
