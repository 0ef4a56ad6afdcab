# t/conformance/lib.sh: run the conformance program on the test cluster.
# Without PMIx support libloom bootstraps from the launch environment
# loom.so writes (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).
CONF_BOOT=pmix
grep -q '^#define HAVE_PMIX 1' "$LOOM_BUILD_DIR/config.h" || CONF_BOOT=env
#
#   conf_expect DESC TRANSPORT "SRUN-ARGS" RANKS NODES [conformance args]
# passes when the step exits 0, rank 0 alone printed TAP, no check failed,
# the summary line says ranks=RANKS and all checks passed, and libloom's
# own info line (LOOM_DEBUG=info) shows the world it formed: RANKS ranks
# on NODES nodes, bootstrapped by PMIx, with the transport asked for.
# Every run gets --markers DIR, an empty directory of its own under
# $TEST_TMP (the test cluster's nodes share this host): the background-
# progress check signals through marker files there (conf_markers).
CONF=$LOOM_BUILD_DIR/t/conformance/conformance
CONF_LIMIT=${CONF_LIMIT:-600}

conf_markers() {
	mktemp -d "$TEST_TMP/markers.XXXXXX"
}

conf_expect() {
	local desc=$1 tr=$2 sargs=$3 nranks=$4 nnodes=$5
	shift 5
	CONF_ARGS="$*" CONF_TR=$tr CONF_SARGS=$sargs CONF_N=$nranks CONF_NODES=$nnodes
	export CONF_ARGS CONF_TR CONF_SARGS CONF_N CONF_NODES
	test_expect_success "conformance $desc" '
		m=$(conf_markers)
		LOOM_TRANSPORT=$CONF_TR LOOM_TIMEOUT=120 LOOM_DEBUG=info \
			timeout $CONF_LIMIT srun --mpi=pmix $CONF_SARGS "$CONF" --markers "$m" $CONF_ARGS \
			>"$TEST_TMP/c.out" 2>"$TEST_TMP/c.err" && rc=0 || rc=$?
		grep -v "^ok" "$TEST_TMP/c.out" || true; grep -v "^loom: info" "$TEST_TMP/c.err" | head -40
		test $rc = 0 || { echo "srun exit $rc"; exit 1; }
		! grep -q "^not ok" "$TEST_TMP/c.out" || exit 1
		test $(grep -c "^1\.\." "$TEST_TMP/c.out") = 1 || { echo "TAP from more than rank 0"; exit 1; }
		n=$(grep -c "^ok" "$TEST_TMP/c.out") && test "$n" -gt 100 &&
		grep -qx "# conformance backend=native ranks=$CONF_N: $n/$n passed" "$TEST_TMP/c.out" || exit 1
		grep -q "world of $CONF_N ranks on $CONF_NODES node(s), bootstrap $CONF_BOOT, transport $CONF_TR" "$TEST_TMP/c.err" || {
			echo "no libloom info line for $CONF_N ranks, $CONF_NODES nodes, transport $CONF_TR:"
			grep "world of" "$TEST_TMP/c.err"; exit 1; }
	'
}
