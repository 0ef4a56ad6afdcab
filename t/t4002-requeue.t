#!/bin/sh
# Preemption-safe training end to end, through sbatch on the live cluster:
# examples/dp_train.c (loom-dp-train --ordered, --loom-ckpt) is preempted
# (partition low, PreemptMode=REQUEUE, GraceTime=5) or reaches its time
# limit (--loom-ckpt-signal=USR1@50); it checkpoints, loom.so requeues it,
# the restarted job resumes from the checkpoint and ends with parameters
# bit-identical to an uninterrupted run's. A job that ends normally, or is
# cancelled, is not requeued; the slurmd log line gives the reason
# (preempt, timelimit, cancel), and so does the job's own log,
# LOOM_CKPT_DIR/.loom-requeue.log, which the user can read. A step inside
# the signal window is told so once.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"

TRAIN="srun --mpi=pmix loom-dp-train --ordered --steps 300 --log-every 50"

# submit NAME SBATCH-ARGS...: a training job whose output is in
# $TEST_TMP/NAME and checkpoints in $TEST_TMP/NAME/ck/<job id> (%j);
# prints the job id
submit() {
	local name=$1; shift
	mkdir -p "$TEST_TMP/$name/ck" &&
	sbatch --parsable -N2 --ntasks-per-node=2 --open-mode=append -o "$TEST_TMP/$name/job.out" \
		--loom-ckpt="$TEST_TMP/$name/ck/%j" "$@"
}
digest() { sed -n 's/.*final parameters: fnv1a64 \([0-9a-f]*\).*/\1/p' "$1" | tail -1; }

test_expect_success 'an uninterrupted run with --loom-ckpt completes, Restarts=0, not requeued' '
	j=$(submit ref -p low --wrap "$TRAIN --ckpt-every 100") && echo "job $j" &&
	wait_state "$j" 120 COMPLETED && cat "$TEST_TMP/ref/job.out" &&
	test "$(job_field "$j" Restarts)" = 0 &&
	grep -q "PASS: loss curve and final parameters bit-identical" "$TEST_TMP/ref/job.out" &&
	test -n "$(digest "$TEST_TMP/ref/job.out")" &&
	test -d "$TEST_TMP/ref/ck/$j/step-200" && test ! -e "$TEST_TMP/ref/ck/$j/.loom-requeue" &&
	! grep -q "resuming after" "$TEST_TMP/ref/job.out"
'

test_expect_success 'preemption: SIGTERM, every rank saves the same step, loom.so requeues the job' '
	P=$TEST_TMP/pre &&
	j=$(submit pre -p low --wrap "$TRAIN --step-ms 30") && echo "$j" >"$TEST_TMP/pre.id" &&
	wait_for "$P/job.out" "step 50/300" 60 &&
	h=$(sbatch --parsable -p high -N2 -n4 -o /dev/null --wrap "sleep 1") && echo "high job $h" &&
	for i in $(seq 60); do test "$(job_field "$j" Restarts)" = 1 && break; sleep 1; done &&
	cat "$P/job.out" && test "$(job_field "$j" Restarts)" = 1 &&
	s=$(sed -n "s/.*checkpoint step \([0-9]*\) committed after SIGTERM: asking for a requeue.*/\1/p" "$P/job.out") &&
	test -n "$s" && echo "$s" >"$TEST_TMP/pre.step" &&
	grep -q "stop signal: checkpoint of step $s committed" "$P/job.out" &&
	test -f "$P/ck/$j/step-$s/MANIFEST" &&
	stepd_log | grep "loom: job $j: checkpoint step $s committed after SIGTERM; requeued (restart 1) reason=preempt$"
'

test_expect_success 'the requeued job resumes after that step and ends bit-identical to the uninterrupted run' '
	j=$(cat "$TEST_TMP/pre.id") && s=$(cat "$TEST_TMP/pre.step") &&
	wait_state "$j" 180 COMPLETED && cat "$TEST_TMP/pre/job.out" &&
	test "$(job_field "$j" Restarts)" = 1 &&
	grep -q "resuming after step $s from $TEST_TMP/pre/ck/$j (restart 1)" "$TEST_TMP/pre/job.out" &&
	grep -q "PASS: loss curve and final parameters bit-identical" "$TEST_TMP/pre/job.out" &&
	test "$(digest "$TEST_TMP/pre/job.out")" = "$(digest "$TEST_TMP/ref/job.out")"
'

test_expect_success 'the user reads the requeue and its reason in the job.s own log, a file of the user.s' '
	j=$(cat "$TEST_TMP/pre.id") && s=$(cat "$TEST_TMP/pre.step") && L=$TEST_TMP/pre/ck/$j/.loom-requeue.log &&
	cat "$L" && test "$(stat -c %a "$L")" = 600 &&
	grep -q "^[0-9-]*T[0-9:]* loom: job $j: checkpoint step $s committed after SIGTERM; requeued (restart 1) reason=preempt$" "$L" &&
	test $(grep -c "requeued" "$L") = 1
'

