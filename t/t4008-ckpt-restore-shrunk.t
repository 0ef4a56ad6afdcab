#!/bin/sh
# loom_ckpt_restore on a shrunk world (docs/fault-tolerance.md) on the
# live three-node cluster: saves go to the node caches with partner copies
# (LOOM_CKPT_CACHE) and are flushed to the shared directory; both ranks
# of a node die by SIGKILL (between two saves, inside the save into the
# caches, at a cache commit, inside the flush); the survivors revoke,
# shrink, open the checkpoint again on the shrunk world and restore: the
# newest complete step, every value right, the lost node's pieces from
# its partner's copy. The shared directory's data files are renamed away
# (CKPT_DRIVE_HIDE_SHARED) while the survivors restore: a restore that
# read them would fail. Each run is bounded by LOOM_TIMEOUT=60 and
# timeout(1): a hang fails.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
LOOM_TEST_NODES=3
export LOOM_TEST_NODES
DRIVE="$LOOM_BUILD_DIR/runtime/ckpt/test/ckpt-drive"
SHIM="$LOOM_BUILD_DIR/runtime/ckpt/test/.libs/killpoint.so"
test_need_cluster

mkdir -p "$TEST_TMP/ck" "$TEST_TMP/c"
D=$(cd "$TEST_TMP/ck" && pwd -P)
C=$(cd "$TEST_TMP/c" && pwd -P)
# several aggregator windows per save, chunks that split the domains
export LOOM_CKPT_BUFFER_MB=1 CKPT_DRIVE_ROWS=9001 LOOM_CKPT_CHUNK=65536 LOOM_CKPT_KEEP=2
export LOOM_CKPT_CACHE="$C/cache-%n" LOOM_TIMEOUT=60

