#!/bin/sh
# examples/pipeline.c (loom-pipeline): a 1F1B pipeline over loom_isend /
# loom_recv gives the serial run's gradients, weights and loss bit for bit,
# and reports its bubble fraction.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"

test_expect_success '--help describes the schedule' '
	loom-pipeline --help | grep -q "1F1B"
'
test_expect_success 'one process is refused: a pipeline needs 2 to 4 ranks' '
	test_must_fail_with "loom-pipeline: needs 2 to 4 ranks" loom-pipeline
'
test_expect_success '--stages out of range is refused' '
	test_must_fail_with "loom-pipeline: --stages: 5 is out of range \[2, 4\]" loom-pipeline --stages 5
'

test_need_cluster

pipe() {
	out=$1; shift
	srun --mpi=pmix "$@" >"$TEST_TMP/$out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/$out"; return $rc
}
test_expect_success '-N2 -n4, 4 stages x 8 micro-batches: bit-identical to serial' '
	pipe p4 -N2 -n4 loom-pipeline --micro-batches 8 &&
	grep -q "1 replicas x 4 stages, 8 micro-batches" "$TEST_TMP/p4" &&
	grep -q "step 4/4: loss" "$TEST_TMP/p4" &&
	grep -q "bubble fraction: measured [0-9.]*.*1F1B ideal 0.273" "$TEST_TMP/p4" &&
	grep -q "PASS: 4 stages x 8 micro-batches: gradients, weights and loss bit-identical" "$TEST_TMP/p4"
'
test_expect_success '-N2 -n4, 2 stages x 2 replicas, fewer micro-batches than stages would need' '
	pipe p2 -N2 -n4 loom-pipeline --stages 2 --micro-batches 1 --steps 2 &&
	grep -q "2 replicas x 2 stages, 1 micro-batches" "$TEST_TMP/p2" &&
	grep -q "PASS: 2 stages x 1 micro-batches" "$TEST_TMP/p2"
'
test_expect_success '-N2 -n3: 3 stages' '
	pipe p3 -N2 -n3 loom-pipeline --micro-batches 5 --width 32 &&
	grep -q "PASS: 3 stages x 5 micro-batches" "$TEST_TMP/p3"
'
test_expect_success '-N2 -n4: --stages 3 does not divide 4 ranks' '
	test_must_fail_with "--stages 3 does not divide the world size 4" \
		srun --mpi=pmix -N2 -n4 loom-pipeline --stages 3
'
test_done
