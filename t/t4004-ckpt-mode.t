#!/bin/sh
# The default write mode, LOOM_CKPT_MODE=auto, on the live cluster
# (runtime/ckpt/test/ckpt-drive): small pieces (block-cyclic, 80-byte runs) are
# written two-phase, large ones (a row block per rank) independently, the
# threshold LOOM_CKPT_AUTO_BYTES; an independent save sums the chunks one
# run holds whole from memory and reads back only the others: every
# checkpoint verifies and loads bit for bit on another rank count.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
DRIVE="$LOOM_BUILD_DIR/runtime/ckpt/test/ckpt-drive"
test_need_cluster

mkdir -p "$TEST_TMP/ck"
D=$(cd "$TEST_TMP/ck" && pwd -P)
# 9001 x 40 float32 (1.4 MB): 64 KiB chunks, some inside one rank's rows,
# some across two ranks' rows
export CKPT_DRIVE_ROWS=9001 LOOM_CKPT_CHUNK=65536

# save_restore NAME STEP SAVE-LAYOUT LOAD-NP LOAD-LAYOUT: a 4-rank save of
# STEP in $D/NAME and a restore of it by LOAD-NP ranks, every value right
save_restore() {
	mkdir -p "$D/$1" &&
	srun --mpi=pmix -N2 -n4 "$DRIVE" save "$D/$1" $2 $3 >"$TEST_TMP/$1.out" 2>&1 &&
	srun --mpi=pmix -N2 -n$4 "$DRIVE" restore "$D/$1" $5 >>"$TEST_TMP/$1.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/$1.out"; test $rc = 0 &&
	grep -q "save step $2 ranks 4: success" "$TEST_TMP/$1.out" &&
	grep -q "restore ranks $4: success step $2 wrong 0" "$TEST_TMP/$1.out"
}

test_expect_success 'auto (the default), block-cyclic 80-byte pieces: two-phase; 3 ranks load it' '
	save_restore cyc 4 cyclic 3 rows &&
	grep -q "mode=two-phase" "$D/cyc/step-4/MANIFEST"
'
test_expect_success 'auto, a row block per rank (360 KB pieces) with LOOM_CKPT_AUTO_BYTES=65536: independent; 3 ranks load it' '
	LOOM_CKPT_AUTO_BYTES=65536 save_restore rows 5 rows 3 cyclic &&
	grep -q "mode=independent" "$D/rows/step-5/MANIFEST"
'
test_expect_success 'auto, the same rows under the default threshold (1 MiB): two-phase' '
	save_restore rows2 6 rows 2 rows &&
	grep -q "mode=two-phase" "$D/rows2/step-6/MANIFEST"
'
test_expect_success 'independent: the files and chunk sums equal the two-phase ones (own chunks summed from memory)' '
	LOOM_CKPT_MODE=independent save_restore ind 6 rows 2 cyclic &&
	grep -q "mode=independent" "$D/ind/step-6/MANIFEST" &&
	cmp "$D/ind/step-6/t0.bin" "$D/rows2/step-6/t0.bin" &&
	grep "^tensor" "$D/ind/step-6/MANIFEST" >"$TEST_TMP/ind.t" &&
	grep "^tensor" "$D/rows2/step-6/MANIFEST" >"$TEST_TMP/two.t" &&
	cmp "$TEST_TMP/ind.t" "$TEST_TMP/two.t"
'
test_expect_success 'LOOM_CKPT_MODE=bogus: a warning naming the choices, auto used' '
	mkdir -p "$D/bogus" &&
	LOOM_CKPT_MODE=bogus srun --mpi=pmix -N2 -n4 "$DRIVE" save "$D/bogus" 1 cyclic >"$TEST_TMP/bogus.out" 2>&1 &&
	cat "$TEST_TMP/bogus.out" &&
	grep -q "LOOM_CKPT_MODE=bogus not understood (auto|two-phase|independent); using auto" "$TEST_TMP/bogus.out"
'
test_done
