#!/bin/sh
# Another user (nobody) attacks a forming job on the live cluster: it
# runs the same program as rank 1 with its own or no LOOM_JOB_SECRET, and
# throws idle connections, random bytes, truncated and forged hellos at
# rank 0's MASTER_PORT and mesh port, while the real rank 1 is held back.
# The impostor is refused, the real ranks still form the world and get
# the right allreduce, and the attacks neither end nor stall the job: the
# attacker holds its connections open for the whole run, so handling them
# one at a time (5 s each) would pass the outer timeout. Then the same
# under PMIx (srun --mpi=pmix), whose key is shared through PMIx. Which
# flood connections rank 0 judges before the real rank 1's hello completes
# its world is a race (the newest hello goes first), so the refusal lines
# are shown, not counted, there. Under PMIx rank 0 also has a wildcard
# listener that is not libloom's (the PMIx client's); its mesh port is on one address.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_plugin
test_need_cluster
VICTIM=$LOOM_BUILD_DIR/t/security/victim
FLOOD=$LOOM_SRC_DIR/t/security/flood.py
as_nobody() { runuser -u nobody -- "$@"; }

# ports PID: the TCP ports that process listens on, with their addresses
listeners() {
	ss -Htlnp 2>/dev/null | grep "pid=$1," | awk '{print $4}'
}

# start_held ARGS...: the 2-rank job in the background, rank 1 held
start_held() {
	H=$TEST_TMP/hold.$$
	rm -rf "$H" && mkdir -p "$H"
	LOOM_BOOTSTRAP_TIMEOUT=100 srun "$@" -N2 -n2 "$VICTIM" --hold "$H" >"$TEST_TMP/job.out" 2>"$TEST_TMP/job.err" &
	JOB=$!
	timeout 60 sh -c "while [ ! -f $H/rank0 ]; do sleep 0.1; done" || { echo "rank 0 never started"; return 1; }
	PID0=$(awk '{print $2}' "$H/rank0")
	PORT0=$(awk '{print $4}' "$H/rank0")
	# rank 0 listens once loom_init is under way
	timeout 30 sh -c "while [ -z \"\$(ss -Htlnp | grep pid=$PID0,)\" ]; do sleep 0.1; done"
	listeners "$PID0" >"$TEST_TMP/listen"
	cat "$TEST_TMP/listen"
}

# flood_all: nobody floods every port rank 0 listens on; FLOODPID, FIFO
flood_all() {
	FIFO=$TEST_TMP/flood.in
	rm -f "$FIFO" && mkfifo "$FIFO" && chmod 666 "$FIFO"
	as_nobody python3 "$FLOOD" $(cat "$TEST_TMP/listen") <"$FIFO" >"$TEST_TMP/flood.out" 2>&1 &
	FLOODPID=$!
	exec 7>"$FIFO"
	timeout 60 sh -c "until grep -q ^ready $TEST_TMP/flood.out; do sleep 0.1; done" ||
		{ cat "$TEST_TMP/flood.out"; return 1; }
	cat "$TEST_TMP/flood.out"
}

release_and_wait() {
	touch "$H/go"
	rc=0
	timeout 90 sh -c "while kill -0 $JOB 2>/dev/null; do sleep 0.2; done" || rc=124
	[ $rc = 0 ] && { wait $JOB || rc=$?; }
	exec 7>&-
	wait $FLOODPID 2>/dev/null || true
	cat "$TEST_TMP/job.out"; head -40 "$TEST_TMP/job.err"
	test $rc != 124 || { echo "the job did not finish within 90 s: the attack stalled it"; kill $JOB; return 1; }
	test $rc = 0
}

both_ranks_right() {
	test $(grep -c "^rank [01]: allreduce right (2 ranks)\$" "$TEST_TMP/job.out") = 2
}

test_expect_success 'loom.so gives every task of a step the same 32-hex-digit LOOM_JOB_SECRET, a new one per step; one the user set is kept' '
	srun -N2 -n2 sh -c "echo \$LOOM_JOB_SECRET" >"$TEST_TMP/s1" &&
	srun -N1 -n1 sh -c "echo \$LOOM_JOB_SECRET" >"$TEST_TMP/s2" && cat "$TEST_TMP/s1" "$TEST_TMP/s2" &&
	test $(sort -u "$TEST_TMP/s1" | wc -l) = 1 &&
	grep -Eqx "[0-9a-f]{32}" "$TEST_TMP/s1" &&
	test "$(head -1 "$TEST_TMP/s1")" != "$(cat "$TEST_TMP/s2")" &&
	LOOM_JOB_SECRET=00112233445566778899aabbccddeeff srun -N1 -n1 sh -c "echo \$LOOM_JOB_SECRET" >"$TEST_TMP/s3" &&
	grep -qx 00112233445566778899aabbccddeeff "$TEST_TMP/s3"
'

test_expect_success 'env bootstrap: rank 0 listens on MASTER_ADDR and on its mesh address only, not on every interface' '
	start_held --loom-env=torch &&
	test $(wc -l <"$TEST_TMP/listen") = 2 &&
	! grep -Eq "^(0\.0\.0\.0|\*|\[::\]):" "$TEST_TMP/listen" &&
	grep -q ":$PORT0\$" "$TEST_TMP/listen" &&
	touch "$H/go" && wait $JOB && both_ranks_right
'

test_expect_success 'env bootstrap: an impostor rank 1 of user nobody, with its own or no secret, is refused; the real ranks still get the right allreduce' '
	start_held --loom-env=torch &&
	for s in 0123456789abcdef0123456789abcdef ""; do
		as_nobody env LOOM_JOB_SECRET=$s RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT0 \
			LOOM_BOOTSTRAP_TIMEOUT=20 timeout 60 "$VICTIM" --impostor >"$TEST_TMP/imp.out" 2>&1 && rc=0 || rc=$?
		cat "$TEST_TMP/imp.out"
		test $rc = 3 || { echo "impostor (secret \"$s\"): exit $rc, expected 3 (refused)"; exit 1; }
		grep -q "rank 0 refused us" "$TEST_TMP/imp.out"
	done &&
	FLOODPID=; exec 7>/dev/null &&
	release_and_wait && both_ranks_right &&
	test $(grep -c "refused a connection from .*: it does not hold this job.s secret" "$TEST_TMP/job.err") -ge 2
'

test_expect_success 'env bootstrap: 20 idle connections, random bytes, truncated and forged hellos (rank -1, rank 1) on MASTER_PORT and the mesh port: the job forms and is right' '
	start_held --loom-env=torch && flood_all &&
	release_and_wait && both_ranks_right &&
	{ grep "refused a connection" "$TEST_TMP/job.err" | head -3 || true; } &&
	grep "loom_init took" "$TEST_TMP/job.out"
'

if grep -q "^#define HAVE_PMIX 1" "$LOOM_BUILD_DIR/config.h"; then
test_expect_success 'PMIx bootstrap: the same flood on the mesh port while the ranks wait in the PMIx fence: the job forms and is right' '
	start_held --mpi=pmix && flood_all &&
	release_and_wait && both_ranks_right &&
	{ grep "refused a connection" "$TEST_TMP/job.err" | head -3 || true; }
'
else
	test_skip 'PMIx bootstrap: the same flood on the mesh port' 'libloom built without PMIx'
fi
test_done
