/* runtime/comm/comm_query.c: the node and metrics queries of
 * comm_query.h, read from the communicator's tables. */
#include "comm/comm.h"
#include "comm/comm_query.h"

int loom_comm_nnodes(const loom_comm_t *c)
{
	return c->nnodes;
}

int loom_comm_node_of(const loom_comm_t *c, int rank)
{
	return loom_comm_node_pos(c, rank);
}

int loom_comm_node_leader(const loom_comm_t *c, int node)
{
	return loom_comm_leader(c, node);
}

const char *loom_comm_node_name(const loom_comm_t *c, int rank)
{
	return c->w->node_names[loom_world_node_of(c->w, loom_comm_wrank(c, rank))];
}

struct loom_metrics *loom_comm_metrics(const loom_comm_t *c)
{
	return c->metrics;
}
