/* unit test: which algorithm each collective uses (coll/plan.c), and the
 * block partition the ring algorithms rely on. */
#include "config.h"
#include "coll/coll.h"
#include "../../../t/tap.h"

/* which algorithm, by shape and size (plan.c) */
static void plans(void)
{
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 1, 1, 1, 1 << 20, 1 << 18), LOOM_ALG_TRIVIAL, "size 1: nothing to do");
	/* hierarchical: auto, several nodes, some node with more than one rank */
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 4, 2, 2, 8, 2), LOOM_ALG_HIER, "auto, 2 nodes x 2, small: node reduce, the leaders, node broadcast");
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 4, 2, 2, LOOM_SMALL_BYTES, LOOM_SMALL_BYTES / 4), LOOM_ALG_HIER, "auto, 2 nodes x 2, at the small size: the leaders");
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 4, 2, 2, 1 << 20, 1 << 18), LOOM_ALG_LANES_RS, "auto, 2 nodes x 2, large: node reduce-scatter, lanes, node allgather");
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 8, 2, 4, 64 << 20, 16 << 20), LOOM_ALG_LANES_RS, "auto, 2 nodes x 4, large: lanes");
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 4, 2, 2, LOOM_SMALL_BYTES + 4, 3), LOOM_ALG_HIER, "fewer elements than ranks is small: the leaders, not the lanes");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 4, 2, 2, 1 << 20, 1 << 18), LOOM_ALG_LANES_RS, "large reduce across equal nodes: the lanes allreduce");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 5, 2, 3, 1 << 20, 1 << 18), LOOM_ALG_HIER, "large reduce across unequal nodes: hierarchical");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 4, 2, 2, 4096, 1024), LOOM_ALG_HIER, "small reduce across nodes: hierarchical, not the lanes allreduce");
	/* fast boxes: one node, shared memory, the posted bytes fit a box */
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 2, 1, 2, 8, 2), LOOM_ALG_FBOX, "one node, 8 B: fast boxes");
	is_int(loom_plan_allreduce(LOOM_TR_SHM, 8, 1, 8, LOOM_FBOX_BYTES, LOOM_FBOX_BYTES / 4), LOOM_ALG_FBOX, "one node, a full box: fast boxes");
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 2, 1, 2, LOOM_FBOX_BYTES + 4, LOOM_FBOX_BYTES / 4 + 1), LOOM_ALG_RD, "one node, above a box: recursive doubling");
	is_int(loom_plan_allreduce(LOOM_TR_TCP, 2, 1, 2, 8, 2), LOOM_ALG_RD, "LOOM_TRANSPORT=tcp: never fast boxes");
	/* larger, one node: direct reads up to 256 KiB, the staged slots with
	 * streaming stores from there */
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 2, 1, 2, 128 << 10, 32 << 10), LOOM_ALG_DIRECT, "one node, 128 KiB: direct reads");
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 2, 1, 2, LOOM_STAGED_REDUCE_BYTES - 4, LOOM_STAGED_REDUCE_BYTES / 4 - 1), LOOM_ALG_DIRECT, "one node, just below the staged size: direct reads");
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 2, 1, 2, 1 << 20, 1 << 18), LOOM_ALG_STAGED, "one node, 1 MiB: staged through the slots");
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 2, 1, 2, 64 << 20, 16 << 20), LOOM_ALG_STAGED, "one node, 64 MiB: staged through the slots");
	is_int(loom_plan_allreduce(LOOM_TR_SHM, 4, 1, 4, LOOM_STAGED_REDUCE_BYTES, LOOM_STAGED_REDUCE_BYTES / 4), LOOM_ALG_STAGED, "LOOM_TRANSPORT=shm, at the staged size: staged");
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 8, 1, 8, LOOM_STAGED_REDUCE_BYTES, 7), LOOM_ALG_RD, "one node, fewer elements than ranks: never staged or direct");
	is_int(loom_plan_allreduce(LOOM_TR_TCP, 2, 1, 2, 64 << 20, 16 << 20), LOOM_ALG_RING, "LOOM_TRANSPORT=tcp, 64 MiB: the ring, never shared memory");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 2, 1, 2, 64 << 20, 16 << 20), LOOM_ALG_STAGED, "one node, 64 MiB reduce: the staged allreduce, the root keeping the result");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 2, 1, 2, LOOM_STAGED_REDUCE_BYTES, LOOM_STAGED_REDUCE_BYTES / 4), LOOM_ALG_STAGED, "one node, reduce at the staged size: the staged allreduce");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 2, 1, 2, LOOM_STAGED_REDUCE_BYTES - 4, LOOM_STAGED_REDUCE_BYTES / 4 - 1), LOOM_ALG_DIRECT, "one node, reduce just below the staged size: direct reads");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 2, 1, 2, 8 << 10, 2 << 10), LOOM_ALG_SLOTS, "one node, 8 KiB reduce: the peer's input in a slot to the root");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 2, 1, 2, LOOM_SHM_SLOT_BYTES, LOOM_SHM_SLOT_BYTES / 4), LOOM_ALG_SLOTS, "one node, 2 ranks, a slot's worth: slots");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 2, 1, 2, LOOM_SHM_SLOT_BYTES + 4, LOOM_SHM_SLOT_BYTES / 4 + 1), LOOM_ALG_DIRECT, "one node, 2 ranks, above a slot: direct reads");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 8, 1, 8, 16 << 10, 4 << 10), LOOM_ALG_DIRECT, "one node, 8 ranks, 16 KiB: the root would reduce 112 KiB alone: direct reads");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 8, 1, 8, 8 << 10, 2 << 10), LOOM_ALG_SLOTS, "one node, 8 ranks, 8 KiB: slots");
	is_int(loom_plan_reduce(LOOM_TR_TCP, 2, 1, 2, 8 << 10, 2 << 10), LOOM_ALG_TREE, "LOOM_TRANSPORT=tcp, 8 KiB reduce: the tree");
	ok(!loom_plan_staged(LOOM_TR_AUTO, 2, 1, LOOM_STAGED_COPY_BYTES - 1, 0), "one node, allgather or alltoall result just below 4 MiB: direct reads");
	ok(loom_plan_staged(LOOM_TR_AUTO, 2, 1, LOOM_STAGED_COPY_BYTES, 0), "one node, 4 MiB allgather or alltoall result: staged");
	ok(loom_plan_staged(LOOM_TR_AUTO, 2, 1, 64u << 20, 0), "one node, 64 MiB allgather or alltoall result: staged");
	ok(!loom_plan_staged(LOOM_TR_AUTO, 4, 2, 64u << 20, 0), "two nodes: never staged");
	ok(!loom_plan_staged(LOOM_TR_TCP, 2, 1, 64u << 20, 0), "LOOM_TRANSPORT=tcp: never staged");
	is_int(loom_plan_bcast(LOOM_TR_AUTO, 4, 1, 4, 64), LOOM_ALG_FBOX, "one node, small broadcast: fast boxes");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 4, 1, 4, 64, 16), LOOM_ALG_FBOX, "one node, small reduce: fast boxes");
	ok(!loom_plan_fbox(LOOM_TR_AUTO, 4, 2, 8), "two nodes: no fast boxes");
	ok(loom_plan_fbox(LOOM_TR_AUTO, 4, 1, 0), "one node, barrier: fast boxes");
	is_int(loom_plan_allreduce(LOOM_TR_AUTO, 3, 2, 2, 1 << 20, 1 << 18), LOOM_ALG_HIER, "auto, 2+1 ranks: hierarchical (no lanes: nodes differ)");
	ok(!loom_plan_uses_hier(LOOM_TR_AUTO, 2, 2, 1), "one rank per node: flat");
	ok(!loom_plan_uses_hier(LOOM_TR_AUTO, 4, 1, 4), "one node: flat (all shm)");
	ok(!loom_plan_uses_hier(LOOM_TR_TCP, 4, 2, 2), "LOOM_TRANSPORT=tcp: flat");
	ok(!loom_plan_uses_hier(LOOM_TR_SHM, 4, 2, 2), "LOOM_TRANSPORT=shm: flat, shm wherever possible");
	/* flat: size decides */
	is_int(loom_plan_allreduce(LOOM_TR_TCP, 4, 2, 2, 8, 2), LOOM_ALG_RD, "small: recursive doubling");
	is_int(loom_plan_allreduce(LOOM_TR_TCP, 4, 2, 2, LOOM_SMALL_BYTES, LOOM_SMALL_BYTES / 4), LOOM_ALG_RD, "at the threshold: recursive doubling");
	is_int(loom_plan_allreduce(LOOM_TR_TCP, 4, 2, 2, LOOM_SMALL_BYTES + 4, LOOM_SMALL_BYTES / 4 + 1), LOOM_ALG_RING, "above: ring");
	is_int(loom_plan_allreduce(LOOM_TR_SHM, 5, 1, 5, 1 << 20, 3), LOOM_ALG_RD, "fewer elements than ranks: recursive doubling");
	is_int(loom_plan_reduce(LOOM_TR_TCP, 4, 2, 2, 64, 16), LOOM_ALG_TREE, "small reduce: binomial tree");
	is_int(loom_plan_reduce(LOOM_TR_TCP, 4, 2, 2, 1 << 20, 1 << 18), LOOM_ALG_RING, "large reduce: reduce-scatter + gather");
	is_int(loom_plan_reduce(LOOM_TR_AUTO, 4, 2, 2, 64, 16), LOOM_ALG_HIER, "reduce across nodes: hierarchical");
	is_int(loom_plan_bcast(LOOM_TR_TCP, 4, 2, 2, 64), LOOM_ALG_TREE, "small broadcast: binomial tree");
	is_int(loom_plan_bcast(LOOM_TR_TCP, 4, 2, 2, 1 << 20), LOOM_ALG_CHAIN, "large broadcast: pipelined chain");
	is_int(loom_plan_bcast(LOOM_TR_TCP, 2, 2, 1, 1 << 20), LOOM_ALG_TREE, "two ranks: a direct send");
	is_int(loom_plan_bcast_node_part(LOOM_TR_AUTO, 2, 32 << 10), LOOM_ALG_TREE, "a node's part of a hierarchical broadcast, 32 KiB: the rings, no closing barrier");
	is_int(loom_plan_bcast_node_part(LOOM_TR_AUTO, 2, 64), LOOM_ALG_FBOX, "the node's part, 64 B: fast boxes");
	is_int(loom_plan_bcast_node_part(LOOM_TR_AUTO, 2, 1 << 20), LOOM_ALG_DIRECT, "the node's part, 1 MiB: direct reads");
	is_int(loom_plan_bcast(LOOM_TR_AUTO, 4, 2, 2, 1 << 20), LOOM_ALG_HIER, "broadcast across nodes: hierarchical");
}

