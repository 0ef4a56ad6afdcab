#!/bin/sh
# loom-hello, the first program a newcomer runs: what loom.so gave each
# rank, how libloom formed the world, a checked allreduce, a checkpoint
# round trip when LOOM_CKPT_DIR is set, one PASS line.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
HELLO=$LOOM_BUILD_DIR/examples/loom-hello

test_expect_success 'one process without srun: a world of one, formed "single"' '
	env -u RANK -u WORLD_SIZE -u PMIX_RANK -u LOOM_CKPT_DIR "$HELLO" >"$TEST_TMP/one" 2>&1 &&
	cat "$TEST_TMP/one" &&
	grep -q "^  rank 0/1 local 0/1 .*| world native via single, peers none$" "$TEST_TMP/one" &&
	grep -qx "PASS: loom-hello, 1 ranks" "$TEST_TMP/one"
'

test_need_plugin
test_need_cluster
cluster_plugstack ""

test_expect_success '-N2 -n4: one line per rank, in rank order, with what loom.so wrote' '
	timeout 120 srun -N2 -n4 "$HELLO" >"$TEST_TMP/h" 2>&1 && cat "$TEST_TMP/h" &&
	grep -q "^loom [0-9.]* (plugin [0-9.]*, env torch): 4 ranks$" "$TEST_TMP/h" &&
	grep "^  rank " "$TEST_TMP/h" | cut -d" " -f4-8 >"$TEST_TMP/ids" &&
	printf "%s\n" "0/4 local 0/2 node n1" "1/4 local 1/2 node n1" \
		"2/4 local 0/2 node n2" "3/4 local 1/2 node n2" >"$TEST_TMP/want" &&
	diff "$TEST_TMP/want" "$TEST_TMP/ids" &&
	test $(grep -c "master n1:[0-9][0-9]* | world native via env, peers shm:1 tcp:2$" "$TEST_TMP/h") = 4 &&
	grep -q "^allreduce: 1048576 float32 over 4 ranks in [0-9.]* ms: every element as expected$" "$TEST_TMP/h" &&
	grep -q "^checkpoint: skipped (LOOM_CKPT_DIR unset" "$TEST_TMP/h" &&
	test "$(tail -n 1 "$TEST_TMP/h")" = "PASS: loom-hello, 4 ranks"
'

test_expect_success '--mpi=pmix --loom-ckpt: formed by PMIx, checkpoint saved and restored' '
	mkdir -p "$TEST_TMP/ck" &&
	timeout 120 srun --mpi=pmix -N2 -n4 --loom-ckpt="$TEST_TMP/ck" "$HELLO" >"$TEST_TMP/p" 2>&1 &&
	cat "$TEST_TMP/p" &&
	test $(grep -c "| world native via pmix, peers shm:1 tcp:2$" "$TEST_TMP/p") = 4 &&
	grep -q "^checkpoint: saved and restored step 1 in $TEST_TMP/ck in " "$TEST_TMP/p" &&
	test -e "$TEST_TMP/ck/latest" &&
	test "$(tail -n 1 "$TEST_TMP/p")" = "PASS: loom-hello, 4 ranks"
'

test_expect_success 'a checkpoint directory that is a file: FAIL, non-zero exit, naming it' '
	: >"$TEST_TMP/notadir" &&
	! timeout 120 srun -N2 -n2 --export=ALL,LOOM_CKPT_DIR="$TEST_TMP/notadir" "$HELLO" \
		>"$TEST_TMP/f" 2>&1 &&
	cat "$TEST_TMP/f" &&
	grep -q "notadir" "$TEST_TMP/f" &&
	grep -q "loom-hello: rank [01]: checkpoint save: " "$TEST_TMP/f" &&
	! grep -q "^PASS" "$TEST_TMP/f"
'
test_done
