#!/bin/sh
# examples/tp_linear.c (loom-tp-linear): column- then row-parallel linear
# layers over loom_mesh's TP group equal the serial matmul (Y exactly, Z
# within the fp32 summation bound).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"

test_expect_success '--help states the tolerance' '
	loom-tp-linear --help | grep -q "Z within 2\*hidden\*FLT_EPSILON"
'
test_expect_success 'a bad --hidden is refused' '
	test_must_fail_with "loom-tp-linear: --hidden: 0 is out of range" loom-tp-linear --hidden 0
'
test_expect_success 'a --tp that does not divide the world is refused' '
	test_must_fail_with "--tp 2 does not divide the world size 1" loom-tp-linear --tp 2
'
test_expect_success 'one process (tp 1): matches the serial matmul' '
	loom-tp-linear --iters 2 >"$TEST_TMP/one" && cat "$TEST_TMP/one" &&
	grep -q "PASS: column-parallel Y equals the serial Y bit for bit" "$TEST_TMP/one"
'

test_need_cluster

test_expect_success '-N2 -n4, dp 2 x tp 2: output equals the serial matmul' '
	srun --mpi=pmix -N2 -n4 loom-tp-linear --tp 2 >"$TEST_TMP/tp.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/tp.out"; test $rc = 0 &&
	grep -q "4 ranks: dp 2 x tp 2" "$TEST_TMP/tp.out" &&
	grep -q "pass 10/10: Y == serial" "$TEST_TMP/tp.out" &&
	grep -q "PASS: column-parallel Y equals the serial Y bit for bit; row-parallel Z" "$TEST_TMP/tp.out"
'
test_expect_success '-N2 -n4, tp 4 across both nodes: output equals the serial matmul' '
	srun --mpi=pmix -N2 -n4 loom-tp-linear --tp 4 --batch 12 --hidden 96 >"$TEST_TMP/tp4.out" 2>&1 \
		&& rc=0 || rc=$?; cat "$TEST_TMP/tp4.out"; test $rc = 0 &&
	grep -q "dp 1 x tp 4" "$TEST_TMP/tp4.out" && grep -q "PASS: " "$TEST_TMP/tp4.out"
'
test_expect_success '-N2 -n4: a batch that does not split over tp is refused' '
	test_must_fail_with "--batch 6 is not a multiple of --tp 4" \
		srun --mpi=pmix -N2 -n4 loom-tp-linear --tp 4 --batch 6
'
test_done
