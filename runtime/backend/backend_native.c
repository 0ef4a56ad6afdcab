/* runtime/backend/backend_native.c: the native backend (shared memory inside a
 * node, TCP between nodes, loom's own algorithms) as one instance of the
 * backend interface. */
#include "backend/backend.h"

/* the world of boot/world.c, run by this backend */
static int native_world(struct loom_comm **world)
{
	int rc = loom_native_world(world);
	if (rc == LOOM_SUCCESS)
		(*world)->be = &loom_native_backend;
	return rc;
}

const struct loom_backend loom_native_backend = {
	.name = "native",
	.world = native_world,
	.coll = loom_native_coll,
	.p2p = loom_native_p2p,
	.split = loom_native_split,
	.dup = loom_native_dup,
	.free = loom_native_free,
	.abort = loom_native_abort,
	.finalize = loom_native_finalize,
	.revoke = loom_native_revoke,
	.agree = loom_native_agree,
	.shrink = loom_native_shrink,
	.grow = loom_native_grow,
};
