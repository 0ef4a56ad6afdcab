#!/bin/sh
# Another user (nobody) floods rank 0's MASTER_PORT with bare connects
# (kept open, sending nothing, 900 at once, for 15 s) from before the
# other ranks dial it until after the job should have formed: strangers
# may cost the ranks redials, never their place (docs/security.md). In
# the flat rendezvous (LOOM_BOOTSTRAP_TREE=0: every rank dials rank 0)
# and in the tree one (node n2's leader dials it with its node's group),
# the job forms within the flood's time and the allreduce is right.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_plugin
test_need_cluster
VICTIM=$LOOM_BUILD_DIR/t/security/victim
FLOOD=$LOOM_SRC_DIR/t/security/connect_flood.py

# flooded ENV...: a 4-rank job on 2 nodes, the ranks but rank 0 held
# until nobody's flood runs on MASTER_PORT; the job must end within 60 s
flooded() {
	H=$TEST_TMP/hold.$$
	rm -rf "$H" && mkdir -p "$H" || return 1
	env "$@" LOOM_BOOTSTRAP_TIMEOUT=60 srun --loom-env=torch -N2 -n4 "$VICTIM" --hold "$H" \
		>"$TEST_TMP/job.out" 2>"$TEST_TMP/job.err" &
	JOB=$!
	timeout 60 sh -c "while [ ! -f $H/rank0 ]; do sleep 0.1; done" || { echo "rank 0 never started"; return 1; }
	PORT0=$(awk '{print $4}' "$H/rank0")
	PID0=$(awk '{print $2}' "$H/rank0")
	timeout 30 sh -c "until ss -Htlnp | grep pid=$PID0, | grep -q :$PORT0\ ; do sleep 0.1; done" || return 1
	ADDR=$(ss -Htlnp | grep "pid=$PID0," | awk '{print $4}' | grep ":$PORT0\$")
	runuser -u nobody -- timeout 30 python3 "$FLOOD" "$ADDR" 15 900 >"$TEST_TMP/flood.out" 2>&1 &
	FLOODPID=$!
	timeout 20 sh -c "until grep -q ^ready $TEST_TMP/flood.out; do sleep 0.1; done" ||
		{ cat "$TEST_TMP/flood.out"; kill $JOB; return 1; }
	sleep 1
	t0=$(date +%s)
	touch "$H/go"
	rc=0
	timeout 60 sh -c "while kill -0 $JOB 2>/dev/null; do sleep 0.2; done" || rc=124
	[ $rc = 0 ] && { wait $JOB || rc=$?; }
	echo "the job ended in $(( $(date +%s) - t0 )) s after the ranks were let go"
	wait $FLOODPID || true
	cat "$TEST_TMP/flood.out" "$TEST_TMP/job.out"
	grep -v "refused a connection" "$TEST_TMP/job.err" | head -20
	grep "refused a connection\|connections refused" "$TEST_TMP/job.err" | head -3
	test $rc != 124 || { echo "the job did not end within 60 s"; kill $JOB; return 1; }
	test $rc = 0 &&
	test $(grep -c "^rank [0-3]: allreduce right (4 ranks)\$" "$TEST_TMP/job.out") = 4
}

test_expect_success 'flat rendezvous (LOOM_BOOTSTRAP_TREE=0): a flood of bare connects on MASTER_PORT by nobody; the job forms and is right' '
	flooded LOOM_BOOTSTRAP_TREE=0
'

test_expect_success 'tree rendezvous: the same flood while node n2s leader dials rank 0; the job forms and is right' '
	flooded LOOM_BOOTSTRAP_TREE=1
'
test_done
