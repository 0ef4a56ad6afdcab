#!/bin/sh
# --loom-ckpt-signal=USR1@auto through sbatch and loom.so on the live
# cluster: runtime/ckpt/test/ckpt-drive train saves every 20 steps, each save
# made slow on purpose (killpoint.so's LOOM_TEST_DELAY_S holds rank 0's
# MANIFEST fsync: 3 s in the first run, 6 s in the next, 9 s in the last).
# libloom records each save's time in LOOM_CKPT_DIR/.loom-save-times;
# loom.so's timer starts from the default 60 s (no history), then signals
# at max(15, ceil(2 x slowest + 10)) s before the limit. Every run commits
# its stop checkpoint before the limit, is requeued (twice), resumes bit
# for bit, and the lead time logged grows with the measured save time.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"
DRIVE="$LOOM_BUILD_DIR/runtime/ckpt/test/ckpt-drive"
KILLPOINT="$LOOM_BUILD_DIR/runtime/ckpt/test/.libs/killpoint.so"

A=$(cd "$TEST_TMP" && pwd -P)/auto
mkdir -p "$A/ck"

# the last run (restart 2) trains 30 steps past the step it resumes from.
# In the limited runs rank 3 (on n2) lingers after loom_finalize, so that
# the requeue (as the first task on n1 exits) kills it before it exits,
# and no metrics writer runs on a timer: its stop must be in its metrics
# file when the save returns (before, the file was written at exit only,
# and CI saw a rank killed first under load).
cat >"$A/job.sh" <<EOS
#!/bin/sh
export LOOM_DEBUG=info CKPT_DRIVE_SAVE_EVERY=20 LOOM_METRICS_INTERVAL=3600
r=\${SLURM_RESTART_COUNT:-0}
export LOOM_METRICS_FILE="$A/m-\$r-%r.prom" LOOM_METRICS_KEEP=1
steps=100000
if [ "\$r" -ge 2 ]; then
	steps=\$((\$(sed 's/^step-//' "$A/ck/\$SLURM_JOB_ID/latest") + 30))
else
	export CKPT_DRIVE_LINGER=3:8
fi
srun --mpi=pmix env LD_PRELOAD="$KILLPOINT" LOOM_TEST_KILL_RANK=0 \\
	LOOM_TEST_KILL_AT="fsync:$A/ck/*/.tmp-step-*/MANIFEST" LOOM_TEST_DELAY_S=\$((3 + 3 * r)) \\
	sh -c 'exec "\$0" train "\$LOOM_CKPT_DIR" rows "\$1"' "$DRIVE" "\$steps"
EOS

# the lead times of the signals sent to job $1, in order
leads() {
	stepd_log | sed -n "s/.*loom: step $1\.0: sent SIGUSR1, \([0-9]*\) s before the time limit (@auto)$/\1/p"
}

test_expect_success 'a time-limited job with slow saves: signalled early enough at every limit, requeued twice, resumed bit for bit' '
	test -f "$KILLPOINT" &&
	j=$(sbatch --parsable -p debug --time=2 -N2 --ntasks-per-node=2 --open-mode=append \
		-o "$A/job.out" --loom-ckpt="$A/ck/%j" --loom-ckpt-signal=USR1@auto "$A/job.sh") &&
	echo "$j" >"$A/id" && echo "job $j" &&
	wait_state "$j" 480 COMPLETED; cat "$A/job.out"; stepd_log | grep "loom: .*$j" &&
	test "$(job_field "$j" Restarts)" = 2 &&
	for r in 1 2; do
		stepd_log | grep "loom: job $j: checkpoint step [0-9]* committed after SIGUSR1 (time limit); requeued (restart $r) reason=timelimit$" || exit 1
		s=$(sed -n "s/.*restart $r of job $j: resuming after step \([0-9]*\).*/\1/p" "$A/job.out" | head -1) &&
		test -n "$s" && test $(grep -c "^rank [0-3] resumed at step $s wrong 0$" "$A/job.out") = 4 || exit 1
	done &&
	! grep -q "TIMEOUT\|DUE TO TIME LIMIT" "$A/job.out"
'

test_expect_success 'the stop checkpoints in the metrics: reason=timelimit in the two limited runs, none in the last; also from rank 3, killed by the requeue while it lingered' '
	test $(grep -c "^rank 3 lingers 8 s after its stop save" "$A/job.out") = 2 &&
	! grep "^rank 3 lingered to the end" "$A/job.out" &&
	. "$LOOM_SRC_DIR/t/lib/prom.sh" &&
	for r in 0 1 2; do
		want=1 && test $r = 2 && want=0
		for k in 0 1 2 3; do
			f=$A/m-$r-$k.prom && prom_check "$f" &&
			test "$(prom_value "$f" loom_checkpoint_stops_total comm=world reason=timelimit)" = $want &&
			test "$(prom_value "$f" loom_checkpoint_stops_total comm=world reason=preempt)" = 0 || exit 1
		done
	done
