#!/bin/sh
# The PyTorch process group "loom" (torch/, loom.torch) on the live
# cluster, 2 nodes x 2 tasks under srun with loom.so (env:// rendezvous,
# torch's TCPStore on MASTER_PORT, libloom's world on the port rank 0
# publishes in it): every operation x dtype x ReduceOp against gloo in the
# same job; DDP on "loom" ends with the parameters of DDP on gloo; a rank
# killed, or stopped, during a DDP step makes every other rank raise
# within the timeout; mismatched collectives under LOOM_CHECK=1 raise on
# every rank; examples/torch_ddp_loom.sbatch runs; loom-doctor names a
# rank held before a DDP step while the others wait in its allreduce. Needs
# python3-torch, libtorch-dev and pybind11-dev (CI installs them through
# contrib/install-deps): skipped without them.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_torch_extension
test_need_plugin
test_need_cluster
PY=$LOOM_PYTHON
TP=$LOOM_SRC_DIR/t/python
DOC=$LOOM_BUILD_DIR/runtime/tools/loom-doctor

test_expect_success 'every operation x dtype x ReduceOp on loom equals gloo (4 ranks, 2 nodes)' '
	timeout 300 srun -N2 -n4 "$PY" "$TP/torch_backend.py" >"$TEST_TMP/ops" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/ops" && test $rc = 0 &&
	grep -q "^PASS: torch_backend, 4 ranks, [0-9]* checks a rank, 0 failed" "$TEST_TMP/ops" &&
	! grep -q "^FAIL" "$TEST_TMP/ops"
'

test_expect_success 'DDP on loom ends with the parameters of DDP on gloo (max abs diff <= 1e-6)' '
	timeout 300 srun -N2 -n4 "$PY" "$TP/torch_ddp_compare.py" --steps 20 >"$TEST_TMP/ddp" 2>&1 &&
	rc=0 || rc=$?; cat "$TEST_TMP/ddp" && test $rc = 0 &&
	test $(grep -c "^ddp rank [0-3]/4: 20 steps, max |loom - gloo| .*, max |rank - rank 0| 0," \
		"$TEST_TMP/ddp") = 4
'

# fault NAME TIMEOUT MODE: the three survivors raise in time, naming the
# operation and loom's verdict
fault() {
	timeout 120 srun -N2 -n4 --kill-on-bad-exit=0 "$PY" "$TP/torch_fault.py" "$2" "$3" \
		>"$TEST_TMP/$1" 2>&1 || :; cat "$TEST_TMP/$1" &&
	test $(grep -c "^rank [0-2] raised after [0-9.]* s (timeout $2 s): loom process group: allreduce: the operation failed: LOOM_ERR_$4" \
		"$TEST_TMP/$1") = 3
}

test_expect_success 'a rank killed during a DDP step: every other rank raises PEER_LOST within the timeout' '
	fault kill 30 kill PEER_LOST
'

test_expect_success 'a rank stopped during a DDP step: every other rank raises TIMEOUT at the timeout' '
	fault hang 5 hang TIMEOUT
'
test_expect_success 'mismatched collectives under LOOM_CHECK=1: every rank raises MISMATCH' '
	LOOM_CHECK=1 timeout 120 srun -N2 -n4 "$PY" "$TP/torch_mismatch.py" >"$TEST_TMP/mm" 2>&1 &&
	rc=0 || rc=$?; cat "$TEST_TMP/mm" && test $rc = 0 &&
	grep -q "^rank 0 raised: loom process group: allreduce: the operation failed: LOOM_ERR_MISMATCH" "$TEST_TMP/mm" &&
	test $(grep -c "^rank [1-3] raised: loom process group: broadcast: the operation failed: LOOM_ERR_MISMATCH" \
		"$TEST_TMP/mm") = 3
'

test_expect_success 'sbatch --wait examples/torch_ddp_loom.sbatch: DDP on loom, 4 ranks' '
	mkdir "$TEST_TMP/sb" && (cd "$TEST_TMP/sb" &&
	LOOM_EXAMPLES=$LOOM_SRC_DIR/examples PYTHON=$PY timeout 300 sbatch --wait -o "$TEST_TMP/sb/job.out" \
		"$LOOM_SRC_DIR/examples/torch_ddp_loom.sbatch" --steps 10 --width 128 --log-every 5 >/dev/null) &&
	rc=0 || rc=$?; cat "$TEST_TMP/sb/job.out" && test $rc = 0 &&
	test $(grep -c "^rank [0-3]/4 step 10 loss " "$TEST_TMP/sb/job.out") = 4 &&
	grep -q "^loom: 4 ranks, 10 steps, " "$TEST_TMP/sb/job.out" &&
	grep -q "^final parameters: sha256 [0-9a-f]*$" "$TEST_TMP/sb/job.out"
'
# the held rank (3, on n2) is named while the others wait in the step's
# gradient allreduce; then released (also when a check failed), the job
# ends; everything under timeouts
held_doctor() {
	timeout 120 sh -c 'until [ -e "$1/held" ]; do sleep 0.2; done' sh "$h" &&
	timeout 120 sh -c 'until "$0" "$1/flight" >"$2" 2>&1;
		grep -q "^verdict: world: ranks 0-2 wait in allreduce" "$2"; do sleep 0.2; done' \
		"$DOC" "$h" "$TEST_TMP/hdoc" &&
	cat "$TEST_TMP/hdoc" &&
	grep -Eq "^verdict: world: ranks 0-2 wait in allreduce #[0-9]+ \([0-9.]+ s\); rank 3 \(n2, pid [0-9]+\) last finished allreduce #[0-9]+ and is in no collective\$" \
		"$TEST_TMP/hdoc" &&
	j=$(squeue -h -o %i -n t-hold) && test -n "$j" &&
	{ LOOM_FLIGHT_DIR=$h/flight timeout 120 "$DOC" --job "$j" >"$TEST_TMP/hjdoc" 2>&1 || :; } &&
	cat "$TEST_TMP/hjdoc" &&
	grep -Eq "^verdict: world: ranks 0-2 wait in allreduce #[0-9]+ .*; rank 3 \(n2, pid [0-9]+\) last finished" \
		"$TEST_TMP/hjdoc"
}
test_expect_success 'loom-doctor on a torch job with one rank held before a step names it' '
	h=$TEST_TMP/hold && mkdir -p "$h/flight" && chmod 777 "$h" &&
	{ LOOM_FLIGHT_DIR=$h/flight timeout 300 srun -N2 -n4 --ntasks-per-node=2 -J t-hold \
		"$PY" "$TP/torch_hold.py" "$h" 6 3 >"$TEST_TMP/hold.out" 2>&1 & echo $! >"$TEST_TMP/hold.pid"; } &&
	{ held_doctor; ok=$?; } ; touch "$h/release" &&
	wait $(cat "$TEST_TMP/hold.pid") && cat "$TEST_TMP/hold.out" && test $ok = 0 &&
	test $(grep -c "^rank [0-3]/4: 6 steps$" "$TEST_TMP/hold.out") = 4
'
test_done
