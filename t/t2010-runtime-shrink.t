#!/bin/sh
# Surviving lost ranks on the live cluster (docs/fault-tolerance.md): a
# rank, or both ranks of a node, killed with SIGKILL at a random
# iteration of allreduces (from the second; a rank lost before its node's
# shared memory is first mapped is t2013's case); the survivors see
# PEER_LOST or REVOKED, revoke the world, agree (every survivor prints
# the same flag and failed set), shrink, and an allreduce and a split's
# allreduce on the new communicator give the right sums; a dup of the
# world and the mesh's data-parallel group, made before the failure,
# shrink too. A second rank killed as the others enter the agreement; a
# revoke alone. LOOM_TIMEOUT=60 bounds every wait and t_srun the run: a
# hang fails, it never passes.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
LOOM_TEST_NODES=3
export LOOM_TEST_NODES
test_need_cluster
cluster_plugstack none
FT=$LOOM_BUILD_DIR/t/runtime/ft-check

for tr in auto tcp; do
	test_expect_success "4 ranks / 2 nodes ($tr): kill -9 of rank 1, the 3 others shrink" "
		it=\$(( \$(loom_rand 39) + 1 )) && echo \"iteration \$it\" &&
		{ LOOM_TRANSPORT=$tr LOOM_TIMEOUT=60 env_srun -N2 -n4 -- \$FT kill 1 \$it >\$TEST_TMP/o 2>&1 || :; } &&
		survived \$TEST_TMP/o 3 1
	"
done
test_expect_success '4 ranks / 2 nodes: both ranks of a node killed, the other node goes on' '
	it=$(( $(loom_rand 39) + 1 )) && echo "iteration $it" &&
	{ LOOM_TIMEOUT=60 env_srun -N2 -n4 -- $FT kill 2,3 $it >$TEST_TMP/o 2>&1 || :; } &&
	survived $TEST_TMP/o 2 2,3
'
test_expect_success '6 ranks / 3 nodes: both ranks of the last node killed, 4 go on' '
	it=$(( $(loom_rand 39) + 1 )) && echo "iteration $it" &&
	{ LOOM_TIMEOUT=60 env_srun -N3 -n6 -- $FT kill 4,5 $it >$TEST_TMP/o 2>&1 || :; } &&
	survived $TEST_TMP/o 4 4,5
'
test_expect_success '6 ranks / 3 nodes: a node of the middle killed, 4 go on' '
	it=$(( $(loom_rand 39) + 1 )) && echo "iteration $it" &&
	{ LOOM_TIMEOUT=60 env_srun -N3 -n6 -- $FT kill 2,3 $it >$TEST_TMP/o 2>&1 || :; } &&
	survived $TEST_TMP/o 4 2,3
'
# rank 3 kills itself 50 ms after its revoke, as the others agree: it is
# in the agreed failed set with rank 1 on every survivor
test_expect_success '6 ranks / 3 nodes: a second rank dies as the others enter the agreement' '
	it=$(( $(loom_rand 39) + 1 )) && echo "iteration $it" &&
	{ LOOM_TIMEOUT=60 env_srun -N3 -n6 -- $FT kill 1 $it 3 >$TEST_TMP/o 2>&1 || :; } &&
	survived $TEST_TMP/o 4 1,3 5
'
test_expect_success '4 ranks / 2 nodes: a revoke alone: the others see REVOKED, nobody failed' '
	LOOM_TIMEOUT=60 ranks_pass 4 ": done\$" env_srun -N2 -n4 -- $FT revoke 2 5 &&
	grep -q "rank 2: revoked: 0" $TEST_TMP/o &&
	test "$(grep -Ec ": iter 5: status -13\$" $TEST_TMP/o)" -eq 3 &&
	test "$(grep -c ": agree: flag 1 failed none\$" $TEST_TMP/o)" -eq 4 &&
	test "$(grep -Ec ": shrunk: rank [0-9] of 4 sum 10 want 10 ok\$" $TEST_TMP/o)" -eq 4 &&
	grep -q "communicator world revoked by rank 2" $TEST_TMP/o
'
test_done
