#!/bin/sh
# The prepared GPU check t/gpu/device-check.sh cannot rot: the carried
# build comes from the documented command t/gpu/make-build.sh, and on this
# machine (no GPU) the script runs its CPU parts, which pass, and reports
# every GPU part as NOT RUN with the reason.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/backend/lib.sh"
have_config HAVE_NCCL || skip_all "built without NCCL (configure --with-nccl; needs CUDA)"
ngpu=$("$GPUCOUNT" 2>/dev/null) || ngpu=0
[ "${ngpu:-0}" = 0 ] || skip_all "this machine has $ngpu GPU(s): run t/gpu/device-check.sh itself (t/gpu/README)"
G=$LOOM_SRC_DIR/t/gpu
# reuse t/gpu/build when make-build.sh made it after the last source change
B=$G/build
if [ ! -f "$B/build-info" ] || [ -n "$(find "$LOOM_SRC_DIR/runtime" "$LOOM_SRC_DIR/t/backend" \
	"$LOOM_SRC_DIR/t/conformance" "$LOOM_SRC_DIR/configure" "$G" -newer "$B/build-info" \
	\( -name '*.[ch]' -o -name '*.sh' -o -name configure -o -name '*.am' -o -name '*.mk' \) 2>/dev/null | head -1)" ]; then
	B=$TEST_TMP/build
fi
export B G

test_expect_success 'make-build.sh makes the carried build: libloom, the check programs, no PMIx/MPI/SPANK' '
	if [ "$B" = "$TEST_TMP/build" ]; then sh "$G/make-build.sh" "$B"; fi
	ls "$B/lib" "$B/bin"
	test -x "$B/bin/mpi_check" && test -x "$B/bin/conformance" && test -x "$B/bin/gpu_count" &&
	ls "$B"/lib/libloom.so.* >/dev/null &&
	grep -q "^#define HAVE_NCCL 1" "$B/config.h" &&
	! grep -q "^#define HAVE_PMIX 1" "$B/config.h" && ! grep -q "^#define HAVE_MPI 1" "$B/config.h" &&
	grep -q "^configure --disable-spank" "$B/build-info" &&
	! ldd "$B/lib/libloom.so.0" | grep -Eq "libpmix|libmpi|libhwloc"
'
test_expect_success 'device-check.sh without a GPU: exit 0, log and summary written' '
	LOOM_GPU_BUILD=$B timeout 300 sh "$G/device-check.sh" "$TEST_TMP/out1" >"$TEST_TMP/dc.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/dc.out"
	test $rc = 0 && test -s "$TEST_TMP/out1/device-check.log" &&
	test $(wc -l <"$TEST_TMP/out1/summary.txt") = 13
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
for p in "nccl backend check, 1 rank" "nccl conformance --quick, 1 rank"; do
	test_expect_success "GPU part not run, with the reason: $p" '
		grep -E "^'"$p"' +NOT RUN \(no GPU: .+\)$" "$S"
	'
done
test_expect_success 'NCCL rank limit and the parts not implemented yet are listed, never claimed' '
	grep -Eq "^nccl, 2\+ ranks +NOT RUN \(NCCL refuses two ranks on one GPU" "$S" &&
	test $(grep -c "NOT RUN (not implemented yet" "$S") = 5 &&
	grep -Eq "^loom_dp device gradients +NOT RUN \(not supported: " "$S" &&
	test $(grep -c " PASS" "$S") = 4 && ! grep -q " FAIL" "$S"
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
