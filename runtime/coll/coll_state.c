/* runtime/coll/coll_state.c: a communicator's coll/ state (coll_state.h),
 * made at its first use and freed by comm/'s destroy path through the
 * destructor stored next to it: comm/ is below coll/ and may not call it
 * by name, and the node, leader and lane sub-communicators are made and
 * destroyed inside comm/, out of sight of the layers above. */
#include "coll/coll_state.h"

#include <stdlib.h>

static void state_free(struct loom_coll_state *s)
{
	free(s->scratch);
	free(s->direct_tmp);
	free(s->stage_tmp);
	free(s->reduce_out);
	free(s);
}

struct loom_coll_state *loom_coll_state_make(struct loom_comm *c)
{
	if (!c->coll && (c->coll = calloc(1, sizeof *c->coll)))
		c->coll_free = state_free;
	return c->coll;
}
