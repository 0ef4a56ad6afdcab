#!/bin/sh
# The same conformance program, unchanged, on the MPI backend
# (LOOM_BACKEND=mpi): 2 ranks on one node and 4 ranks on 2 nodes.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
CONF=$LOOM_BUILD_DIR/t/conformance/conformance
if LOOM_BACKEND=mpi "$CONF" --quick 2>&1 | grep -q "^not ok 1 - loom_init"; then
	skip_all "this libloom has no MPI backend"
fi
test_need_cluster
# Open MPI across the two fake nodes of one host: TCP on loopback only
OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_btl OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include

for spec in "-N1 -n2 2" "-N2 -n4 4"; do
	set -- $spec
	sargs="$1 $2" n=$3
	test_expect_success "conformance quick matrix, LOOM_BACKEND=mpi, $sargs: every check passes" '
		LOOM_BACKEND=mpi LOOM_TIMEOUT=120 timeout 600 srun --mpi=pmix '"$sargs"' "$CONF" --quick \
			>"$TEST_TMP/c.out" 2>"$TEST_TMP/c.err" && rc=0 || rc=$?
		grep -v "^ok" "$TEST_TMP/c.out"; head -40 "$TEST_TMP/c.err"
		test $rc = 0 && ! grep -q "^not ok" "$TEST_TMP/c.out" &&
		test $(grep -c "^1\.\." "$TEST_TMP/c.out") = 1 &&
		n=$(grep -c "^ok" "$TEST_TMP/c.out") && test "$n" -gt 100 &&
		grep -qx "# conformance backend=mpi ranks='$n': $n/$n passed" "$TEST_TMP/c.out"
	'
done
test_done
