/* runtime/coll/plan.c: which algorithm a collective uses, from the transport
 * setting, the communicator's shape and the message size. Pure functions,
 * unit-tested (runtime/coll/test/plan.c). The one place that explains
 * why; docs/algorithms.md has the measured figures behind each limit.
 *
 * Cost of one operation on N ranks of b bytes, with a = the cost of one
 * message hop (a fast-box cache line: a tenth of a microsecond or so, a
 * shm ring slot: about one, TCP: tens, system calls and wake-ups) and
 * g = the cost of a byte:
 *
 *   fast boxes (coll_fbox.c)   a + N*b*g      one round; each rank reads all
 *   recursive doubling         log2(N)*(a + b*g)
 *   ring (reduce-scatter +     2(N-1)*a + 2*b*g*(N-1)/N   (bandwidth-optimal)
 *     allgather)
 *   lanes (L ranks per node on M nodes): node part + lane part, all L
 *     lanes on the network at once, each with b/L of the volume
 *
 * so, per size and shape:
 *
 *  - one node, shared memory (auto or shm), every rank's contribution
 *    <= LOOM_FBOX_BYTES (4 KiB; alltoall and reduce_scatter post N blocks):
 *    fast boxes, for every collective. At 2..8 ranks the N*b term is
 *    a few cache lines, and a is the smallest there is.
 *  - one node, from LOOM_DIRECT_BYTES (8 KiB) per rank buffer: direct
 *    reads of the peers' buffers (coll_direct.c), where the kernel
 *    allows them: a + b*g with a = three fast-box meetings and a few
 *    system calls, and each byte copied once, not through ring slots.
 *  - one node, reduce from 8 KiB while the root's peers' inputs add up
 *    to a ring slot (64 KiB) at most: each peer copies its input into a
 *    slot to the root and returns, the root reduces from the slots
 *    (coll_staged.c): a + b*g with a = no meeting, no system call, no
 *    barrier, against direct reads' three meetings and system calls.
 *    Beyond, the root's serial reduction of every peer's input costs
 *    more than the direct reads' parallel one.
 *  - one node, allreduce from LOOM_STAGED_REDUCE_BYTES (256 KiB) per
 *    rank, allgather and alltoall from LOOM_STAGED_COPY_BYTES (4 MiB) of
 *    result: through the shared ring slots chunk by chunk (coll_staged.c),
 *    the results written with streaming stores (an allreduce in place:
 *    cached ones, the lines being in cache already). Every byte is moved by
 *    user code the hardware prefetches, with no page pinning in the
 *    kernel, and a streaming store saves the read of each line it
 *    overwrites, which the kernel's copies into a peer's buffer cannot.
 *    Below those sizes the two ways are level or direct reads lead (their
 *    fixed cost is paid back once the bytes dominate). Those sizes go by
 *    direct reads after all where the ranks measure their cores'
 *    hand-offs slow (near.c: the cached slots lose to them there), which
 *    this pure plan does not see. A reduce from the same size runs that
 *    allreduce, the root keeping the result and the others writing
 *    theirs to a buffer kept per communicator, as across nodes: every
 *    rank reduces a block where direct reads make the root read and
 *    reduce every peer's input.
 *  - inside the node part of a hierarchical broadcast, from 4 KiB up to
 *    256 KiB: the rings' binomial tree, not direct reads. A ring send is
 *    eager, direct reads end in a barrier of the node's ranks, and these
 *    ranks also wait for TCP: a barrier a call is a wake-up of each.
 *  - across nodes with LOOM_TRANSPORT=auto and more than one rank on some
 *    node: hierarchical, because intra-node bytes are about ten times
 *    cheaper than TCP ones. Allreduce above LOOM_SMALL_BYTES, when every
 *    node holds as many ranks (L): "lanes": reduce-scatter in the node,
 *    each lane (one rank per node) allreduces its 1/L block across nodes,
 *    allgather in the node: each rank sends 2*(b/L)*(M-1)/M over TCP, no
 *    rank idles while a leader works. Up to LOOM_SMALL_BYTES the
 *    leaders alone: reduce in the node (fast boxes), the node leaders
 *    allreduce by recursive doubling over TCP, broadcast in the node.
 *    The same log2(M) TCP hops as every lane allreducing the node's
 *    result, plus one fast-box broadcast (a fraction of a microsecond),
 *    and L times fewer TCP messages, system calls and wake-ups a node.
 *    Reduce, where that large allreduce applies: the same allreduce, the
 *    root keeping the result, since the leaders' reduce has one leader
 *    per node carry every byte over TCP while the other ranks wait (an
 *    allgather in place of a gather costs the lanes nothing more, as
 *    each lane ring moves the same bytes). Nodes of different sizes,
 *    smaller reduces, and broadcast: reduce (or broadcast) in the node,
 *    the leaders over TCP, broadcast in the node.
 *  - otherwise flat: allreduce by recursive doubling up to LOOM_SMALL_BYTES
 *    (32 KiB: below it log2(N) hops beat 2(N-1)), the ring above; reduce
 *    by binomial tree / ring reduce-scatter + gather at the root;
 *    broadcast by binomial tree up to 64 KiB or on 2 ranks, a pipelined
 *    chain above (each byte crosses each link once); allgather and
 *    reduce_scatter by ring, alltoall pairwise, barrier by dissemination.
 *
 * Every choice depends only on values all ranks share (shape, size), so
 * all ranks pick the same one, and the reduction order is fixed by them:
 * bit-identical results across ranks and reruns. */
