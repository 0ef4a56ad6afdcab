#!/bin/sh
# loom-dp-train --heal on the live cluster (docs/fault-tolerance.md): 6
# ranks on 3 nodes; both ranks of one node die by SIGKILL at a random
# step; the 4 survivors revoke, shrink, restore the newest checkpoint on
# the shrunk world (from the shared directory, or from the node caches
# and partner copies) and finish; their final parameters are
# bit-identical to an uninterrupted run's and to rank 0's serial replay.
# LOOM_TIMEOUT=60 bounds every wait and t_srun the run: a hang fails.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
LOOM_TEST_NODES=3
export LOOM_TEST_NODES
test_need_cluster
cluster_plugstack none
DP=$LOOM_BUILD_DIR/examples/loom-dp-train
ARGS="--heal --steps 40 --hidden 32 --ckpt-every 5 --log-every 10 --step-ms 20"

# digest FILE: the final parameters' checksum rank 0 printed
digest() {
	sed -n 's/.*final parameters: fnv1a64 \([0-9a-f]*\) .*/\1/p' "$1"
}

test_expect_success '6 ranks / 3 nodes, uninterrupted: PASS against the serial replay' '
	mkdir -p "$TEST_TMP/ref" &&
	LOOM_TIMEOUT=60 env_srun -N3 -n6 -- $DP $ARGS --ckpt "$TEST_TMP/ref" >$TEST_TMP/ref.out 2>&1 &&
	cat $TEST_TMP/ref.out &&
	grep -q "PASS: loss curve and final parameters bit-identical" $TEST_TMP/ref.out &&
	grep -q "after 40 steps on 6 ranks (0 heals)" $TEST_TMP/ref.out &&
	test -n "$(digest $TEST_TMP/ref.out)"
'
test_expect_success 'one process gives the same parameters (the rank count does not matter)' '
	$DP $ARGS --step-ms 0 >$TEST_TMP/one.out 2>&1 &&
	test "$(digest $TEST_TMP/one.out)" = "$(digest $TEST_TMP/ref.out)"
'
# heal_run NAME KILLED [FIRST]: kill the ranks KILLED (a node's two) at a
# random step from FIRST (default 3) to 34
heal_run() {
	local first=${3:-3}
	mkdir -p "$TEST_TMP/$1" &&
	st=$(( first + $(loom_rand $((35 - first))) )) && echo "kill $2 at step $((st + 1))" &&
	{ LOOM_TIMEOUT=60 env_srun -N3 -n6 -- $DP $ARGS --ckpt "$TEST_TMP/$1" \
		--kill-at $st:$2 >$TEST_TMP/$1.out 2>&1 || :; } &&
	cat $TEST_TMP/$1.out &&
	grep -q "heal: .* at step [0-9]*; ranks $2 of 6 lost; 4 ranks go on" $TEST_TMP/$1.out &&
	grep -q "heal: restored step [0-9]* on the 4 survivors" $TEST_TMP/$1.out &&
	grep -q "PASS: loss curve and final parameters bit-identical" $TEST_TMP/$1.out &&
	grep -q "after 40 steps on 4 ranks (1 heals)" $TEST_TMP/$1.out &&
	test "$(digest $TEST_TMP/$1.out)" = "$(digest $TEST_TMP/ref.out)"
}
test_expect_success '6 ranks / 3 nodes: the last node killed at a random step, 4 finish bit-identical' '
	heal_run last 4,5
'
test_expect_success '6 ranks / 3 nodes: the middle node killed, 4 finish bit-identical' '
	heal_run middle 2,3
'
test_expect_success 'with LOOM_CKPT_CACHE, killed after the first checkpoint: the survivors restore from the node caches' '
	LOOM_CKPT_CACHE="$TEST_TMP/cache-%n" && export LOOM_CKPT_CACHE &&
	heal_run cached 4,5 7 &&
	grep -q "ckpt: restored step-[0-9]* from the node caches" $TEST_TMP/cached.out
'
test_done
