#!/bin/sh
# Impostors try to join a growing world on the live cluster
# (docs/security.md, "A newcomer's join"; docs/fault-tolerance.md,
# "Grow"). A job's world of 4 ranks calls loom_comm_grow for one
# newcomer; while its leader waits:
#  - another user (nobody) dials its port with a join hello under a
#    secret of its own: refused, the leader names it;
#  - another job of the same user (root), started with --loom-join and
#    pointed at the world's port: loom.so gave it its own job's secret,
#    so it is refused too;
# none of them is counted: the real newcomer, started with the one srun
# line, still joins and the grown world of 5 gives right sums. Every
# process is bounded (LOOM_BOOTSTRAP_TIMEOUT, LOOM_TIMEOUT, timeout):
# nothing hangs.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
command -v runuser >/dev/null || skip_all "runuser not installed"
LOOM_TEST_NODES=3
LOOM_TEST_CPUS=4        # room for a second job beside the first
export LOOM_TEST_NODES LOOM_TEST_CPUS
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"
GROW=$LOOM_BUILD_DIR/t/runtime/grow-check
as_nobody() { runuser -u nobody -- "$@"; }

cat >"$TEST_TMP/job.sh" <<EOF
#!/bin/sh
timeout -k 10 300 srun -N2 -n4 --ntasks-per-node=2 -w n1,n2 $GROW grow 1
EOF
chmod +x "$TEST_TMP/job.sh"

test_expect_success 'the world of job 1 runs and its leader waits for a newcomer' '
	JOB=$(LOOM_TIMEOUT=200 sbatch --parsable -N3 --ntasks-per-node=2 -o "$TEST_TMP/world.out" \
		"$TEST_TMP/job.sh") && echo "job $JOB" && echo "$JOB" >"$TEST_TMP/job" &&
	wait_for "$TEST_TMP/world.out" "rank 0: master port [0-9]" 120 &&
	sed -n "s/^rank 0: master port \\([0-9]*\\)$/\\1/p" "$TEST_TMP/world.out" >"$TEST_TMP/port" &&
	test -s "$TEST_TMP/port"
'
JOB=$(cat "$TEST_TMP/job" 2>/dev/null)
PORT=$(cat "$TEST_TMP/port" 2>/dev/null)

test_expect_success 'nobody with a secret of its own: refused by the leader, not joined' '
	S=$(od -An -tx1 -N16 /dev/urandom | tr -d " \n") &&
	{ as_nobody env LOOM_JOIN=0 LOOM_JOIN_HOSTS=127.0.0.1 MASTER_PORT=$PORT LOOM_JOB_SECRET=$S \
		LOOM_BOOTSTRAP_TIMEOUT=60 timeout -k 5 90 $GROW join >"$TEST_TMP/nobody.out" 2>&1 && rc=0 || rc=$?; } &&
	cat "$TEST_TMP/nobody.out" && echo "exit $rc" &&
	test "$rc" = 2 &&
	grep -q "join: refused by the leader" "$TEST_TMP/nobody.out" &&
	! grep -q ": grown:" "$TEST_TMP/nobody.out"
'
test_expect_success 'another job of the same user, --loom-join aimed at the world: refused' '
	{ LOOM_BOOTSTRAP_TIMEOUT=60 srun -N1 -n1 -w n3 --loom-join sh -c \
		"MASTER_PORT=$PORT LOOM_JOIN_HOSTS=n1,n2,n3 exec $GROW join" >"$TEST_TMP/job2.out" 2>&1 && rc=0 || rc=$?; } &&
	cat "$TEST_TMP/job2.out" && echo "exit $rc" &&
	test "$rc" != 0 &&
	grep -q "join: refused by the leader" "$TEST_TMP/job2.out" &&
	! grep -q ": grown:" "$TEST_TMP/job2.out"
'
test_expect_success 'the real newcomer (the one srun line) joins: 5 ranks, right sums' '
	{ LOOM_TIMEOUT=60 srun --jobid=$JOB --overlap -N1 -n1 -w n3 --loom-join $GROW join \
		>"$TEST_TMP/join.out" 2>&1 || :; } &&
	wait_state "$JOB" 240 COMPLETED FAILED CANCELLED TIMEOUT &&
	cat "$TEST_TMP/join.out" "$TEST_TMP/world.out" &&
	grep -q "^new 4: grown: rank 4 of 5 sum 15 want 15 ok$" "$TEST_TMP/join.out" &&
	grep -q "^new 4: done$" "$TEST_TMP/join.out" &&
	test "$(grep -Ec "^rank [0-3]: grown: rank [0-3] of 5 sum 15 want 15 ok$" "$TEST_TMP/world.out")" -eq 4 &&
	test "$(grep -Ec "^rank [0-3]: done$" "$TEST_TMP/world.out")" -eq 4 &&
	test "$(job_field "$JOB" JobState)" = COMPLETED
'
test_expect_success 'the leader refused both impostors, each naming the missing secret' '
	test "$(grep -c "the grow.s MASTER_PORT: refused a connection from .*: it does not hold this job.s secret" \
		"$TEST_TMP/world.out")" -ge 2
'
test_done
