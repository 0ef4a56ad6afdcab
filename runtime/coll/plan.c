/* runtime/coll/plan.c: which algorithm a collective uses, from the transport
 * setting, the communicator's shape and the message size. Pure functions,
 * unit-tested (runtime/test/plan.c).
 *
 *  - hierarchical (reduce in the node over shm, leaders over TCP,
 *    broadcast in the node) when LOOM_TRANSPORT=auto, ranks span more than
 *    one node and some node holds more than one of them;
 *  - else flat: allreduce by recursive doubling up to LOOM_SMALL_BYTES (or
 *    when there are fewer elements than ranks), ring reduce-scatter +
 *    allgather above; reduce by binomial tree / ring reduce-scatter +
 *    gather; broadcast by binomial tree / pipelined chain. */
#include "coll/coll.h"

int loom_plan_uses_hier(int transport, int size, int nnodes, int local_size_max)
{
	return transport == LOOM_TR_AUTO && size > 2 && nnodes > 1 && local_size_max > 1;
}

/* reductions: hierarchical across nodes, small (or fewer elements than
 * ranks) by small_alg, else the bandwidth-optimal ring */
static int plan_reduction(int small_alg, int transport, int size, int nnodes, int local_size_max,
			  size_t bytes, size_t count)
{
	if (size <= 1)
		return LOOM_ALG_TRIVIAL;
	if (loom_plan_uses_hier(transport, size, nnodes, local_size_max))
		return LOOM_ALG_HIER;
	if (bytes <= LOOM_SMALL_BYTES || count < (size_t)size)
		return small_alg;
	return LOOM_ALG_RING;
}

int loom_plan_allreduce(int transport, int size, int nnodes, int local_size_max, size_t bytes,
			size_t count)
{
	return plan_reduction(LOOM_ALG_RD, transport, size, nnodes, local_size_max, bytes, count);
}

int loom_plan_reduce(int transport, int size, int nnodes, int local_size_max, size_t bytes,
		     size_t count)
{
	return plan_reduction(LOOM_ALG_TREE, transport, size, nnodes, local_size_max, bytes, count);
}

int loom_plan_bcast(int transport, int size, int nnodes, int local_size_max, size_t bytes)
{
	if (size <= 1)
		return LOOM_ALG_TRIVIAL;
	if (loom_plan_uses_hier(transport, size, nnodes, local_size_max))
		return LOOM_ALG_HIER;
	if (bytes <= 2 * LOOM_SMALL_BYTES || size == 2)
		return LOOM_ALG_TREE;
	return LOOM_ALG_CHAIN;
}
