/* runtime/core/comm_fence.c: the fence around an agreement
 * (docs/fault-tolerance.md). A member the survivors agreed failed is out
 * of the world for good, whatever it does later: each survivor's engine
 * fences its world rank (a fence notice if its connection is still up,
 * the connection closed, its later hellos declined), so a member that
 * was only stopped and comes back (SIGCONT) reaches none of them. The
 * shrink's communicator has a context of its own (the old one mixed
 * with the agreement's number) and no fenced member in it, so nothing of
 * the old communicator can match an operation of the new one. A process
 * that fenced itself (it was silent long enough to be counted failed,
 * or a fence notice came) takes part in no agreement: LOOM_ERR_REVOKED. */
#include "core/core.h"

int loom_native_fenced(struct loom_comm *c)
{
	if (!loom_tcp_fenced(c->w->eng))
		return LOOM_SUCCESS;
	LOOM_ERR("comm %s: this rank is fenced (counted failed by the others): no agreement",
		 c->name);
	return LOOM_ERR_REVOKED;
}

void loom_native_fence_failed(struct loom_comm *c)
{
	int k;
	for (k = 0; k < c->ft_nfailed; k++)
		loom_tcp_fence(c->w->eng, loom_comm_wrank(c, c->ft_failed[k]));
}
