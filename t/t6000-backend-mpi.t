#!/bin/sh
# The MPI backend (LOOM_BACKEND=mpi) on the live cluster under
# srun --mpi=pmix: loom calls MPI_Init_thread itself, every collective,
# split/mesh, non-blocking; the conformance suite unchanged; deadlines
# (LOOM_TIMEOUT) and abort. Ends with each program's summary line.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/backend/lib.sh"
have_config HAVE_MPI || skip_all "built without MPI (configure --with-mpi)"
have_config HAVE_PMIX || skip_all "built without PMIx: srun --mpi=pmix cannot start MPI here"
test_need_cluster
cluster_plugstack none
mpi_env
LOOM_BACKEND=mpi
export LOOM_BACKEND

for spec in "-N2 -n4 4" "-N1 -n2 2"; do
	set -- $spec
	sargs="$1 $2" n=$3
	test_expect_success "mpi_check all ($sargs): every collective x dtype x op x size x in-place, split, mesh, non-blocking" '
		LOOM_DEBUG=info mpi_srun 300 --mpi=pmix '"$sargs"' "$BCHECK" all >"$TEST_TMP/b'$n'.out" 2>"$TEST_TMP/b'$n'.err" && rc=0 || rc=$?
		grep -v "^mpi_check: rank [0-9]*: all:" "$TEST_TMP/b'$n'.err" | head -30
		test $rc = 0 &&
		grep -q "mpi_check summary: backend=mpi ranks='$n' checks=[0-9]* failed=0" "$TEST_TMP/b'$n'.out" &&
		test $(grep -c "mpi_check: rank [0-9]*: all: [0-9]* checks, 0 failed (backend mpi)" "$TEST_TMP/b'$n'.err") = '$n' &&
		grep -q "world of '$n' ranks on '"${1#-N}"' node(s), backend mpi (MPI initialized by loom)" "$TEST_TMP/b'$n'.err"
	'
	grep -h "summary" "$TEST_TMP/b$n.out" 2>/dev/null | sed 's/^/# /'
done

test_expect_success 'deadline and abort (-N2 -n4, LOOM_TIMEOUT=2): the last rank skips, the others get LOOM_ERR_TIMEOUT; an abort reaches every rank' '
	LOOM_TIMEOUT=2 mpi_srun 120 --mpi=pmix -N2 -n4 "$BCHECK" timeout >"$TEST_TMP/t.out" 2>"$TEST_TMP/t.err" && rc=0 || rc=$?
	cat "$TEST_TMP/t.err" | head -40
	test $rc = 0 &&
	grep -q "mpi_check summary: backend=mpi ranks=4 checks=[0-9]* failed=0" "$TEST_TMP/t.out" &&
	test $(grep -c "timeout: got operation timed out" "$TEST_TMP/t.err") = 3 &&
	grep -q "timeout: comm dup[0-9]* op allreduce" "$TEST_TMP/t.err" &&
	grep -q "communicator dup[0-9]* aborted by rank 0" "$TEST_TMP/t.err"
'
grep -h "summary" "$TEST_TMP/t.out" 2>/dev/null | sed 's/^/# timeout: /'

if [ -z "$CONF" ]; then
	test_skip 'conformance suite on the mpi backend' 't/conformance/conformance is not built'
else
	for spec in "-N2 -n4 4" "-N1 -n2 2"; do
		set -- $spec
		sargs="$1 $2" n=$3
		test_expect_success "conformance suite, LOOM_BACKEND=mpi ($sargs): every check passes" '
			m=$(mktemp -d "$TEST_TMP/markers.XXXXXX")
			mpi_srun 400 --mpi=pmix '"$sargs"' "$CONF" --markers "$m" >"$TEST_TMP/c'$n'.out" 2>"$TEST_TMP/c'$n'.err" && rc=0 || rc=$?
			grep "^not ok" "$TEST_TMP/c'$n'.out" || true; head -20 "$TEST_TMP/c'$n'.err"
			test $rc = 0 &&
			grep -E "^# conformance backend=mpi ranks='$n': ([0-9]+)/\1 passed" "$TEST_TMP/c'$n'.out"
		'
		grep -h "^# conformance" "$TEST_TMP/c$n.out" 2>/dev/null
	done
	test_expect_success 'conformance --case timeout, LOOM_BACKEND=mpi LOOM_TIMEOUT=2 (-N2 -n4)' '
		LOOM_TIMEOUT=2 mpi_srun 90 --mpi=pmix -N2 -n4 "$CONF" --case timeout >"$TEST_TMP/ct.out" 2>"$TEST_TMP/ct.err" && rc=0 || rc=$?
		cat "$TEST_TMP/ct.out"; grep "^conformance" "$TEST_TMP/ct.err" || true
		test $rc = 0 && test $(grep -c "^conformance: rank [0-9]*: timeout: ok" "$TEST_TMP/ct.err") = 4 &&
		grep -q "^conformance: rank 3: timeout: ok skipped the second allreduce; every other rank reported LOOM_ERR_TIMEOUT\$" "$TEST_TMP/ct.err"
	'
fi
test_done
