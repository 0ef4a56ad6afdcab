/* runtime/backend_native.c: the native backend (shared memory inside a
 * node, TCP between nodes, loom's own algorithms) as one instance of the
 * backend interface. */
#include "loom_internal.h"

const struct loom_backend loom_native_backend = {
	.name = "native",
	.world = loom_native_world,
	.coll = loom_native_coll,
	.p2p = loom_native_p2p,
	.split = loom_native_split,
	.dup = loom_native_dup,
	.free = loom_native_free,
	.abort = loom_native_abort,
	.finalize = loom_native_finalize,
};