# heal OUT NODES NP [ENV...]: ckpt-drive heal, 6 steps, with the data
# files of the shared directory hidden while the survivors restore, on
# nodes n1..nNODES (named: the checks below name the nodes, and Slurm may
# place -N2 on n2,n3 while n1 finishes the job before). A kill before
# the save of step s (>= 3) finds step s - 2 flushed: the save of s - 1
# waited for that flush (the flush of s - 1 may fail)
heal() {
	out=$1 nodes=$2 np=$3
	shift 3
	rm -rf "$D"/* "$C"/*
	env LOOM_DEBUG=info CKPT_DRIVE_HIDE_SHARED=1 "$@" timeout -k 10 180 \
		srun --mpi=pmix -K0 -N$nodes -w "n[1-$nodes]" -n$np "$DRIVE" heal "$D" rows 6 \
		>"$TEST_TMP/$out" 2>&1 || :
	grep -v "info: \(bootstrap\|world\|finalize\)" "$TEST_TMP/$out"
}

# healed OUT SURVIVORS LOST STEP: every survivor healed once (LOST lost),
# restored STEP from the node caches with every value right, went on to
# step 6; no survivor failed
healed() {
	f=$TEST_TMP/$1
	test "$(grep -c "^rank [0-9]*: .* at step [0-9]*; ranks $3 lost; old close: " "$f")" = "$2" &&
	grep -q "^heal: $2 ranks restored: success step $4 wrong 0 " "$f" &&
	grep -q "ckpt: restored step-$4 from the node caches" "$f" &&
	grep -q "^heal: save step 6 ranks $2: success" "$f" &&
	grep -q "^heal: done, 6 steps, $2 ranks" "$f" &&
	test "$(grep -c "^rank [0-9]*: heal: success$" "$f")" = "$2" &&
	! grep -q "heal: .*\(failure\|wrong [1-9]\)" "$f" &&
	# the shared directory was not read: its data files were hidden
	grep -q "t0.bin.hidden" "$f"
}

# partner NODE LOST: the restore read LOST's pieces from the copy on NODE
partner() {
	grep -q "ckpt: step-[0-9]*: bytes [0-9]*\.\.[0-9]* of $2 come from its partner copy in $C/cache-$1 on $1 (" "$TEST_TMP/$OUT"
}

# restart NP: a fresh job restores the last step, 6, from the shared
# directory alone (no cache): the flushes after the heal are complete
restart() {
	env -u LOOM_CKPT_CACHE timeout -k 10 120 srun --mpi=pmix -N2 -n$1 "$DRIVE" restore "$D" rows \
		>"$TEST_TMP/r.out" 2>&1 && cat "$TEST_TMP/r.out" &&
	grep -q "restore ranks $1: success step 6 wrong 0" "$TEST_TMP/r.out"
}

test_expect_success '6 ranks / 3 nodes: the last node lost between saves; 4 restore the step before from the caches, its pieces from the partner copy on n1' '
	s=$(( 3 + $(loom_rand 3) )) && echo "kill 4,5 before the save of step $s" &&
	OUT=last.out && heal $OUT 3 6 CKPT_DRIVE_KILL=$s:4,5 &&
	healed $OUT 4 4,5 $((s - 1)) && partner n1 n3 && restart 4
'
test_expect_success '6 ranks / 3 nodes: the middle node lost; its pieces from the partner copy on n3' '
	s=$(( 3 + $(loom_rand 3) )) && echo "kill 2,3 before the save of step $s" &&
	OUT=middle.out && heal $OUT 3 6 CKPT_DRIVE_KILL=$s:2,3 &&
	healed $OUT 4 2,3 $((s - 1)) && partner n3 n2 && restart 3
'
test_expect_success '4 ranks / 2 nodes: n2 lost; the 2 on n1 restore everything from their own cache' '
	OUT=two.out && heal $OUT 2 4 CKPT_DRIVE_KILL=4:2,3 &&
	healed $OUT 2 2,3 3 && partner n1 n2
'
# the kill inside a save: killpoint (LD_PRELOAD) kills rank 4 at the
# point and, with it, rank 5 (LOOM_TEST_KILL_ALSO, its pid file)
kill_at() {
	echo LD_PRELOAD="$SHIM" LOOM_TEST_KILL_RANK=4 LOOM_TEST_KILL_ALSO="$D/pid.5" LOOM_TEST_KILL_AT="$1"
}
test_expect_success '3 ranks / 3 nodes (one a node): the last node lost; n1 has one rank for two pieces (its own, n3 partner copy): n2 reads n1 pieces from its partner copy' '
	OUT=one.out && heal $OUT 3 3 CKPT_DRIVE_KILL=4:2 &&
	healed $OUT 2 2 3 && partner n1 n3 && partner n2 n1
'
test_expect_success 'the last node lost inside the save of step 4 into the caches (before its data fsync): the survivors restore step 3' '
	OUT=insave.out && heal $OUT 3 6 $(kill_at "fsync:$C/cache-n3/.tmp-step-4-*/t*.bin") &&
	grep -q "killpoint: SIGKILL before fsync $C/cache-n3/.tmp-step-4-" "$TEST_TMP/$OUT" &&
	healed $OUT 4 4,5 3 && partner n1 n3 && restart 4
'
test_expect_success 'the last node lost at its cache commit of step 4 (before its rename): step 4 where the other nodes committed it, else step 3' '
	OUT=commit.out && heal $OUT 3 6 $(kill_at "rename:$C/cache-n3/.tmp-step-4-*") &&
	grep -q "killpoint: SIGKILL before rename $C/cache-n3/.tmp-step-4-" "$TEST_TMP/$OUT" &&
	s=$(sed -n "s/^heal: 4 ranks restored: success step \([34]\) wrong 0 .*/\1/p" "$TEST_TMP/$OUT") &&
	echo "restored step $s" && test -n "$s" &&
	healed $OUT 4 4,5 $s && partner n1 n3 && restart 4
'
test_expect_success 'the last node lost inside the flush of step 4 to the shared directory: step 4 from the caches, nothing saved is lost' '
	OUT=flush.out && heal $OUT 3 6 $(kill_at "fsync:$D/.tmp-step-4-*/t*.bin") &&
	grep -q "killpoint: SIGKILL before fsync $D/.tmp-step-4-" "$TEST_TMP/$OUT" &&
	healed $OUT 4 4,5 4 && partner n1 n3 && restart 4
'
test_done