test_expect_success 'time limit: --time=1 --loom-ckpt-signal=USR1@50: checkpoint and requeue at every limit (30 s of training, 3+ runs), same parameters' '
	T=$TEST_TMP/tl &&
	j=$(submit tl -p debug --time=1 --loom-ckpt-signal=USR1@50 --wrap "$TRAIN --step-ms 100") &&
	echo "job $j" && echo "$j" >"$TEST_TMP/tl.id" && wait_state "$j" 400 COMPLETED && cat "$T/job.out" &&
	test "$(job_field "$j" Restarts)" -ge 2 &&
	grep -q "resuming after step [0-9]* from $T/ck/$j (restart 2)" "$T/job.out" &&
	grep -q "checkpoint step [0-9]* committed after SIGUSR1: asking for a requeue" "$T/job.out" &&
	grep -q "resuming after step [0-9]* from $T/ck/$j (restart 1)" "$T/job.out" &&
	stepd_log | grep -q "loom: step $j.0: sent SIGUSR1, 50 s before the time limit" &&
	stepd_log | grep -q "loom: job $j: checkpoint step [0-9]* committed after SIGUSR1 (time limit); requeued (restart [0-9]*) reason=timelimit$" &&
	grep -q "PASS: loss curve and final parameters bit-identical" "$T/job.out" &&
	test "$(digest "$T/job.out")" = "$(digest "$TEST_TMP/ref/job.out")" &&
	r=$(job_field "$j" Restarts) && echo "restarts: $r" &&
	test $(grep -c "asking for a requeue" "$T/job.out") = "$r"
'

test_expect_success 'time limit: the job.s own log has each signal and each requeue' '
	j=$(cat "$TEST_TMP/tl.id") && L=$TEST_TMP/tl/ck/$j/.loom-requeue.log && cat "$L" &&
	r=$(job_field "$j" Restarts) &&
	test $(grep -c "loom: step $j.0: sent SIGUSR1, 50 s before the time limit$" "$L") -ge "$r" &&
	test $(grep -c "loom: job $j: checkpoint step [0-9]* committed after SIGUSR1 (time limit); requeued (restart [0-9]*) reason=timelimit$" "$L") = "$r"
'

test_expect_success 'scancel: the job checkpoints on SIGTERM but stays CANCELLED (Restarts=0)' '
	C=$TEST_TMP/cancel &&
	j=$(submit cancel -p low --wrap "$TRAIN --step-ms 30") &&
	wait_for "$C/job.out" "step 50/300" 60 && scancel "$j" &&
	wait_state "$j" 60 CANCELLED &&
	wait_stepd_log "loom: job $j: checkpoint step [0-9]* after SIGTERM, not requeued: the job is no longer running .* reason=cancel$" 60 &&
	cat "$C/job.out" &&
	s=$(stepd_log | sed -n "s/.*loom: job $j: checkpoint step \([0-9]*\) after SIGTERM, not requeued.*/\1/p" | head -1) &&
	test -f "$C/ck/$j/step-$s/MANIFEST" &&
	test "$(job_field "$j" JobState)" = CANCELLED && test "$(job_field "$j" Restarts)" = 0 &&
	wait_for "$C/ck/$j/.loom-requeue.log" "loom: job $j: checkpoint step $s after SIGTERM, not requeued: the job is no longer running .* reason=cancel$" 10
'

# a step whose program ignores the stop signal and ends on its own
cat >"$TEST_TMP/ignore-usr1.sh" <<\EOS
#!/bin/sh
srun sh -c 'trap "" USR1; sleep 20'
EOS
test_expect_success 'a program that ignores the time-limit signal: not requeued, and the job.s own log says why' '
	N=$TEST_TMP/ignored && mkdir -p "$N/ck" &&
	j=$(sbatch --parsable -p debug -N1 -n1 --time=1 --loom-ckpt="$N/ck" --loom-ckpt-signal=USR1@50 \
		-o "$N/job.out" "$TEST_TMP/ignore-usr1.sh") && echo "job $j" &&
	wait_state "$j" 90 COMPLETED && cat "$N/job.out" &&
	wait_for "$N/ck/.loom-requeue.log" "loom: job $j step 0: not requeued: the --loom-ckpt-signal signal was sent, but no task left a requeue request in $N/ck/.loom-requeue" 10 &&
	grep -q "loom: step $j.0: sent SIGUSR1, 50 s before the time limit$" "$N/ck/.loom-requeue.log" &&
	test "$(job_field "$j" Restarts)" = 0
'

test_expect_success '--loom-ckpt with an unknown %-sequence is refused at submission' '
	test_must_fail_with "loom: --loom-ckpt=/tmp/ck/%u: .%u. is not understood: only %j \(the job id\) and %% are expanded" \
		sbatch --loom-ckpt=/tmp/ck/%u --wrap true
'

test_expect_success 'a step that starts inside the signal window gets no signal, and the job log says why' '
	W=$TEST_TMP/window && mkdir -p "$W" &&
	sbatch --wait -N1 -n1 --time=1 --loom-ckpt-signal=USR1@90 -o "$W/job.out" \
		--wrap "srun true" >/dev/null 2>&1; cat "$W/job.out";
	grep -q "loom: --loom-ckpt-signal=USR1@90: step [0-9]*.0 started [0-9]* s before the job.s time limit, inside the signal window" "$W/job.out"
'

test_expect_success 'two tasks of the step on one node: the signal-window refusal is looked up and said once per step' '
	W=$TEST_TMP/window2 && mkdir -p "$W" &&
	sbatch --wait -N1 -n2 --time=1 --loom-ckpt-signal=USR1@90 -o "$W/job.out" \
		--wrap "srun -n2 true" >/dev/null 2>&1; cat "$W/job.out";
	test $(grep -c "loom: --loom-ckpt-signal=USR1@90: step [0-9]*.0 started .*inside the signal window" "$W/job.out") = 1
'
test_done
