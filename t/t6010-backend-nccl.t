#!/bin/sh
# The NCCL backend (LOOM_BACKEND=nccl). Without a GPU (cudaGetDeviceCount
# gives 0 or an error) the backend must refuse cleanly, every rank the
# same way, and the GPU runs SKIP with the reason. With GPUs, the backend
# check and the conformance suite run on as many ranks as there are
# devices (one node).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/backend/lib.sh"
have_config HAVE_NCCL || skip_all "built without NCCL (configure --with-nccl; needs CUDA)"
ngpu=$("$GPUCOUNT" 2>"$TEST_TMP/gpu.err")
why=$(cat "$TEST_TMP/gpu.err")

if [ "${ngpu:-0}" -lt 1 ]; then
	test_expect_success 'no GPU: LOOM_BACKEND=nccl fails cleanly with LOOM_ERR_UNSUPPORTED and says why' '
		LOOM_BACKEND=nccl "$BCHECK" all >"$TEST_TMP/n.out" 2>&1 && rc=0 || rc=$?
		cat "$TEST_TMP/n.out"
		test $rc = 2 &&
		grep -q "LOOM_BACKEND=nccl: no CUDA device" "$TEST_TMP/n.out" &&
		grep -q "loom_init: not supported by this build or backend" "$TEST_TMP/n.out"
	'
	test_skip 'NCCL backend check and conformance suite on GPUs' "no GPU on this machine (${why:-cudaGetDeviceCount: 0 devices}); the NCCL path is compile- and link-tested only"
	test_done
fi

n=$ngpu
[ "$n" -gt 8 ] && n=8
test_need_cluster
cluster_plugstack none
test_expect_success "mpi_check all on the nccl backend, $n rank(s) on one node (host buffers: native path)" '
	LOOM_BACKEND=nccl timeout 300 srun --mpi=pmix -N1 -n'$n' "$BCHECK" all >"$TEST_TMP/g.out" 2>"$TEST_TMP/g.err" && rc=0 || rc=$?
	tail -20 "$TEST_TMP/g.err"
	test $rc = 0 && grep -q "mpi_check summary: backend=nccl ranks='$n' checks=[0-9]* failed=0" "$TEST_TMP/g.out"
'
if [ -n "$CONF" ]; then
	test_expect_success "conformance suite, LOOM_BACKEND=nccl, $n rank(s)" '
		m=$(mktemp -d "$TEST_TMP/markers.XXXXXX")
		LOOM_BACKEND=nccl timeout 400 srun --mpi=pmix -N1 -n'$n' "$CONF" --markers "$m" >"$TEST_TMP/c.out" 2>"$TEST_TMP/c.err" && rc=0 || rc=$?
		grep "^not ok" "$TEST_TMP/c.out" || true
		test $rc = 0 && grep -E "^# conformance backend=nccl ranks='$n': ([0-9]+)/\1 passed" "$TEST_TMP/c.out"
	'
	grep -h "^# conformance" "$TEST_TMP/c.out" 2>/dev/null
fi
test_done
