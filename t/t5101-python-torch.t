#!/bin/sh
# examples/torch_ddp_requeue.py (PyTorch DDP over gloo, loom.torch.Resumable:
# a durable save into LOOM_CKPT_DIR/resumable, then loom.request_requeue) through its
# sbatch script on the live cluster, 2 nodes x 2 tasks: preempted through
# the low/high partitions and, separately, stopped by its time limit with
# --loom-ckpt-signal; loom.so requeues it each time and it ends with the
# parameters of an uninterrupted run. Needs python3-torch (not a CI
# requirement: skipped without it).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_torch
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"
LOOM_EXAMPLES=$LOOM_SRC_DIR/examples PYTHON=$LOOM_PYTHON
export LOOM_EXAMPLES PYTHON

# run NAME SBATCH-ARGS... -- SCRIPT-ARGS...: submit the example's sbatch
# script, output in $TEST_TMP/NAME/job.out, checkpoints in
# $TEST_TMP/NAME/ck/<job id>; prints the job id
run() {
	local name=$1 a=""; shift
	mkdir -p "$TEST_TMP/$name/ck" && cd "$TEST_TMP/$name" &&
	sbatch --parsable -o "$TEST_TMP/$name/job.out" --loom-ckpt="$TEST_TMP/$name/ck/%j" \
		"$@" "$LOOM_EXAMPLES/torch_ddp_requeue.sbatch" --steps 120 --log-every 10 $STEP_MS
}
digest() { sed -n 's/^final parameters: sha256 \([0-9a-f]*\)$/\1/p' "$1"; }

test_expect_success 'an uninterrupted run: 120 steps, the parameters digest' '
	STEP_MS= && j=$(run ref) && wait_state "$j" 180 COMPLETED && cat "$TEST_TMP/ref/job.out" &&
	test "$(job_field "$j" Restarts)" = 0 &&
	grep -q "^PASS: 120 steps on 4 ranks$" "$TEST_TMP/ref/job.out" &&
	test $(digest "$TEST_TMP/ref/job.out" | wc -l) = 1 &&
	test ! -e "$TEST_TMP/ref/ck/$j/.loom-requeue"
'

test_expect_success 'preempted (low/high): torch.save, request_requeue, requeued, same parameters' '
	P=$TEST_TMP/pre && STEP_MS="--step-ms 100" && j=$(run pre -p low) && echo "job $j" &&
	wait_for "$P/job.out" "^step 20/120" 120 &&
	h=$(sbatch --parsable -p high -N2 -n4 -o /dev/null --wrap "sleep 1") && echo "high job $h" &&
	wait_state "$j" 300 COMPLETED && cat "$P/job.out" &&
	test "$(job_field "$j" Restarts)" = 1 &&
	s=$(sed -n "s|^stop signal: step \([0-9]*\) saved to $P/ck/$j/resumable/step-\1, requeue requested$|\1|p" "$P/job.out") &&
	test -n "$s" &&
	grep -q "checkpoint step $s committed after SIGTERM: asking for a requeue of job $j" "$P/job.out" &&
	grep -q "^resuming after step $s from $P/ck/$j/resumable/step-$s (restart 1)$" "$P/job.out" &&
	stepd_log | grep "loom: job $j: checkpoint step $s committed after SIGTERM; requeued (restart 1)" &&
	grep -q "^PASS: 120 steps on 4 ranks$" "$P/job.out" &&
	test "$(digest "$P/job.out")" = "$(digest "$TEST_TMP/ref/job.out")"
'

test_expect_success 'time limit: --time=2 --loom-ckpt-signal=USR1@90: SIGUSR1, requeued, same parameters' '
	T=$TEST_TMP/tl && STEP_MS="--step-ms 300" && j=$(run tl -p debug --time=2 --loom-ckpt-signal=USR1@90) &&
	echo "job $j" && wait_state "$j" 480 COMPLETED && cat "$T/job.out" &&
	r=$(job_field "$j" Restarts) && echo "restarts: $r" && test "$r" -ge 1 &&
	grep -q "checkpoint step [0-9]* committed after SIGUSR1: asking for a requeue of job $j" "$T/job.out" &&
	stepd_log | grep -q "loom: step $j.0: sent SIGUSR1, 90 s before the time limit" &&
	stepd_log | grep -q "loom: job $j: checkpoint step [0-9]* committed after SIGUSR1 (time limit); requeued (restart 1)" &&
	grep -q "^resuming after step \([0-9]*\) from $T/ck/$j/resumable/step-\1 (restart 1)$" "$T/job.out" &&
	test $(grep -c "requeue requested$" "$T/job.out") = "$r" &&
	grep -q "^PASS: 120 steps on 4 ranks$" "$T/job.out" &&
	test "$(digest "$T/job.out")" = "$(digest "$TEST_TMP/ref/job.out")"
'
test_done
