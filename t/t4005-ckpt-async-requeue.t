#!/bin/sh
# SIGTERM while an async save is being flushed, through sbatch and loom.so
# on the live cluster: runtime/ckpt/test/ckpt-drive train (LOOM_CKPT_ASYNC=1)
# saves step 0 in the background; rank 0's writer is held before its data
# fsync (runtime/ckpt/test/killpoint.c, LOOM_TEST_PAUSE_UNTIL) while the step's
# tasks get SIGTERM. Every rank agrees to stop, the held save completes
# when released, the stop checkpoint is committed (blocking) in the
# checkpoint directory, loom.so requeues the job, and the requeued run
# resumes from the stop step with every value bit for bit.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"
DRIVE="$LOOM_BUILD_DIR/runtime/ckpt/test/ckpt-drive"
KILLPOINT="$LOOM_BUILD_DIR/runtime/ckpt/test/.libs/killpoint.so"

A=$(cd "$TEST_TMP" && pwd -P)/aq
mkdir -p "$A/ck"

# the job: 150 steps of 0.1 s, an async save of step 0 (the next periodic
# one, step 1000, never comes); the pause is armed in rank 0 only and, once
# $A/release exists (the requeued run), passes at once
cat >"$A/job.sh" <<EOS
#!/bin/sh
export LOOM_DEBUG=info LOOM_CKPT_ASYNC=1 CKPT_DRIVE_SAVE_EVERY=1000 CKPT_DRIVE_ROWS=9001
export LOOM_CKPT_CHUNK=65536 LOOM_CKPT_BUFFER_MB=1
export LOOM_METRICS_FILE="$A/m-\${SLURM_RESTART_COUNT:-0}-%r.prom" LOOM_METRICS_KEEP=1
srun --mpi=pmix env LD_PRELOAD="$KILLPOINT" LOOM_TEST_KILL_RANK=0 \\
	LOOM_TEST_KILL_AT="fsync:$A/ck/*/.tmp-step-0-*/t0.bin" LOOM_TEST_PAUSE_UNTIL="$A/release" \\
	sh -c 'exec "\$0" train "\$LOOM_CKPT_DIR" rows 150' "$DRIVE"
EOS

test_expect_success 'SIGTERM while rank 0 flushes step 0 in the background: stop agreed, step 0 then the stop step committed, requeue asked' '
	test -f "$KILLPOINT" &&
	j=$(sbatch --parsable -p low -N2 --ntasks-per-node=2 --open-mode=append -o "$A/job.out" \
		--loom-ckpt="$A/ck/%j" "$A/job.sh") && echo "$j" >"$A/id" && echo "job $j" &&
	timeout 120 sh -c "until test -e \"$A/release.paused\"; do sleep 0.2; done" &&
	grep -q "killpoint: paused before fsync $A/ck/$j/\.tmp-step-0-$j/t0\.bin" "$A/job.out" &&
	test ! -e "$A/ck/$j/step-0" &&
	scancel -s TERM "$j" &&
	wait_for "$A/job.out" "ckpt: stop agreed at step [0-9]* (SIGTERM)" 60 &&
	test ! -e "$A/ck/$j/step-0" &&
	touch "$A/release" &&
	for i in $(seq 120); do test "$(job_field "$j" Restarts)" = 1 && break; sleep 1; done &&
	cat "$A/job.out" && test "$(job_field "$j" Restarts)" = 1 &&
	s=$(sed -n "s/.*stop agreed at step \([0-9]*\) (SIGTERM).*/\1/p" "$A/job.out" | head -1) &&
	echo "$s" >"$A/step" && test "$s" -gt 0 &&
	test $(grep -c "^rank [0-3] stop at step $s$" "$A/job.out") = 4 &&
	grep -q "checkpoint step $s committed after SIGTERM: asking for a requeue" "$A/job.out" &&
	test -f "$A/ck/$j/step-0/MANIFEST" && test -f "$A/ck/$j/step-$s/MANIFEST" &&
	stepd_log | grep "loom: job $j: checkpoint step $s committed after SIGTERM; requeued (restart 1) reason=preempt$"
'
test_expect_success 'the stop checkpoint in every rank'"'"'s metrics: reason=preempt' '
	. "$LOOM_SRC_DIR/t/lib/prom.sh" &&
	for k in 0 1 2 3; do
		f=$A/m-0-$k.prom && prom_check "$f" &&
		test "$(prom_value "$f" loom_checkpoint_stops_total comm=world reason=preempt)" = 1 &&
		test "$(prom_value "$f" loom_checkpoint_stops_total comm=world reason=timelimit)" = 0 || exit 1
	done
'
test_expect_success 'the requeued job resumes from the stop step, every value bit for bit on every rank, and completes' '
	j=$(cat "$A/id") && s=$(cat "$A/step") &&
	wait_state "$j" 180 COMPLETED && cat "$A/job.out" &&
	test "$(job_field "$j" Restarts)" = 1 &&
	test $(grep -c "^rank [0-3] resumed at step $s wrong 0$" "$A/job.out") = 4 &&
	grep -q "restart 1 of job $j: resuming after step $s" "$A/job.out"
'
test_done
