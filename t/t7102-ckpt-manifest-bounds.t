#!/bin/sh
# Manifests that would make the loader allocate or compute past its
# bounds, on the live cluster (2 ranks on 2 nodes, runtime/ckpt/test/ckpt-drive):
# a chunk of 1 byte, a shape of 2^96 elements, a shape whose product wraps
# around 2^64 to the byte count written beside it, and ranks that read
# manifests with different chunk sizes. Each gives a clear error (the
# restore falls back to the previous step, or fails on every rank), no
# crash and no hang. Then the parser alone under valgrind on truncated
# and garbage manifests.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
DRIVE="$LOOM_BUILD_DIR/runtime/ckpt/test/ckpt-drive"
FILES="$LOOM_BUILD_DIR/runtime/ckpt/test/ckpt_files"
test_need_cluster

export LOOM_CKPT_CHECKSUM=crc32c
run2() { srun --mpi=pmix -N2 -n2 "$@"; }
# damaged NAME SED: step 1 good, step 2 with SED applied to its MANIFEST;
# a restore must fall back to step 1 and say why step 2 is unusable
damaged() {
	local d=$TEST_TMP/$1
	mkdir -p "$d" && run2 "$DRIVE" save "$d" 1 rows && run2 "$DRIVE" save "$d" 2 rows &&
	sed -i "$2" "$d/step-2/MANIFEST" && cat "$d/step-2/MANIFEST" &&
	run2 "$DRIVE" restore "$d" rows >"$TEST_TMP/$1.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/$1.out"; test $rc = 0 &&
	grep -q "restore ranks 2: success step 1 wrong 0" "$TEST_TMP/$1.out"
}

test_expect_success 'a manifest with chunk 1 is refused with the bounds, the previous step is loaded' '
	damaged chunk1 "s/^chunk .*/chunk 1/" &&
	grep -q "step-2/MANIFEST: line 4: chunk 1 outside 4096..1073741824 bytes" "$TEST_TMP/chunk1.out"
'

test_expect_success 'a shape of 2^96 elements is refused as too large' '
	damaged huge "s/shape 61,40 bytes [0-9]*/shape 4294967296,4294967296,4294967296 bytes 9760/" &&
	grep -q "tensor matrix: the shape has no dimension or is too large" "$TEST_TMP/huge.out"
'

test_expect_success 'a shape whose product wraps around 2^64 (to 0 bytes) is refused' '
	damaged wrap "s/shape 61,40 bytes [0-9]*/shape 4611686018427387904,4 bytes 0/" &&
	grep -q "tensor matrix: the shape has no dimension or is too large" "$TEST_TMP/wrap.out"
'

test_expect_success 'ranks that read manifests with different chunk sizes: every rank says so, the restore fails, no hang' '
	mkdir -p "$TEST_TMP/r0" "$TEST_TMP/r1" &&
	srun --mpi=pmix -N1 -n1 env LOOM_CKPT_CHUNK=4096 "$DRIVE" save "$TEST_TMP/r0" 1 rows &&
	srun --mpi=pmix -N1 -n1 env LOOM_CKPT_CHUNK=8192 "$DRIVE" save "$TEST_TMP/r1" 1 rows &&
	grep -q "^chunk 4096$" "$TEST_TMP/r0/step-1/MANIFEST" && grep -q "^chunk 8192$" "$TEST_TMP/r1/step-1/MANIFEST" &&
	LOOM_TIMEOUT=60 run2 sh -c "exec \"$DRIVE\" restore \"$TEST_TMP/r\$SLURM_PROCID\" rows" \
		>"$TEST_TMP/dis.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/dis.out"; test $rc != 0 &&
	grep -q "restore ranks 2: not found step -1" "$TEST_TMP/dis.out" &&
	test $(grep -c "error: ckpt: ranks read different manifests of step 1 in .*: chunk 4096..8192 bytes" "$TEST_TMP/dis.out") = 2
'

test_expect_success 'the manifest parser under valgrind: truncated, garbage and hostile manifests, no error' '
	M=$TEST_TMP/chunk1/step-1/MANIFEST && mkdir -p "$TEST_TMP/m" && n=$(wc -c <"$M") &&
	for k in 0 1 17 40 $((n / 2)) $((n - 2)) $((n - 1)); do head -c $k "$M" >"$TEST_TMP/m/trunc-$k"; done &&
	for k in 1 2 3; do head -c 3000 /dev/urandom >"$TEST_TMP/m/random-$k"; done &&
	sed "s/^tensors .*/tensors 2147483647/" "$M" >"$TEST_TMP/m/count" &&
	sed "s/shape [0-9,]*/shape 1,2,3,4,5,6,7,8,9,10/" "$M" >"$TEST_TMP/m/dims" &&
	{ head -3 "$M"; head -c 5000 /dev/zero | tr "\\0" a; echo; } >"$TEST_TMP/m/longline" &&
	{ head -4 "$M"; printf "writer \\001\\002\\033[2J\\n"; } >"$TEST_TMP/m/ctrl" &&
	printf "loom-checkpoint 1\\nstep 1\\0\\nend\\n" >"$TEST_TMP/m/nul" &&
	cp "$M" "$TEST_TMP/m/good" &&
	valgrind -q --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
		"$FILES" parse "$TEST_TMP"/m/* >"$TEST_TMP/vg.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/vg.out"; test $rc = 0 &&
	test $(grep -c ": refused: " "$TEST_TMP/vg.out") = $(( $(ls "$TEST_TMP/m" | wc -l) - 1 )) &&
	grep -q "/m/good: ok" "$TEST_TMP/vg.out" &&
	grep -q "/m/count: refused: line 6: bad tensor count" "$TEST_TMP/vg.out" &&
	grep -q "/m/dims: refused: line 7: too many dimensions" "$TEST_TMP/vg.out" &&
	grep -q "/m/nul: refused: NUL byte in manifest" "$TEST_TMP/vg.out"
'
test_done
