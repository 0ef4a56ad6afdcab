#!/bin/sh
# examples/matmul_io.c (loom-matmul-io): a matrix written and read back
# with two-phase I/O, multiplied in parallel, the product written back;
# both files equal the serial computation.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"

test_expect_success '--help describes the two-phase I/O' '
	loom-matmul-io --help | grep -q "two-phase reader"
'
test_expect_success 'a --dir that does not exist is refused' '
	test_must_fail_with "loom-matmul-io: --dir /nonexistent/x: not a directory" \
		loom-matmul-io --dir /nonexistent/x
'
test_expect_success 'a bad --n is refused' '
	test_must_fail_with "--n: expected an integer, got .big." loom-matmul-io --n big
'
test_expect_success 'one process: files equal the serial product' '
	mkdir -p "$TEST_TMP/one" &&
	loom-matmul-io --n 200 --k 8 --buffer-kb 16 --dir "$TEST_TMP/one" --keep >"$TEST_TMP/one.out" &&
	cat "$TEST_TMP/one.out" &&
	grep -q "PASS: " "$TEST_TMP/one.out" &&
	test $(stat -c %s "$TEST_TMP/one/loom-matmul-A.bin") -eq $((200 * 200 * 4)) &&
	test $(stat -c %s "$TEST_TMP/one/loom-matmul-C.bin") -eq $((200 * 8 * 4))
'

test_need_cluster

test_expect_success '-N2 -n4: two aggregators, several rounds, bit-identical files' '
	mkdir -p "$TEST_TMP/four" &&
	srun --mpi=pmix -N2 -n4 loom-matmul-io --n 1000 --k 16 --buffer-kb 256 \
		--dir "$TEST_TMP/four" >"$TEST_TMP/mm.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/mm.out"; test $rc = 0 &&
	grep -q "4 ranks, 2 aggregators (one per node)" "$TEST_TMP/mm.out" &&
	grep -q "two-phase read: round 8/8 done" "$TEST_TMP/mm.out" &&
	grep -q "PASS: A read back by the two-phase reader equals what was written" "$TEST_TMP/mm.out" &&
	! test -e "$TEST_TMP/four/loom-matmul-A.bin"
'
test_expect_success '-N2 -n3: rows that do not split evenly, one round' '
	mkdir -p "$TEST_TMP/three" &&
	srun --mpi=pmix -N2 -n3 loom-matmul-io --n 301 --k 7 --dir "$TEST_TMP/three" >"$TEST_TMP/mm3.out" 2>&1 \
		&& rc=0 || rc=$?; cat "$TEST_TMP/mm3.out"; test $rc = 0 && grep -q "PASS: " "$TEST_TMP/mm3.out"
'
test_expect_success '-N2 -n4: a file that cannot be created fails with exit 1, naming it' '
	mkdir -p "$TEST_TMP/bad/loom-matmul-A.bin" &&
	test_must_fail_with "create .*/bad/loom-matmul-A.bin: Is a directory" \
		srun --mpi=pmix -N2 -n4 loom-matmul-io --n 64 --dir "$TEST_TMP/bad"
'
test_done
