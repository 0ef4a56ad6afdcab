#!/bin/sh
# Async checkpoints on the live cluster (runtime/ckpt/test/ckpt-drive asave):
# buffers overwritten as soon as loom_ckpt_save returns, and the caller's
# own collectives while the writer runs, still give a checkpoint with the
# values at the call, loaded bit for bit on another rank count; a save
# started while one is in flight waits for it; a state larger than
# LOOM_CKPT_STAGING_MB is saved blocking (said so); a failed background
# save is reported by the next call; kill -9 of one rank, and of every
# writing rank, in the middle of a background flush (runtime/ckpt/test/killpoint.c)
# leaves `latest` on the previous complete checkpoint, which the next run
# restores.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
DRIVE="$LOOM_BUILD_DIR/runtime/ckpt/test/ckpt-drive"
KILLPOINT="$LOOM_BUILD_DIR/runtime/ckpt/test/.libs/killpoint.so"
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"

mkdir -p "$TEST_TMP/ck"
D=$(cd "$TEST_TMP/ck" && pwd -P)
# several aggregator windows per save, chunks that split the domains
export LOOM_CKPT_BUFFER_MB=1 CKPT_DRIVE_ROWS=9001 LOOM_CKPT_CHUNK=65536

# restored OUT NP LAYOUT STEP: NP ranks restore $D: step STEP, every value right
restored() {
	srun --mpi=pmix -N2 -n$2 "$DRIVE" restore "$D" $3 >"$TEST_TMP/$1" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/$1"; test $rc = 0 &&
	grep -q "restore ranks $2: success step $4 wrong 0" "$TEST_TMP/$1"
}

test_expect_success '4 ranks, async: buffers overwritten as the save returns; 2 ranks (rows) load the values at the call' '
	srun --mpi=pmix -N2 -n4 "$DRIVE" asave "$D" 5 cyclic >"$TEST_TMP/a.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/a.out"; test $rc = 0 &&
	grep -q "asave: save step 5 ranks 4: success" "$TEST_TMP/a.out" &&
	grep -q "asave: wait: success" "$TEST_TMP/a.out" &&
	! grep -q "saving blocking" "$TEST_TMP/a.out" &&
	test "$(cat "$D/latest")" = step-5 &&
	grep -q "aggregators=2 mode=two-phase" "$D/step-5/MANIFEST" &&
	restored r5.out 2 rows 5
'
test_expect_success 'three async saves back to back (each waits for the one in flight): 3 ranks load the last, keep=2 left two' '
	LOOM_CKPT_MODE=independent srun --mpi=pmix -N2 -n4 "$DRIVE" asave "$D" 6 cyclic 3 \
		>"$TEST_TMP/b.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/b.out"; test $rc = 0 &&
	test $(grep -c "asave: save step [678] ranks 4: success" "$TEST_TMP/b.out") = 3 &&
	test "$(cat "$D/latest")" = step-8 &&
	test "$(ls "$D" | grep "^step-" | sort | tr "\n" " ")" = "step-7 step-8 " &&
	grep -q "mode=independent" "$D/step-8/MANIFEST" &&
	restored r8.out 3 rows 8
'
test_expect_success 'a state larger than LOOM_CKPT_STAGING_MB: said so, saved blocking, values right' '
	E=$TEST_TMP/big; mkdir -p "$E"
	# 30000 x 40 float32 over 4 ranks: about 1.1 MiB a rank > 1 MiB
	CKPT_DRIVE_ROWS=30000 LOOM_CKPT_STAGING_MB=1 srun --mpi=pmix -N2 -n4 "$DRIVE" asave "$E" 3 rows \
		>"$TEST_TMP/c.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/c.out"; test $rc = 0 &&
	grep -q "async save skipped: this rank.s state (1 MiB) does not fit .* LOOM_CKPT_STAGING_MB=1; saving blocking" "$TEST_TMP/c.out" &&
	CKPT_DRIVE_ROWS=30000 srun --mpi=pmix -N2 -n2 "$DRIVE" restore "$E" cyclic >"$TEST_TMP/c2.out" 2>&1 &&
	grep -q "restore ranks 2: success step 3 wrong 0" "$TEST_TMP/c2.out"
