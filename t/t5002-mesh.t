#!/bin/sh
# examples/mesh.c (loom-mesh): every data/tensor/pipeline group of
# loom_mesh has the members the layout formula of loom.h gives.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"

test_expect_success '--help names the layout formula' '
	loom-mesh --help | grep -qF "rank = (pp_index * dp + dp_index) * tp + tp_index"
'
test_expect_success 'a malformed --shape is refused' '
	test_must_fail_with "loom-mesh: --shape: expected DPxTPxPP .*got .2x2." loom-mesh --shape 2x2
'
test_expect_success 'a shape that does not fit the world is refused' '
	test_must_fail_with "--shape 2x2x1 needs 4 ranks, the world has 1" loom-mesh --shape 2x2x1
'
test_expect_success 'one process: the 1x1x1 mesh' '
	loom-mesh >"$TEST_TMP/one" && cat "$TEST_TMP/one" &&
	grep -q "PASS: 1x1x1" "$TEST_TMP/one"
'

test_need_cluster

test_expect_success '-N2 -n4: 2x2x1 and 1x2x2 groups match the formula' '
	srun --mpi=pmix -N2 -n4 loom-mesh >"$TEST_TMP/mesh.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/mesh.out" && test $rc = 0 &&
	grep -q "PASS: 2x2x1: " "$TEST_TMP/mesh.out" &&
	grep -q "PASS: 1x2x2: " "$TEST_TMP/mesh.out" &&
	grep -q "PASS: 2 of 2 shapes checked" "$TEST_TMP/mesh.out"
'
# the groups as loom.h draws them, written out independently of the program
test_expect_success '-N2 -n4 2x2x1: printed groups are the ones loom.h describes' '
	sed -n "/= 2x2x1/,/= 1x2x2/p" "$TEST_TMP/mesh.out" >"$TEST_TMP/a" &&
	grep -q "dp groups: {0,2} {1,3}\$" "$TEST_TMP/a" &&
	grep -q "tp groups: {0,1} {2,3}\$" "$TEST_TMP/a" &&
	grep -q "pp groups: {0} {1} {2} {3}\$" "$TEST_TMP/a"
'
test_expect_success '-N2 -n4 1x2x2: printed groups are the ones loom.h describes' '
	sed -n "/= 1x2x2/,\$p" "$TEST_TMP/mesh.out" >"$TEST_TMP/b" &&
	grep -q "dp groups: {0} {1} {2} {3}\$" "$TEST_TMP/b" &&
	grep -q "tp groups: {0,1} {2,3}\$" "$TEST_TMP/b" &&
	grep -q "pp groups: {0,2} {1,3}\$" "$TEST_TMP/b"
'
test_expect_success '-N2 -n4: other shapes on request (4x1x1, 1x1x4, 1x4x1)' '
	srun --mpi=pmix -N2 -n4 loom-mesh --shape 4x1x1 --shape 1x1x4 --shape 1x4x1 >"$TEST_TMP/o2" 2>&1 \
		&& rc=0 || rc=$?; cat "$TEST_TMP/o2"; test $rc = 0 &&
	grep -q "PASS: 3 of 3 shapes checked" "$TEST_TMP/o2" &&
	grep -q "pp groups: {0,1,2,3}\$" "$TEST_TMP/o2"
'
test_expect_success '-N2 -n4: a shape for 6 ranks is refused' '
	test_must_fail_with "needs 6 ranks, the world has 4" srun --mpi=pmix -N2 -n4 loom-mesh --shape 3x2x1
'
test_done
