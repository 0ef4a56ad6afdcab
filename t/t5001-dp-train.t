#!/bin/sh
# examples/dp_train.c (loom-dp-train) on the live cluster: data-parallel
# SGD with loom_dp matches the serial run of the same global batch, exactly
# with the ordered reduction, within the stated tolerance otherwise.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"

test_expect_success '--help describes the check and the options' '
	loom-dp-train --help >"$TEST_TMP/help" &&
	grep -q -- "--ordered" "$TEST_TMP/help" && grep -q -- "--bf16" "$TEST_TMP/help" &&
	grep -q "serial run" "$TEST_TMP/help"
'
test_expect_success 'a bad --steps is refused, naming the option and the value' '
	test_must_fail_with "loom-dp-train: --steps: expected an integer, got .x." loom-dp-train --steps x
'
test_expect_success 'an unknown option is refused' '
	test_must_fail_with "unknown option .--nope." loom-dp-train --nope
'
test_expect_success 'a bad LOOM_BUCKET_MB is refused' '
	test_must_fail_with "LOOM_BUCKET_MB=.big." env LOOM_BUCKET_MB=big loom-dp-train --bucket-kb 0 --steps 1
'
test_expect_success 'one process: ordered fp32 run is bit-identical to its serial replay' '
	loom-dp-train --ordered --steps 20 --log-every 10 >"$TEST_TMP/one" &&
	cat "$TEST_TMP/one" &&
	grep -q "step 10/20 loss" "$TEST_TMP/one" &&
	grep -q "PASS: loss curve and final parameters bit-identical to the serial run" "$TEST_TMP/one"
'

test_need_cluster

run_dp() {
	# run_dp SRUN-ARGS -- PROGRAM-ARGS: output in $TEST_TMP/out.dp
	local sa=$1; shift
	local rc=0
	srun --mpi=pmix $sa loom-dp-train "$@" >"$TEST_TMP/out.dp" 2>&1 || rc=$?
	cat "$TEST_TMP/out.dp"
	return $rc
}

test_expect_success '-N2 -n4, ordered fp32: bit-identical loss curve and parameters' '
	run_dp "-N2 -n4" --ordered --steps 60 --log-every 20 &&
	grep -q "^loom-dp-train: 4 ranks, global batch 64 (16 per rank)" "$TEST_TMP/out.dp" &&
	grep -q "step 60/60 loss" "$TEST_TMP/out.dp" &&
	grep -q "PASS: loss curve and final parameters bit-identical to the serial run (ordered fp32" "$TEST_TMP/out.dp" &&
	grep -q "overlap: communication .* hidden behind backward compute" "$TEST_TMP/out.dp"
'
test_expect_success '-N2 -n4, default allreduce fp32: within the stated tolerance' '
	run_dp "-N2 -n4" --steps 60 --log-every 0 &&
	grep -q "PASS: loss curve and final parameters match the serial run within relative tolerance 0.0001 (fp32" "$TEST_TMP/out.dp"
'
test_expect_success '-N2 -n4, bf16 wire, ordered: bit-identical to the bf16 serial replay' '
	run_dp "-N2 -n4" --bf16 --ordered --steps 60 --log-every 0 &&
	grep -q "PASS: .*bit-identical to the serial run (ordered bf16" "$TEST_TMP/out.dp"
'
test_expect_success '-N2 -n4, bf16 wire, allreduce: within the stated tolerance' '
	run_dp "-N2 -n4" --bf16 --steps 60 --log-every 0 &&
	grep -q "PASS: .*within relative tolerance 0.01 (bf16" "$TEST_TMP/out.dp"
'
test_expect_success '-N1 -n2, ordered fp32, several buckets from LOOM_BUCKET_MB' '
	LOOM_BUCKET_MB=0.01 run_dp "-N1 -n2" --ordered --bucket-kb 0 --steps 40 --log-every 0 &&
	grep -q "^loom-dp-train: 2 ranks, .*, [4-9] buckets" "$TEST_TMP/out.dp" &&
	grep -q "PASS: .*bit-identical" "$TEST_TMP/out.dp"
'
test_expect_success 'a global batch that does not split over the ranks is refused' '
	test_must_fail_with "--batch 10 does not split evenly over 4 ranks" \
		srun --mpi=pmix -N2 -n4 loom-dp-train --batch 10
'
test_expect_success 'an impossible tolerance makes the check fail with exit 1' '
	! run_dp "-N2 -n4" --steps 30 --log-every 0 --tol 0 --bf16 &&
	grep -q "FAIL: .*exceeded" "$TEST_TMP/out.dp"
'
test_done