'

test_expect_success 'no history at the first start: the default 60 s, said so' '
	j=$(cat "$A/id") &&
	stepd_log | grep -q "loom: step $j.0: --loom-ckpt-signal=USR1@auto: lead time 60 s: no save recorded yet in $A/ck/$j/.loom-save-times: the default 60 s"
'

test_expect_success 'the lead time follows the measured save time: >= 2 x 3 s + 10, then >= 2 x 6 s + 10, growing' '
	j=$(cat "$A/id") && leads "$j" >"$A/leads" && cat "$A/leads" &&
	test $(wc -l <"$A/leads") = 2 &&
	l0=$(sed -n 1p "$A/leads") && l1=$(sed -n 2p "$A/leads") &&
	test "$l0" -ge 16 && test "$l0" -lt 23 && test "$l1" -ge 22 && test "$l1" -gt "$l0" &&
	stepd_log | grep "loom: step $j.0: --loom-ckpt-signal=USR1@auto: lead time $l1 s: the slowest of the last [0-9] saves (step [0-9]*) took 6\.[0-9]* s for [0-9]* bytes: max(15 s, ceil(2 x 6\.[0-9]* s + 10 s)) = $l1 s"
'

test_expect_success 'the user reads each lead time, its reason and each signal in the job.s own log' '
	j=$(cat "$A/id") && L=$A/ck/$j/.loom-requeue.log && cat "$L" && leads "$j" >"$A/leads" &&
	grep -q "loom: step $j.0: --loom-ckpt-signal=USR1@auto: lead time 60 s: no save recorded yet in $A/ck/$j/.loom-save-times: the default 60 s$" "$L" &&
	for l in $(cat "$A/leads"); do
		grep -q "loom: step $j.0: --loom-ckpt-signal=USR1@auto: lead time $l s: the slowest of the last [0-9] saves (step [0-9]*) took [0-9.]* s for [0-9]* bytes: max(15 s, ceil(2 x [0-9.]* s + 10 s)) = $l s$" "$L" &&
		grep -q "loom: step $j.0: sent SIGUSR1, $l s before the time limit (@auto)$" "$L" || exit 1
	done &&
	test $(grep -c "reason=timelimit$" "$L") = 2
'

test_expect_success 'the save times: a header and at most 8 records, the slowest the last run'"'"'s' '
	j=$(cat "$A/id") && f=$A/ck/$j/.loom-save-times && cat "$f" &&
	test "$(sed -n 1p "$f")" = "loom-save-times 1" &&
	n=$(($(wc -l <"$f") - 1)) && test "$n" -ge 1 && test "$n" -le 8 &&
	! sed 1d "$f" | grep -v "^step=[0-9]* seconds=[0-9]*\.[0-9]* bytes=[0-9]*$" &&
	sed 1d "$f" | grep -q "seconds=9\."
'

test_expect_success 'a save-times file that is garbage or a link: the default, and an error naming it' '
	d=$A/bad && mkdir -p "$d/ck" && printf "not ours\n" >"$d/ck/.loom-save-times" &&
	j=$(sbatch --parsable -p debug --time=2 -N1 -n1 -o "$d/job.out" --loom-ckpt="$d/ck" \
		--loom-ckpt-signal=USR1@auto --wrap "srun true") &&
	wait_state "$j" 60 COMPLETED &&
	wait_stepd_log "loom: step $j.0: --loom-ckpt-signal=USR1@auto: lead time 60 s: the save times $d/ck/.loom-save-times are unusable (the first line .not ours. is not .loom-save-times 1.): ignored, the default 60 s" 20 &&
	rm "$d/ck/.loom-save-times" && ln -s /etc/shadow "$d/ck/.loom-save-times" &&
	j=$(sbatch --parsable -p debug --time=2 -N1 -n1 -o "$d/job2.out" --loom-ckpt="$d/ck" \
		--loom-ckpt-signal=USR1@auto --wrap "srun true") &&
	wait_state "$j" 60 COMPLETED &&
	wait_stepd_log "loom: step $j.0: --loom-ckpt-signal=USR1@auto: lead time 60 s: the save times $d/ck/.loom-save-times are unusable ($d/ck/.loom-save-times: a symbolic link (not followed)): ignored" 20
'
test_done
