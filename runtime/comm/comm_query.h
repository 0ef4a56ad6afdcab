/* runtime/comm/comm_query.h: the little that layers on the public API
 * (ckpt/) ask of a communicator beyond loom.h: which node each rank is
 * on, and the communicator's metrics. On the opaque loom_comm_t, so that
 * they need not see struct loom_comm (comm.h). */
#ifndef LOOM_COMM_QUERY_H
#define LOOM_COMM_QUERY_H

#include "loom.h"

struct loom_metrics;

/* the nodes the communicator's ranks are on */
int loom_comm_nnodes(const loom_comm_t *c);
/* rank's node: 0 .. nnodes - 1, in the order of the nodes' lowest ranks */
int loom_comm_node_of(const loom_comm_t *c, int rank);
/* the lowest rank on node (loom_comm_node_of's numbering) */
int loom_comm_node_leader(const loom_comm_t *c, int node);
/* the name of rank's host, as the world's bootstrap saw it */
const char *loom_comm_node_name(const loom_comm_t *c, int rank);
/* the metrics of the communicator (NULL before its first public operation) */
struct loom_metrics *loom_comm_metrics(const loom_comm_t *c);

#endif