/* the blocks the ring algorithms split a buffer into */
static void blocks(void)
{
	size_t cnt;
	int n;

	for (n = 1; n <= 7; n++)
		for (cnt = 0; cnt <= 20; cnt++) {
			size_t sum = 0;
			int i, good = 1;
			for (i = 0; i < n; i++) {
				good &= loom_blk_off(cnt, n, i) == sum;
				sum += loom_blk_cnt(cnt, n, i);
				good &= loom_blk_cnt(cnt, n, i) + 1 >= loom_blk_cnt(cnt, n, 0);
			}
			if (!good || sum != cnt) {
				ok(0, "blocks of %zu over %d tile it", cnt, n);
				n = 99;
				break;
			}
		}
	ok(n != 99 + 1, "blocks tile every count 0..20 over 1..7 ranks, sizes differ by at most one");
	is_int(loom_mod(-1, 4), 3, "mod of a negative");
}

/* near.c: LOOM_STAGED, and where the measured hand-off stops being near */
static void near(void)
{
	is_int(loom_staged_mode_parse(NULL), LOOM_STAGED_AUTO, "LOOM_STAGED unset: measure");
	is_int(loom_staged_mode_parse(""), LOOM_STAGED_AUTO, "LOOM_STAGED empty: measure");
	is_int(loom_staged_mode_parse("auto"), LOOM_STAGED_AUTO, "LOOM_STAGED=auto: measure");
	is_int(loom_staged_mode_parse("1"), LOOM_STAGED_ALWAYS, "LOOM_STAGED=1: the slots");
	is_int(loom_staged_mode_parse("0"), LOOM_STAGED_NEVER, "LOOM_STAGED=0: direct reads");
	is_int(loom_staged_mode_parse("stream"), LOOM_STAGED_STREAM, "LOOM_STAGED=stream: streamed slots");
	is_int(loom_staged_mode_parse("yes"), -1, "LOOM_STAGED=yes: refused");
	is_int(loom_staged_mode_parse("10"), -1, "LOOM_STAGED=10: refused");
	ok(loom_cached_slots(196, 0), "the slowest near placement seen (196 ns) writes the slots cached");
	ok(!loom_cached_slots(282, 0), "the fastest far placement seen (282 ns) streams them");
	ok(!loom_cached_slots(5000, 0), "far, whatever the time: streamed");
	ok(loom_cached_slots(1700, 1), "ranks sharing a CPU (1.7 us a hand-off) keep cached stores");
	ok(loom_look_unsure(7600, 0, 0), "7.6 us on CPUs of their own: a rank was kept off its CPU, look again");
	ok(loom_look_unsure(7600, 0, 2), "and again a third time");
	ok(!loom_look_unsure(7600, 0, 3), "a fourth such look is taken as it is: streamed");
	ok(!loom_look_unsure(441, 0, 0), "the slowest far placement seen (441 ns) is taken at once");
	ok(!loom_look_unsure(1700, 1, 0), "ranks sharing a CPU (1.7 us) are taken at once");
	/* when the ranks look again: the first call, 64 calls, or 256 MiB */
	ok(loom_near_due(0, 0), "the first large call looks");
	ok(!loom_near_due(63, 63 * 256 * 1024), "63 allreduces of 256 KiB: no look yet");
	ok(loom_near_due(64, 64 * 256 * 1024), "the 65th of 256 KiB looks");
	ok(!loom_near_due(3, 3ull * 64 * 1024 * 1024), "3 of 64 MiB: no look yet");
	ok(loom_near_due(4, 4ull * 64 * 1024 * 1024), "the 5th of 64 MiB looks (256 MiB since)");
	{
		int32_t two[] = { 0, 0 }, apart[] = { 0, 1, 3 }, three[] = { 1, 0, 1 }, unknown[] = { -1, -1 };
		ok(loom_cpus_shared(two, 2), "2 ranks on CPU 0 share it");
		ok(!loom_cpus_shared(apart, 3), "CPUs 0, 1, 3: none shared");
		ok(loom_cpus_shared(three, 3), "CPUs 1, 0, 1: shared");
		ok(!loom_cpus_shared(unknown, 2), "unknown CPUs are not taken as shared");
		ok(!loom_cpus_shared(two, 1), "one rank shares nothing");
	}
}

int main(void)
{
	plan(NO_PLAN);
	plans();
	blocks();
	near();
	done_testing();
	return exit_status();
}
