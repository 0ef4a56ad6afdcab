#!/bin/sh
# The Python package loom on the live cluster: examples/numpy_allreduce.py
# on 4 ranks of 2 nodes (collectives and a sharded checkpoint against
# expected values), directly and through its sbatch script; a plain Python
# loop (t/python/requeue_counter.py) preempted through the low/high
# partitions saves, asks with loom.request_requeue, is requeued by loom.so
# and ends with the uninterrupted total; request_requeue in a job without
# --loom-ckpt gets the clear error.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_python
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"
PY=$LOOM_PYTHON
EX=$LOOM_SRC_DIR/examples

if "$PY" -c "import numpy" 2>/dev/null; then
	test_expect_success 'numpy_allreduce.py -N2 -n4: every collective and the checkpoint give the expected values' '
		mkdir "$TEST_TMP/ck" &&
		timeout 300 srun -N2 -n4 "$PY" "$EX/numpy_allreduce.py" --ckpt "$TEST_TMP/ck" \
			>"$TEST_TMP/np" 2>&1 && rc=0 || rc=$?; cat "$TEST_TMP/np" && test $rc = 0 &&
		for r in 0 1 2 3; do
			grep -q "^rank $r/4 local [01]: allreduce sum of rank+1 10, allgather \[0, 1, 2, 3\], checkpoint step 7 restored$" \
				"$TEST_TMP/np" || { echo "no line of rank $r"; false; }
		done &&
		grep -q "^PASS: numpy_allreduce, 4 ranks, 0 failed checks$" "$TEST_TMP/np" &&
		test -f "$TEST_TMP/ck/step-7/MANIFEST"
	'
	test_expect_success 'sbatch --wait examples/numpy_allreduce.sbatch' '
		mkdir "$TEST_TMP/sb" && (cd "$TEST_TMP/sb" &&
		LOOM_EXAMPLES=$EX PYTHON=$PY timeout 300 sbatch --wait -o "$TEST_TMP/sb/job.out" \
			"$EX/numpy_allreduce.sbatch" --n 10 >/dev/null) && rc=0 || rc=$?
		cat "$TEST_TMP/sb/job.out" && test $rc = 0 &&
		grep -q "^PASS: numpy_allreduce, 4 ranks, 0 failed checks$" "$TEST_TMP/sb/job.out"
	'
else
	test_skip 'numpy_allreduce.py -N2 -n4' 'python3-numpy is not installed (contrib/install-deps installs it)'
	test_skip 'sbatch --wait examples/numpy_allreduce.sbatch' 'python3-numpy is not installed'
fi

test_expect_success 'request_requeue in a job without --loom-ckpt: the clear error, exit 1' '
	timeout 120 srun -N1 -n1 "$PY" -c "import loom; loom.request_requeue(3)" \
		>"$TEST_TMP/norq" 2>&1 && rc=0 || rc=$?; cat "$TEST_TMP/norq" && test $rc = 1 &&
	grep -q "^loom.InvalidArgument: LOOM_ERR_INVALID: request_requeue: LOOM_CKPT_DIR is unset: the job was not started with --loom-ckpt=DIR, and loom.so requeues only such jobs$" \
		"$TEST_TMP/norq"
'

COUNTER="srun \"$PY\" \"$LOOM_SRC_DIR/t/python/requeue_counter.py\""
test_expect_success 'a plain Python loop preempted: StopSignal, its own save, request_requeue; loom.so requeues it' '
	C=$TEST_TMP/counter && mkdir -p "$C/ck" &&
	j=$(sbatch --parsable -p low -N2 --ntasks-per-node=2 --open-mode=append -o "$C/job.out" \
		--loom-ckpt="$C/ck/%j" --wrap "$COUNTER 100 100") && echo "job $j" &&
	wait_for "$C/job.out" "^step 10/100" 60 &&
	h=$(sbatch --parsable -p high -N2 -n4 -o /dev/null --wrap "sleep 1") && echo "high job $h" &&
	wait_state "$j" 240 COMPLETED && cat "$C/job.out" &&
	test "$(job_field "$j" Restarts)" = 1 &&
	s=$(sed -n "s/^stop signal 15: step \([0-9]*\) saved$/\1/p" "$C/job.out") && test -n "$s" &&
	grep -q "checkpoint step $s committed after SIGTERM: asking for a requeue of job $j" "$C/job.out" &&
	grep -q "^resuming after step $s (restart 1)$" "$C/job.out" &&
	stepd_log | grep "loom: job $j: checkpoint step $s committed after SIGTERM; requeued (restart 1)" &&
	test "$(grep "^total" "$C/job.out")" = "total 49500 on 4 ranks"
'
test_done
