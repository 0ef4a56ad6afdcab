/* runtime/backend.c: the backend-independent calls of loom.h's backend
 * section (always built, whatever configure found). */
#include "loom_internal.h"

const char *loom_comm_backend(const loom_comm_t *c)
{
	if (!c)
		return NULL;
	return c->bx ? c->bx->name : c->ops->name;
}

int loom_comm_set_stream(loom_comm_t *c, void *stream)
{
	if (!c)
		return LOOM_ERR_INVALID;
	if (!c->bx || !c->bx->set_stream)
		return LOOM_ERR_UNSUPPORTED;
	return c->bx->set_stream(c, stream);
}
