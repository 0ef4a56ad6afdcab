#!/bin/sh
# loom.so and LOOM_FLIGHT_DIR (docs/environment.md) on the live cluster:
# by default a node-local directory per job and user,
# <flight_local_base>/loom-flight.<uid>.<job>; the records of a step whose
# tasks on a node all exited 0 are removed there (as the job's user, by a
# child of slurmstepd that took its ids), a failed step's are kept for
# loom-doctor; flight_dir= names a shared directory (%j), kept; none turns
# it off; a LOOM_FLIGHT_DIR of the user's own is left alone. With jobs of
# a second user (nobody): the directory swapped for a link to a root-only
# one is not followed, and the runtime refuses a directory it does not own.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"
B=$LOOM_BUILD_DIR/bench/loom-bench
DOC=$LOOM_BUILD_DIR/runtime/tools/loom-doctor
L=$TEST_TMP/local
mkdir -p "$L" "$TEST_TMP/shared" "$TEST_TMP/root-only"
chmod 1777 "$L"
chmod 700 "$TEST_TMP/root-only"
cluster_plugstack "flight_local_base=$L"
# nobody submits through our munged (see t7101)
chmod 711 "$LOOM_CLUSTER_DIR/munge"
NOBODY_UID=$(id -u nobody)
as_nobody() { runuser -u nobody -- "$@"; }
# stepd_lines N PATTERN: until the slurmd logs hold N lines matching PATTERN
stepd_lines() {
	timeout 60 sh -c 'until [ "$(cat "$1"/log/slurmd-n*.log | grep -c -- "$2")" -ge "$3" ]; do sleep 0.2; done' \
		sh "$LOOM_CLUSTER_DIR" "$2" "$1" && return 0
	echo "not $1 slurmd log lines /$2/:"; cat "$LOOM_CLUSTER_DIR"/log/slurmd-n*.log | grep "loom:"
	return 1
}
bench() { echo "$B allreduce -b 8 -e 8 -n 3 -w 1"; }

test_expect_success 'default: a node-local directory per job and user in every task' '
	timeout 120 srun -N2 -n2 sh -c "echo \$SLURM_JOB_ID \$LOOM_FLIGHT_DIR" >"$TEST_TMP/o" &&
	cat "$TEST_TMP/o" &&
	j=$(head -1 "$TEST_TMP/o" | cut -d" " -f1) &&
	test "$(sort -u "$TEST_TMP/o")" = "$j $L/loom-flight.$(id -u).$j"
'

test_expect_success 'a step that ended cleanly: its records are removed on every node, and the directory' '
	timeout 120 srun -N2 -n2 --mpi=none sh -c "$(bench) >/dev/null && echo \$SLURM_JOB_ID" >"$TEST_TMP/o" &&
	j=$(head -1 "$TEST_TMP/o") &&
	stepd_lines 2 "loom: job $j step 0: flight records removed from $L/loom-flight.$(id -u).$j (every task on this node exited 0)" &&
	! test -e "$L/loom-flight.$(id -u).$j"
'

test_expect_success 'a step with a failed task: the records stay, loom-doctor reads them' '
	! timeout 120 srun -N2 -n2 sh -c "$(bench) >/dev/null; echo \$SLURM_JOB_ID; exit 3" >"$TEST_TMP/o" &&
	j=$(head -1 "$TEST_TMP/o") && D=$L/loom-flight.$(id -u).$j &&
	stepd_lines 2 "loom: job $j step 0: flight records kept in $D (a task on this node did not exit 0)" &&
	test $(ls "$D" | wc -l) -eq 2 &&
	"$DOC" "$D" >"$TEST_TMP/doc" &&
	grep -q "^verdict: no hang" "$TEST_TMP/doc"
'

test_expect_success 'flight_dir= a shared directory (%j): set, and kept after a clean step' '
	cluster_plugstack "flight_dir=$TEST_TMP/shared/%j" &&
	timeout 120 srun -N2 -n2 sh -c "$(bench) >/dev/null && echo \$SLURM_JOB_ID \$LOOM_FLIGHT_DIR" >"$TEST_TMP/o" &&
	j=$(head -1 "$TEST_TMP/o" | cut -d" " -f1) &&
	test "$(sort -u "$TEST_TMP/o")" = "$j $TEST_TMP/shared/$j" &&
	test $(ls "$TEST_TMP/shared/$j" | wc -l) -eq 2
'

test_expect_success 'flight_dir=none: not set; a LOOM_FLIGHT_DIR of the user is left alone' '
	cluster_plugstack "flight_dir=none" &&
	timeout 120 srun -N1 -n1 sh -c "echo x\${LOOM_FLIGHT_DIR}x" >"$TEST_TMP/o" &&
	test "$(cat "$TEST_TMP/o")" = xx &&
	cluster_plugstack "flight_local_base=$L" &&
	LOOM_FLIGHT_DIR=$TEST_TMP/mine timeout 120 srun -N1 -n1 sh -c "echo \$LOOM_FLIGHT_DIR" >"$TEST_TMP/o" &&
	test "$(cat "$TEST_TMP/o")" = "$TEST_TMP/mine"
'

test_expect_success 'a bad flight_dir in plugstack.conf fails the step with a line naming it' '
	cluster_plugstack "flight_dir=relative/%j" &&
	! timeout 120 srun -N1 -n1 true >"$TEST_TMP/o" 2>&1 &&
	cat "$TEST_TMP/o" &&
	grep -q "flight_dir=.relative/%j. must be an absolute path or none" "$TEST_TMP/o" &&
	cluster_plugstack "flight_local_base=$L"
'

test_expect_success 'nobody: the directory swapped for a link to a root-only one is not followed by the removal' '
	echo keep >"$TEST_TMP/root-only/step0-rank0.flight" &&
	as_nobody sbatch --parsable -N1 -n1 -o "$L/nobody.out" --wrap "srun sh -c \"$(bench) >/dev/null && mv \\\$LOOM_FLIGHT_DIR \\\$LOOM_FLIGHT_DIR.real && ln -s $TEST_TMP/root-only \\\$LOOM_FLIGHT_DIR\"" >"$TEST_TMP/j" &&
	j=$(cat "$TEST_TMP/j") &&
	wait_state "$j" 120 COMPLETED &&
	stepd_lines 1 "loom: job $j step 0: flight records not removed: $L/loom-flight.$NOBODY_UID.$j: removing the records as uid $NOBODY_UID: " &&
	test "$(cat "$TEST_TMP/root-only/step0-rank0.flight")" = keep &&
	test -L "$L/loom-flight.$NOBODY_UID.$j" &&
	test -f "$L/loom-flight.$NOBODY_UID.$j.real/step0-rank0.flight"
'

test_expect_success 'nobody: the runtime records nothing in a directory it does not own, and says why' '
	as_nobody env LOOM_FLIGHT_DIR=$TEST_TMP/shared $B allreduce -b 8 -e 8 -n 2 -w 1 >"$TEST_TMP/o" 2>&1 &&
	cat "$TEST_TMP/o" &&
	grep -q "warning: flight recorder off: LOOM_FLIGHT_DIR=$TEST_TMP/shared: Operation not permitted (it must be a directory of this user, not a link)" "$TEST_TMP/o" &&
	! ls "$TEST_TMP/shared"/*.flight 2>/dev/null
'
test_done
