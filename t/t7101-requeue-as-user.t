#!/bin/sh
# The requeue request is read as the job's user, on the live cluster, with
# jobs of a real second user (nobody): slurmstepd (root) never opens a
# path that user controls. A checkpoint directory swapped for a link to a
# root-only directory, a request that is a link to a root-only file, or a
# root-only request: nothing is read, the job is not requeued, and the
# slurmd log says why. A stale request (another job, run or step) is
# ignored with a log line; a request is acted on once (removed first), so
# a later step of the same job does not act on it again.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"

# nobody submits through our munged: its socket's directory must be
# searchable (the key stays root's, mode 400)
chmod 711 "$LOOM_CLUSTER_DIR/munge"
U=$TEST_TMP/u
mkdir -p "$U" "$TEST_TMP/root-only"
chown nobody:nogroup "$U"
chmod 700 "$TEST_TMP/root-only"
NOBODY_UID=$(id -u nobody)

as_nobody() { runuser -u nobody -- "$@"; }
# held NAME SCRIPT: nobody's batch job (held: the test prepares files that
# name its id first), checkpoint directory $U/NAME; prints the job id
held() {
	as_nobody mkdir -p "$U/$1"
	as_nobody sbatch --parsable --hold -N1 -n1 -o "$U/$1.out" --loom-ckpt="$U/$1" --wrap "$2"
}
request() { printf 'job=%s\nrestart=%s\nslurm_step=%s\nstep=7\nsignal=TERM\n' "$1" "$2" "$3"; }

test_expect_success 'a directory swapped for a link to a root-only one: root reads nothing, no requeue, the log says why' '
	j=$(held swap "srun sh -c \"mv $U/swap $U/swap.real && ln -s $TEST_TMP/root-only $U/swap\"") &&
	request "$j" 0 0 >"$TEST_TMP/root-only/.loom-requeue" && chmod 600 "$TEST_TMP/root-only/.loom-requeue" &&
	scontrol release "$j" && wait_state "$j" 60 COMPLETED &&
	wait_stepd_log "loom: job $j step 0: not requeueing: the requeue request $U/swap/.loom-requeue, read as the job.s user (uid $NOBODY_UID), is unusable: $U/swap: Permission denied" 30 &&
	test "$(job_field "$j" Restarts)" = 0 &&
	test -f "$TEST_TMP/root-only/.loom-requeue" && test -L "$U/swap"
'

test_expect_success 'a request that is a link to a root-only file is not followed: no requeue, the reason logged' '
	j=$(held link "srun sh -c \"ln -s $TEST_TMP/root-only/.loom-requeue $U/link/.loom-requeue\"") &&
	request "$j" 0 0 >"$TEST_TMP/root-only/.loom-requeue" &&
	scontrol release "$j" && wait_state "$j" 60 COMPLETED &&
	wait_stepd_log "loom: job $j step 0: not requeueing: .*$U/link/.loom-requeue: a symbolic link .not followed." 30 &&
	test "$(job_field "$j" Restarts)" = 0
'

test_expect_success 'a root-only request in the user.s directory (as a hard link would be) is not read' '
	j=$(held hard "srun true") &&
	request "$j" 0 0 >"$U/hard/.loom-requeue" && chmod 600 "$U/hard/.loom-requeue" &&
	chown root:root "$U/hard/.loom-requeue" &&
	scontrol release "$j" && wait_state "$j" 60 COMPLETED &&
	wait_stepd_log "loom: job $j step 0: not requeueing: .*$U/hard/.loom-requeue: Permission denied" 30 &&
	test "$(job_field "$j" Restarts)" = 0
'

test_expect_success 'garbage with control characters: refused, and the log line does not carry them' '
	j=$(held junk "srun cp $U/junk.req $U/junk/.loom-requeue") &&
	printf "job=\033]0;owned\007\n" | as_nobody tee "$U/junk.req" >/dev/null &&
	scontrol release "$j" && wait_state "$j" 60 COMPLETED &&
	wait_stepd_log "loom: job $j step 0: not requeueing: .*is unusable: .job=?]0;owned?.: bad value" 30 &&
	! cat "$LOOM_CLUSTER_DIR"/log/slurmd-n*.log | grep "loom: job $j" | grep -q "$(printf "\033")" &&
	test ! -e "$U/junk/.loom-requeue"
'

test_expect_success 'stale requests (another job id, an earlier restart, another step) are ignored with a log line' '
	j=$(held stale "srun cp $U/stale.job $U/stale/.loom-requeue; srun cp $U/stale.restart $U/stale/.loom-requeue; srun cp $U/stale.step $U/stale/.loom-requeue") &&
	request 999999 0 0 | as_nobody tee "$U/stale.job" >/dev/null &&
	request "$j" 3 1 | as_nobody tee "$U/stale.restart" >/dev/null &&
	request "$j" 0 7 | as_nobody tee "$U/stale.step" >/dev/null &&
	scontrol release "$j" && wait_state "$j" 60 COMPLETED &&
	wait_stepd_log "loom: job $j restart 0 step 0: ignoring the requeue request of job 999999 restart 0 step 0" 30 &&
	wait_stepd_log "loom: job $j restart 0 step 1: ignoring the requeue request of job $j restart 3 step 1" 30 &&
	wait_stepd_log "loom: job $j restart 0 step 2: ignoring the requeue request of job $j restart 0 step 7" 30 &&
	test "$(job_field "$j" Restarts)" = 0
'

test_expect_success 'the user.s own request is read as the user: the job is requeued once, the request removed' '
	j=$(held own "if [ \"\${SLURM_RESTART_COUNT:-0}\" = 0 ]; then srun cp $U/own.req $U/own/.loom-requeue; else srun true; fi") &&
	request "$j" 0 0 | as_nobody tee "$U/own.req" >/dev/null &&
	scontrol release "$j" &&
	wait_stepd_log "loom: job $j: checkpoint step 7 committed after SIGTERM; requeued (restart 1)" 60 &&
	for i in $(seq 60); do test "$(job_field "$j" Restarts)" = 1 && break; sleep 1; done &&
	test "$(job_field "$j" Restarts)" = 1 && test ! -e "$U/own/.loom-requeue" &&
	scancel "$j"
'

test_expect_success 'a request acted on without a requeue (not a batch job) is removed: the next step does not act on it' '
	as_nobody mkdir -p "$U/once" &&
	as_nobody salloc -N1 -n1 --loom-ckpt="$U/once" sh -c "echo \$SLURM_JOB_ID >$U/once.id &&
		printf \"job=%s\\nrestart=0\\nslurm_step=0\\nstep=3\\nsignal=TERM\\n\" \$SLURM_JOB_ID >$U/once.req &&
		srun cp $U/once.req $U/once/.loom-requeue && srun cp $U/once.req $U/once.req2" >"$TEST_TMP/once.out" 2>&1 &&
	cat "$TEST_TMP/once.out" && j=$(cat "$U/once.id") &&
	wait_stepd_log "loom: job $j: checkpoint step 3 after SIGTERM, not requeued: not a batch job" 30 &&
	test ! -e "$U/once/.loom-requeue" &&
	test $(cat "$LOOM_CLUSTER_DIR"/log/slurmd-n*.log | grep -c "loom: job $j.*step 3") = 1
'
test_done
