#!/bin/sh
# The prepared GPU check t/gpu/device-check.sh cannot rot: the carried
# build comes from the documented command t/gpu/make-build.sh, and on this
# machine (no GPU) the script runs its CPU parts, which pass, and reports
# every GPU part as NOT RUN with the reason: the GPU check programs are
# in the carried build, start, and say themselves that there is no GPU.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/backend/lib.sh"
have_config HAVE_NCCL || skip_all "built without NCCL (configure --with-nccl; needs CUDA)"
ngpu=$("$GPUCOUNT" 2>/dev/null) || ngpu=0
[ "${ngpu:-0}" = 0 ] || skip_all "this machine has $ngpu GPU(s): run t/gpu/device-check.sh itself (t/gpu/README)"
G=$LOOM_SRC_DIR/t/gpu
# reuse t/gpu/build when make-build.sh made it after the last source change
B=$G/build
if [ ! -f "$B/build-info" ] || [ -n "$(find "$LOOM_SRC_DIR/runtime" "$LOOM_SRC_DIR/t/backend" "$LOOM_SRC_DIR/spank" \
	"$LOOM_SRC_DIR/t/conformance" "$LOOM_SRC_DIR/configure" "$G" -newer "$B/build-info" \
	\( -name '*.[ch]' -o -name '*.sh' -o -name configure -o -name '*.am' -o -name '*.mk' \) 2>/dev/null | head -1)" ]; then
	B=$TEST_TMP/build
fi
export B G

test_expect_success 'make-build.sh makes the carried build: libloom, the check programs, no PMIx/MPI/SPANK' '
	if [ "$B" = "$TEST_TMP/build" ]; then sh "$G/make-build.sh" "$B"; fi
	ls "$B/lib" "$B/bin"
	for p in mpi_check conformance gpu_count stream_order bad_buffers nccl_timeout loom-topo-probe; do
		test -x "$B/bin/$p" || { echo "no $p in the carried build"; exit 1; }
	done

	ls "$B"/lib/libloom.so.* >/dev/null &&
	grep -q "^#define HAVE_NCCL 1" "$B/config.h" &&
	! grep -q "^#define HAVE_PMIX 1" "$B/config.h" && ! grep -q "^#define HAVE_MPI 1" "$B/config.h" &&
	grep -q "^configure --disable-spank" "$B/build-info" &&
	! ldd "$B/lib/libloom.so.0" | grep -Eq "libpmix|libmpi|libhwloc"
'
test_expect_success 'the probe finds its hwloc in the carried lib/ (when this machine had hwloc)' '
	if grep -q "^#define HAVE_HWLOC 1" "$B/config.h"; then
		ls "$B"/lib/libhwloc.so.* && grep -q "^carried libraries: .*libhwloc" "$B/build-info" &&
		LD_LIBRARY_PATH=$B/lib ldd "$B/bin/loom-topo-probe" | grep "libhwloc.* => $B/lib/"
	else
		! ldd "$B/bin/loom-topo-probe" | grep -q libhwloc
	fi
'
test_expect_success 'device-check.sh without a GPU: exit 0, log and summary written' '
	LOOM_GPU_BUILD=$B timeout 300 sh "$G/device-check.sh" "$TEST_TMP/out1" >"$TEST_TMP/dc.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/dc.out"
	test $rc = 0 && test -s "$TEST_TMP/out1/device-check.log" &&
	test $(wc -l <"$TEST_TMP/out1/summary.txt") = 17
'
S=$TEST_TMP/out1/summary.txt
for p in "carried build loads" "native backend check, 1 rank" "native conformance --quick, 1 rank" \
	"nccl refuses cleanly without GPU"; do
	test_expect_success "CPU part passes: $p" '
		grep -E "^'"$p"' +PASS" "$S"
	'
done
test_expect_success 'the CPU parts show their figures' '
	grep -Eq "native backend check, 1 rank +PASS \(mpi_check summary: backend=native ranks=1 checks=[0-9]+ failed=0\)" "$S" &&
	grep -Eq "native conformance --quick, 1 rank +PASS \(# conformance backend=native ranks=1: ([0-9]+)/\1 passed\)" "$S"
'
for p in "nccl backend check, 1 rank" "nccl conformance --quick, 1 rank" "conformance on device buffers"; do
	test_expect_success "GPU part not run, with the reason: $p" '
		grep -E "^'"$p"' +NOT RUN \(no GPU: .+\)$" "$S"
	'