#include "coll/coll.h"

int loom_plan_fbox(int transport, int size, int nnodes, size_t post_bytes)
{
	return size > 1 && nnodes == 1 && transport != LOOM_TR_TCP && post_bytes <= LOOM_FBOX_BYTES;
}

int loom_plan_direct(int transport, int size, int nnodes, size_t bytes)
{
	return size > 1 && nnodes == 1 && transport != LOOM_TR_TCP && bytes >= LOOM_DIRECT_BYTES;
}

int loom_plan_staged(int transport, int size, int nnodes, size_t bytes, int reduces)
{
	return loom_plan_direct(transport, size, nnodes, bytes) &&
	       bytes >= (reduces ? LOOM_STAGED_REDUCE_BYTES : LOOM_STAGED_COPY_BYTES);
}

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
	if (loom_plan_fbox(transport, size, nnodes, bytes))
		return LOOM_ALG_FBOX;
	if (loom_plan_uses_hier(transport, size, nnodes, local_size_max))
		return LOOM_ALG_HIER;
	if (bytes <= LOOM_SMALL_BYTES || count < (size_t)size)
		return small_alg;
	return LOOM_ALG_RING;
}

int loom_plan_allreduce(int transport, int size, int nnodes, int local_size_max, size_t bytes,
			size_t count)
{
	if (size > 1 && loom_plan_uses_hier(transport, size, nnodes, local_size_max) &&
	    size == nnodes * local_size_max && bytes > LOOM_SMALL_BYTES && count >= (size_t)size)
		return LOOM_ALG_LANES_RS;
	if (loom_plan_direct(transport, size, nnodes, bytes) && count >= (size_t)size)
		return loom_plan_staged(transport, size, nnodes, bytes, 1) ? LOOM_ALG_STAGED
									: LOOM_ALG_DIRECT;
	return plan_reduction(LOOM_ALG_RD, transport, size, nnodes, local_size_max, bytes, count);
}

int loom_plan_reduce(int transport, int size, int nnodes, int local_size_max, size_t bytes,
		     size_t count)
{
	if (loom_plan_direct(transport, size, nnodes, bytes) && count >= (size_t)size) {
		if (loom_plan_staged(transport, size, nnodes, bytes, 1))
			return LOOM_ALG_STAGED;
		return (size_t)(size - 1) * bytes <= LOOM_SHM_SLOT_BYTES ? LOOM_ALG_SLOTS
									  : LOOM_ALG_DIRECT;
	}
	if (loom_plan_allreduce(transport, size, nnodes, local_size_max, bytes, count) ==
	    LOOM_ALG_LANES_RS)
		return LOOM_ALG_LANES_RS;
	return plan_reduction(LOOM_ALG_TREE, transport, size, nnodes, local_size_max, bytes, count);
}

/* the node part of a hierarchical broadcast (a communicator in one node) */
int loom_plan_bcast_node_part(int transport, int size, size_t bytes)
{
	if (size > 1 && transport != LOOM_TR_TCP && bytes > LOOM_FBOX_BYTES && bytes < 256 * 1024)
		return LOOM_ALG_TREE;
	return loom_plan_bcast(transport, size, 1, size, bytes);
}

int loom_plan_bcast(int transport, int size, int nnodes, int local_size_max, size_t bytes)
{
	if (size <= 1)
		return LOOM_ALG_TRIVIAL;
	if (loom_plan_fbox(transport, size, nnodes, bytes))
		return LOOM_ALG_FBOX;
	if (loom_plan_direct(transport, size, nnodes, bytes))
		return LOOM_ALG_DIRECT;
	if (loom_plan_uses_hier(transport, size, nnodes, local_size_max))
		return LOOM_ALG_HIER;
	if (bytes <= 2 * LOOM_SMALL_BYTES || size == 2)
		return LOOM_ALG_TREE;
	return LOOM_ALG_CHAIN;
}
