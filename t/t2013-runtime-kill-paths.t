#!/bin/sh
# Kill -9 inside each path of a collective (docs/fault-tolerance.md,
# "Tested paths"): both ranks of a node (6 ranks on 3 nodes) kill
# themselves 0 to 3 ms after entering an allreduce whose size and LOOM_*
# settings choose the path the survivors are in (docs/algorithms.md):
# fast boxes (8 B, hierarchical), direct reads in the node with the
# leaders over TCP (16 KiB), ring slots (1 MiB, LOOM_STAGED=1) and direct
# reads (1 MiB, LOOM_STAGED=0) in the node with the lanes over TCP, and
# TCP segments (9 MiB, LOOM_TRANSPORT=tcp). The survivors see the loss,
# agree on the same failed set, shrink, and every sum after is right.
# Then: a rank killed before its node's shared memory is first mapped
# (iteration 0): its node-mate sees PEER_LOST, not a LOOM_TIMEOUT and
# NOMEM (it watches its node-mates while it waits); a second failure
# during the agreement, and one during the shrink. Every srun is bounded
# (t_srun) and every wait by LOOM_TIMEOUT=60: a hang fails the test.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
LOOM_TEST_NODES=3
export LOOM_TEST_NODES
test_need_cluster
cluster_plugstack none
FT=$LOOM_BUILD_DIR/t/runtime/ft-check

# inside ENV BYTES WHAT: the last node's ranks die inside an allreduce
inside() {
	it=$(( $(loom_rand 9) + 1 )) && echo "iteration $it, $3" &&
	{ ( export "$1"; LOOM_TIMEOUT=60 env_srun -N3 -n6 -- $FT inside 4,5 $it $2 ) >$TEST_TMP/o 2>&1 || :; } &&
	cat $TEST_TMP/o &&
	test "$(grep -c ': dying inside iteration' $TEST_TMP/o)" -eq 2 &&
	survived $TEST_TMP/o 4 4,5
}

test_expect_success 'fast boxes (8 B): both ranks of a node killed inside; 4 go on' '
	inside LOOM_STAGED=auto 8 "fast boxes"
'
test_expect_success 'direct reads in the node, leaders over TCP (16 KiB): killed inside; 4 go on' '
	inside LOOM_DIRECT_READS=1 16384 "direct reads"
'
test_expect_success 'ring slots and lanes (1 MiB, LOOM_STAGED=1): killed inside; 4 go on' '
	inside LOOM_STAGED=1 1048576 "staged slots"
'
test_expect_success 'direct reads and lanes (1 MiB, LOOM_STAGED=0): killed inside; 4 go on' '
	inside LOOM_STAGED=0 1048576 "direct reads, lanes"
'
test_expect_success 'TCP segments (9 MiB, LOOM_TRANSPORT=tcp): killed inside; 4 go on' '
	inside LOOM_TRANSPORT=tcp 9437184 "TCP segments"
'
test_expect_success 'a rank killed before its node shared memory is mapped: its node-mate sees PEER_LOST' '
	{ LOOM_TIMEOUT=60 env_srun -N2 -n4 -- $FT kill 1 0 >$TEST_TMP/o 2>&1 || :; } &&
	survived $TEST_TMP/o 3 1 &&
	grep -Eq "^rank 0: iter 0: status -(5|13)\$" $TEST_TMP/o &&
	! grep -q "status -2\$" $TEST_TMP/o
'
test_expect_success 'a second rank dies during the agreement; the survivors agree on both' '
	it=$(( $(loom_rand 19) + 1 )) && echo "iteration $it" &&
	{ LOOM_TIMEOUT=60 env_srun -N3 -n6 -- $FT kill 4,5 $it 1 >$TEST_TMP/o 2>&1 || :; } &&
	survived $TEST_TMP/o 3 1,4,5 4
'
# rank 1 agrees with the others (its agree line is printed), then dies
# as they shrink: the shrink's own agreement leaves it out
test_expect_success 'a second rank dies during the shrink; the shrunk world leaves it out' '
	it=$(( $(loom_rand 19) + 1 )) && echo "iteration $it" &&
	{ LOOM_TIMEOUT=60 env_srun -N3 -n6 -- $FT kill 4,5 $it - 1 >$TEST_TMP/o 2>&1 || :; } &&
	cat $TEST_TMP/o &&
	test "$(grep -c ": agree: flag 1 failed 4,5\$" $TEST_TMP/o)" -eq 4 &&
	test "$(grep -Ec ": shrunk: rank [0-9]+ of 3 sum [0-9]+ want [0-9]+ ok\$" $TEST_TMP/o)" -eq 3 &&
	test "$(grep -Ec ": split: .* ok\$" $TEST_TMP/o)" -eq 3 &&
	test "$(grep -Ec ": dup: rank [0-9]+ of 3 sum .* ok\$" $TEST_TMP/o)" -eq 3 &&
	test "$(grep -Ec ": mesh-dp: .* ok\$" $TEST_TMP/o)" -eq 3 &&
	test "$(grep -c ": done\$" $TEST_TMP/o)" -eq 3 &&
	! grep -q "^rank 1: shrunk" $TEST_TMP/o &&
	! grep -E "FAIL|WRONG" $TEST_TMP/o
'
test_done