'
test_expect_success 'a background save that fails (its temporary directory is a link) is reported by the next save (not started) and logged; latest unchanged' '
	F=$TEST_TMP/fail; mkdir -p "$F"
	j=$(sbatch --parsable -N2 -n4 -o /dev/null --wrap "sleep 300") && wait_state "$j" 60 RUNNING &&
	ln -s /nonexistent "$F/.tmp-step-2-$j" &&
	srun --jobid=$j --mpi=pmix -N2 -n4 "$DRIVE" asave "$F" 1 cyclic 3 >"$TEST_TMP/f.out" 2>&1 && rc=0 || rc=$?
	scancel $j; cat "$TEST_TMP/f.out"; test $rc = 1 &&
	grep -q "asave: save step 1 ranks 4: success" "$TEST_TMP/f.out" &&
	grep -q "asave: save step 2 ranks 4: success" "$TEST_TMP/f.out" &&
	grep -q "asave: save step 3 ranks 4: I/O error" "$TEST_TMP/f.out" &&
	grep -q "asave: wait: success" "$TEST_TMP/f.out" &&
	grep -q "the background save of step 2 failed: I/O error (latest still names the previous checkpoint)" "$TEST_TMP/f.out" &&
	test "$(cat "$F/latest")" = step-1 && test ! -e "$F/step-2" && test ! -e "$F/step-3"
'
# killed_asave STEP KILL_AT [RANK]: an async 4-rank save of STEP in $D whose
# task RANK (every task without one) the shim kills at KILL_AT, from the
# writer thread. The run must fail, and by that kill.
killed_asave() {
	srun --mpi=pmix -N2 -n4 env LD_PRELOAD="$KILLPOINT" LOOM_TEST_KILL_AT="$2" LOOM_TEST_KILL_RANK="${3:-}" \
		"$DRIVE" asave "$D" "$1" cyclic >"$TEST_TMP/k-$1.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/k-$1.out"; ls -a "$D"
	test $rc != 0 && grep -q "asave: save step $1 ranks 4: success" "$TEST_TMP/k-$1.out" &&
	! grep -q "asave: wait: success" "$TEST_TMP/k-$1.out" &&
	grep -q "^killpoint: SIGKILL" "$TEST_TMP/k-$1.out"
}
test_expect_success 'kill -9 of an aggregator during the background flush (before its data fsync): latest still step-8, restart loads step 8' '
	test -f "$KILLPOINT" &&
	killed_asave 9 "fsync:$D/.tmp-step-9-*/t0.bin" 2 &&
	test $(grep -c "^killpoint: SIGKILL before fsync $D/\.tmp-step-9-[0-9]*/t0\.bin$" "$TEST_TMP/k-9.out") = 1 &&
	test ! -e "$D/step-9" && test "$(cat "$D/latest")" = step-8 &&
	restored kr9.out 4 cyclic 8
'
test_expect_success 'kill -9 of every writing rank during the background flush: latest still step-8, nothing partial loaded, restart loads step 8' '
	killed_asave 10 "fsync:$D/.tmp-step-10-*/t0.bin" &&
	test $(grep -c "^killpoint: SIGKILL before fsync" "$TEST_TMP/k-10.out") -ge 1 &&
	test ! -e "$D/step-10" && test "$(cat "$D/latest")" = step-8 &&
	restored kr10.out 4 cyclic 8
'
test_expect_success 'kill -9 of rank 0 in the background commit after MANIFEST: latest still step-8, restart loads step 8' '
	killed_asave 11 "after:fsync:$D/*/MANIFEST" 0 &&
	ls "$D"/.tmp-step-11-*/MANIFEST && test ! -e "$D/step-11" &&
	test "$(cat "$D/latest")" = step-8 &&
	restored kr11.out 4 cyclic 8
'
test_expect_success 'after the kills an async save commits: latest names it, crashed temporary directories pruned' '
	srun --mpi=pmix -N2 -n4 "$DRIVE" asave "$D" 12 cyclic >"$TEST_TMP/k-12.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/k-12.out"; test $rc = 0 &&
	test "$(cat "$D/latest")" = step-12 &&
	test -z "$(ls -a "$D" | grep "^\.tmp-step-")" &&
	restored kr12.out 2 rows 12
'
test_done