done
# these ran: their programs said there is no GPU (exit 77), in their words
for p in "loom_comm_set_stream ordering" "buffer check: another-context" "buffer check: freed" \
	"buffer check: mixed" "nccl timeout abort: held-stream" "nccl timeout abort: unmatched-send"; do
	test_expect_success "GPU check program ran and said NOT RUN: $p" '
		grep -E "^'"$p"' +NOT RUN \(no GPU: cudaGetDeviceCount: .+\)$" "$S"
	'
done
if grep -q "^#define HAVE_HWLOC 1" "$B/config.h" 2>/dev/null; then
	test_expect_success 'the planner probe read the live topology: no NVIDIA GPU here, NOT RUN' '
		grep -Eq "^planner on live NVML +NOT RUN \(no NVIDIA GPU in the topology\)$" "$S" &&
		grep -q "^topology: [0-9]* NUMA node(s), [0-9]* PU(s)" "$TEST_TMP/out1/device-check.log"
	'
else
	test_expect_success 'the planner probe, built without hwloc, says so: NOT RUN' '
		grep -Eq "^planner on live NVML +NOT RUN \(built without hwloc" "$S"
	'
fi
test_expect_success 'NCCL rank limit and loom_dp are listed, never claimed; nothing left unimplemented' '
	grep -Eq "^nccl, 2\+ ranks +NOT RUN \(NCCL refuses two ranks on one GPU" "$S" &&
	! grep -q "not implemented" "$S" &&
	grep -Eq "^loom_dp device gradients +NOT RUN \(not supported: " "$S" &&
	grep -Eq "^torch group on CUDA tensors +NOT RUN \(.+\)$" "$S" &&
	test $(grep -c " PASS" "$S") = 4 && ! grep -q " FAIL" "$S"
'
F=$LOOM_BUILD_DIR/spank/test/.libs/libfakenvml.so
export F
if ! grep -q "^#define HAVE_HWLOC 1" "$B/config.h" 2>/dev/null; then
	test_skip 'the probe plans on a recorded topology with a fake NVML' 'no hwloc in the carried build'
elif [ ! -f "$F" ]; then
	test_skip 'the probe plans on a recorded topology with a fake NVML' 'no fake NVML: built with the plugin tests'
else
test_expect_success 'the probe plans on a recorded topology with a fake NVML: its PASS line can be reached' '
	LOOM_FAKE_NVML_BUSES=0:dd,0:cf,0:c1,0:9b,0:5f,0:51,0:41,0:19 LD_LIBRARY_PATH=$B/lib \
		"$B/bin/loom-topo-probe" --root "$LOOM_SRC_DIR/t/fixtures/dgx-h100.xml" --nvml "$F" \
		>"$TEST_TMP/probe.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/probe.out"; test $rc = 0 &&
	grep -q "^loom-topo-probe: PASS planned 8 task(s) on 8 GPU(s), GPU order nvml (NVML lists 8)$" "$TEST_TMP/probe.out" &&
	test $(grep -c "^task [0-7]: CUDA_VISIBLE_DEVICES=4,5,6,7,0,1,2,3 LOOM_LOCAL_DEVICE=[0-7] cpus [0-9]" "$TEST_TMP/probe.out") = 8 &&
	grep -q "^task 0: CUDA_VISIBLE_DEVICES=4,5,6,7,0,1,2,3 LOOM_LOCAL_DEVICE=0 .* NCCL_IB_HCA==mlx5_3$" "$TEST_TMP/probe.out" &&
	grep -q "^task 7: CUDA_VISIBLE_DEVICES=4,5,6,7,0,1,2,3 LOOM_LOCAL_DEVICE=7 " "$TEST_TMP/probe.out"
'
fi
test_expect_success 'conformance --device refuses a backend that takes host memory only' '
	test_must_fail_with "conformance: --device needs LOOM_BACKEND=nccl" env LD_LIBRARY_PATH=$B/lib \
		LOOM_BACKEND=native "$B/bin/conformance" --quick --device
'
test_expect_success 'device-check.sh without the carried build: FAIL naming make-build.sh, exit 1' '
	LOOM_GPU_BUILD=$TEST_TMP/nothing sh "$G/device-check.sh" "$TEST_TMP/out2" >"$TEST_TMP/dc2.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/dc2.out"; test $rc = 1 &&
	grep -q "^carried build found *FAIL (no .*: run t/gpu/make-build.sh" "$TEST_TMP/out2/summary.txt"
'
test_expect_success 'device-check.sh without OUTDIR: usage, exit non-zero' '
	test_must_fail_with "usage: device-check.sh OUTDIR" sh "$G/device-check.sh"
'
test_done
