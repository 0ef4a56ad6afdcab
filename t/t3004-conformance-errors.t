#!/bin/sh
# The conformance suite's error cases on the live cluster: a rank that
# skips a collective (LOOM_ERR_TIMEOUT for the others after LOOM_TIMEOUT,
# and libloom's own line on each of them naming the communicator, the
# operation and the missing rank), a rank that dies mid-operation
# (LOOM_ERR_PEER_LOST for the others, not TIMEOUT: LOOM_TIMEOUT is 600 s
# and the outer timeout far less), ranks that disagree with LOOM_CHECK=1
# (LOOM_ERR_MISMATCH on every rank). Each rank prints its own verdict
# line on stderr. No durations are measured.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_cluster
CONF=$LOOM_BUILD_DIR/t/conformance/conformance

# verdicts CASE N: N lines "conformance: rank R: CASE: ok", one per rank
verdicts() {
	local c=$1 want=$2 got
	got=$(grep -c "^conformance: rank [0-9]*: $c: ok" "$TEST_TMP/e.err")
	grep "^conformance: rank" "$TEST_TMP/e.err"
	test "$got" = "$want" || { echo "$got of $want ranks report $c ok"; return 1; }
	! grep -q "^conformance: rank [0-9]*: $c: FAIL" "$TEST_TMP/e.err"
}

# libloom_lines PATTERN N: each of ranks 0..N-2 (all but the last) wrote
# libloom's line "loom[R/N node]: error: PATTERN" on e.err
libloom_lines() {
	local pat=$1 n=$2 r=0
	while [ $r -lt $((n - 1)) ]; do
		grep -Eq "^loom\[$r/$n [^]]*\]: error: $pat\$" "$TEST_TMP/e.err" ||
			{ echo "rank $r: no libloom line /$pat/"; return 1; }
		r=$((r + 1))
	done
}

for spec in "tcp -N2 -n4 4" "shm -N1 -n2 2" "auto -N2 -n2 2"; do
	set -- $spec
	tr=$1 sargs="$2 $3" n=$4
	# the case dups world (seq 1), then allreduces twice (seq 2, 3)
	test_expect_success "timeout ($sargs, LOOM_TRANSPORT=$tr): the last rank skips an allreduce, the others get LOOM_ERR_TIMEOUT (LOOM_TIMEOUT=2) and libloom names comm, op and the missing rank" '
		LOOM_TRANSPORT='$tr' LOOM_TIMEOUT=2 timeout 60 srun --mpi=pmix '"$sargs"' "$CONF" --case timeout \
			>"$TEST_TMP/e.out" 2>"$TEST_TMP/e.err" && rc=0 || rc=$?
		cat "$TEST_TMP/e.out"; grep -v "^conformance" "$TEST_TMP/e.err" | head -20 || true
		test $rc = 0 && verdicts timeout '$n' &&
		grep -q "^ok 2 - rank '$((n - 1))' skips an allreduce" "$TEST_TMP/e.out" &&
		grep -q "^conformance: rank '$((n - 1))': timeout: ok skipped the second allreduce; every other rank reported LOOM_ERR_TIMEOUT\$" "$TEST_TMP/e.err" &&
		libloom_lines "timeout: comm world op allreduce seq 3 after [0-9.]+ s: rank '$((n - 1))' never arrived" '$n'
	'
done

for spec in "exit tcp -N2 -n4 4" "signal auto -N2 -n4 4" "signal shm -N1 -n2 2" "exit shm -N1 -n2 2"; do
	set -- $spec
	how=$1 tr=$2 sargs="$3 $4" n=$5
	test_expect_success "peer-lost ($sargs, LOOM_TRANSPORT=$tr, --kill $how): the others' next allreduce gets LOOM_ERR_PEER_LOST, not a timeout (LOOM_TIMEOUT=600)" '
		LOOM_TRANSPORT='$tr' LOOM_TIMEOUT=600 timeout 90 srun --mpi=pmix '"$sargs"' "$CONF" --case peer-lost --kill '$how' \
			>"$TEST_TMP/e.out" 2>"$TEST_TMP/e.err" && rc=0 || rc=$?
		cat "$TEST_TMP/e.out"; grep -v "^conformance" "$TEST_TMP/e.err" | head -20 || true
		test $rc != 124 || { echo "timed out: a survivor hung"; exit 1; }
		verdicts peer-lost '$((n - 1))' &&
		test $(grep -c "^conformance: rank [0-9]*: peer-lost: ok the \(fourth\|fifth\) allreduce got a peer rank was lost\$" "$TEST_TMP/e.err") = '$((n - 1))' &&
		grep -q "^conformance: rank '$((n - 1))': peer-lost: dying now" "$TEST_TMP/e.err" &&
		grep -q "^ok 2 - rank '$((n - 1))' dies" "$TEST_TMP/e.out" &&
		libloom_lines "(rank '$((n - 1))' lost: .*|comm world: allreduce seq [0-9]+: rank '$((n - 1))' is gone)" '$n'
	'
done

for what in count coll dtype op root; do
	test_expect_success "mismatch ($what, -N2 -n4, LOOM_CHECK=1): every rank gets LOOM_ERR_MISMATCH" '
		LOOM_CHECK=1 LOOM_TIMEOUT=30 timeout 60 srun --mpi=pmix -N2 -n4 "$CONF" --case mismatch --mismatch '$what' \
			>"$TEST_TMP/e.out" 2>"$TEST_TMP/e.err" && rc=0 || rc=$?
		cat "$TEST_TMP/e.out"; grep -v "^conformance" "$TEST_TMP/e.err" | head -20 || true
		test $rc = 0 && verdicts mismatch 4 && grep -q "^ok 2 - rank 1 differs" "$TEST_TMP/e.out"
	'
done
test_done
