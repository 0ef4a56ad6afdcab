#!/bin/sh
# The batch scripts next to the examples (examples/*.sbatch) run as they
# are, through sbatch, on the live cluster, and their example's check passes.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"

scripts="dp_train mesh tp_linear pipeline matmul_io"

test_expect_success 'every sbatch script is valid bash and asks for 2 nodes x 2 tasks' '
	for s in $scripts; do
		f="$LOOM_SRC_DIR/examples/$s.sbatch"
		bash -n "$f" || { echo "$f: syntax"; exit 1; }
		grep -q "^#SBATCH --nodes=2\$" "$f" && grep -q "^#SBATCH --ntasks-per-node=2\$" "$f" ||
			{ echo "$f: resources"; exit 1; }
	done
'

test_need_cluster

# sbatch_run NAME [ARGS]: submit examples/NAME.sbatch from a fresh directory,
# wait for the job, show its output; succeeds when the job exited 0
sbatch_run() {
	local name=$1 rc; shift
	mkdir -p "$TEST_TMP/$name" &&
	(cd "$TEST_TMP/$name" &&
	 sbatch --wait -o "$TEST_TMP/$name/job.out" "$LOOM_SRC_DIR/examples/$name.sbatch" "$@" \
		>"$TEST_TMP/$name/sbatch.out" 2>&1) && rc=0 || rc=$?
	cat "$TEST_TMP/$name/sbatch.out" "$TEST_TMP/$name/job.out" 2>/dev/null
	return $rc
}

test_expect_success 'sbatch --wait examples/dp_train.sbatch: the job completes and its check passes' '
	sbatch_run dp_train --ordered --steps 40 &&
	grep -q "^Submitted batch job" "$TEST_TMP/dp_train/sbatch.out" &&
	grep -q "^loom-dp-train: 4 ranks" "$TEST_TMP/dp_train/job.out" &&
	grep -q "PASS: loss curve and final parameters bit-identical to the serial run" "$TEST_TMP/dp_train/job.out"
'
test_expect_success 'sbatch --wait examples/mesh.sbatch' '
	sbatch_run mesh && grep -q "PASS: 2 of 2 shapes checked" "$TEST_TMP/mesh/job.out"
'
test_expect_success 'sbatch --wait examples/tp_linear.sbatch' '
	sbatch_run tp_linear && grep -q "PASS: column-parallel" "$TEST_TMP/tp_linear/job.out"
'
test_expect_success 'sbatch --wait examples/pipeline.sbatch' '
	sbatch_run pipeline --steps 2 && grep -q "PASS: 4 stages x 8 micro-batches" "$TEST_TMP/pipeline/job.out"
'
test_expect_success 'sbatch --wait examples/matmul_io.sbatch (files in the submission directory)' '
	sbatch_run matmul_io --n 256 --keep && grep -q "PASS: " "$TEST_TMP/matmul_io/job.out" &&
	test -s "$TEST_TMP/matmul_io/loom-matmul-C.bin"
'
test_expect_success 'a failing check fails the batch job' '
	sbatch_run dp_train --steps 5 --tol 0 --bf16 --log-every 0 && rc=0 || rc=$?
	test $rc -ne 0 || { echo "job exited 0"; false; }
	# the submission was accepted and the job ran the program, which
	# failed its own check (not a rejected job or a dead cluster)
	grep -q "^Submitted batch job [0-9]" "$TEST_TMP/dp_train/sbatch.out" &&
	grep -q "^loom-dp-train: 4 ranks" "$TEST_TMP/dp_train/job.out" &&
	grep -q "^loom-dp-train: FAIL: loss curve and final parameters match the serial run within relative tolerance 0 (bf16 wire, allreduce order): exceeded\$" \
		"$TEST_TMP/dp_train/job.out" &&
	test $rc -eq 1
'
test_done
