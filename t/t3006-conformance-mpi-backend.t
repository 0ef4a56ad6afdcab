#!/bin/sh
# The same conformance program, unchanged, on the MPI backend
# (LOOM_BACKEND=mpi): 2 ranks on one node and 4 ranks on 2 nodes.
# Skips only when the build has no MPI backend (config.h), never because
# a run failed.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/backend/lib.sh"
. "$LOOM_SRC_DIR/t/conformance/lib.sh"
have_config HAVE_MPI || skip_all "built without MPI (configure --with-mpi): this libloom has no MPI backend"
have_config HAVE_PMIX || skip_all "built without PMIx: srun --mpi=pmix cannot start MPI here"
test_need_cluster
# Open MPI across the two fake nodes of one host: TCP on loopback only
mpi_env

for spec in "-N1 -n2 2" "-N2 -n4 4"; do
	set -- $spec
	sargs="$1 $2" n=$3
	test_expect_success "conformance quick matrix, LOOM_BACKEND=mpi, $sargs: every check passes" '
		m=$(conf_markers)
		LOOM_BACKEND=mpi LOOM_TIMEOUT=120 mpi_srun 600 --mpi=pmix '"$sargs"' "$CONF" --quick --markers "$m" \
			>"$TEST_TMP/c.out" 2>"$TEST_TMP/c.err" && rc=0 || rc=$?
		grep -v "^ok" "$TEST_TMP/c.out" || true; head -40 "$TEST_TMP/c.err"
		test $rc = 0 && ! grep -q "^not ok" "$TEST_TMP/c.out" &&
		test $(grep -c "^1\.\." "$TEST_TMP/c.out") = 1 &&
		n=$(grep -c "^ok" "$TEST_TMP/c.out") && test "$n" -gt 100 &&
		grep -qx "# conformance backend=mpi ranks='$n': $n/$n passed" "$TEST_TMP/c.out"
	'
done
test_done
