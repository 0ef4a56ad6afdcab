#!/bin/sh
# loom.torch on the live cluster, about 5 minutes (the three-line
# Resumable loop itself, preempted and stopped at its time limit, is t5101's
# examples/torch_ddp_requeue.py): a job with Slurm's --signal=USR1@N and
# no --loom-ckpt-signal is saved and requeued, not killed, and ends with
# the parameters of an uninterrupted run; torch.distributed.checkpoint
# through loom.torch.StorageWriter on 4 ranks loads on 3 and on 2
# (sharded tensors resharded), async saves included (a new writer per save
# shares one world and handle); a damaged step falls
# back to the one before with a warning; with the node-local tier a node's
# cache removed, the partner copy is used, said in a warning. Needs
# python3-torch (contrib/install-deps installs it; skipped without it).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_torch
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"
LOOM_EXAMPLES=$LOOM_SRC_DIR/examples PYTHON=$LOOM_PYTHON
export LOOM_EXAMPLES PYTHON
DRIVE=$LOOM_SRC_DIR/t/python/dcp_drive.py

# run NAME SBATCH-ARGS...: the example's sbatch script, as t5101 does
run() {
	local name=$1; shift
	mkdir -p "$TEST_TMP/$name/ck" && cd "$TEST_TMP/$name" &&
	sbatch --parsable -o "$TEST_TMP/$name/job.out" --loom-ckpt="$TEST_TMP/$name/ck/%j" \
		"$@" "$LOOM_EXAMPLES/torch_ddp_requeue.sbatch" --steps 120 --log-every 10 $STEP_MS
}
digest() { sed -n 's/^final parameters: sha256 \([0-9a-f]*\)$/\1/p' "$1"; }
# drive OUT NP ARGS...: dcp_drive.py on NP ranks of 2 nodes
drive() {
	out=$1 np=$2; shift 2
	timeout 300 srun -N2 -n"$np" --loom-env=torch "$LOOM_PYTHON" "$DRIVE" "$@" \
		>"$TEST_TMP/$out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/$out"
	return $rc
}

test_expect_success 'an uninterrupted run of the Resumable example: the parameters digest' '
	STEP_MS= && j=$(run ref) && wait_state "$j" 180 COMPLETED && cat "$TEST_TMP/ref/job.out" &&
	grep -q "^PASS: 120 steps on 4 ranks$" "$TEST_TMP/ref/job.out" &&
	test $(digest "$TEST_TMP/ref/job.out" | wc -l) = 1
'

test_expect_success '--signal=USR1@90, no --loom-ckpt-signal: SIGUSR1 saves (not kills), requeued, same parameters' '
	U=$TEST_TMP/usr1 && STEP_MS="--step-ms 700" &&
	j=$(run usr1 -p debug --time=3 --signal=USR1@90) && echo "job $j" &&
	wait_state "$j" 600 COMPLETED && cat "$U/job.out" &&
	r=$(job_field "$j" Restarts) && echo "restarts: $r" && test "$r" -ge 1 &&
	grep -q "checkpoint step [0-9]* committed after SIGUSR1: asking for a requeue of job $j" "$U/job.out" &&
	grep -q "^stop signal: step \([0-9]*\) saved to $U/ck/$j/resumable/step-\1, requeue requested$" "$U/job.out" &&
	grep -q "^resuming after step \([0-9]*\) from $U/ck/$j/resumable/step-\1 (restart 1)$" "$U/job.out" &&
	! grep -q "User defined signal 1" "$U/job.out" &&
	grep -q "^PASS: 120 steps on 4 ranks$" "$U/job.out" &&
	test "$(digest "$U/job.out")" = "$(digest "$TEST_TMP/ref/job.out")"
'

mkdir -p "$TEST_TMP/dcp" "$TEST_TMP/dcpa" "$TEST_TMP/c"
D=$(cd "$TEST_TMP/dcp" && pwd -P)
test_expect_success 'DCP: StorageWriter on 4 ranks, two saves; a step of libloom each' '
	drive s4 4 save "$D" --steps 2 &&
	test $(grep -c "^rank [0-3]/4: saved step 1$" "$TEST_TMP/s4") = 4 &&
	grep -q "^PASS: dcp_drive save on 4 ranks$" "$TEST_TMP/s4" &&
	test "$(cat "$D/latest")" = step-1 && test -f "$D/step-1/MANIFEST" && test -f "$D/step-0/MANIFEST"
'
test_expect_success 'DCP: StorageReader on 3 ranks gets step 1, sharded tensor resharded, every value right' '
	drive l3 3 load "$D" &&
	test $(grep -c "^rank [0-2]/3: loaded step 1 ok$" "$TEST_TMP/l3") = 3 &&
	grep -q "^PASS: dcp_drive load on 3 ranks$" "$TEST_TMP/l3"
'
test_expect_success 'DCP: StorageReader on 2 ranks' '
	drive l2 2 load "$D" &&
	test $(grep -c "^rank [01]/2: loaded step 1 ok$" "$TEST_TMP/l2") = 2
'
test_expect_success 'DCP: step 1 damaged: step 0 is loaded, with warnings naming the file and the fallback' '
	f=$(sed -n "s/^tensor t3 .* file \(t[0-9]*\.bin\) .*/\1/p" "$D/step-1/MANIFEST") && test -n "$f" &&
	printf "damage" | dd of="$D/step-1/$f" bs=1 seek=100 conv=notrunc 2>/dev/null &&
	drive ld 3 load "$D" &&
	test $(grep -c "^rank [0-2]/3: loaded step 0 ok$" "$TEST_TMP/ld") = 3 &&
	grep -q "step-1/$f (tensor t3): .* checksum mismatch" "$TEST_TMP/ld" &&
	grep -q "warning: DCP checkpoint step 1 in $D is damaged .*; loading step 0 instead" "$TEST_TMP/ld"
'
test_expect_success 'DCP async (--async): three saves, latest is the last, loads on 3 ranks' '
	A=$(cd "$TEST_TMP/dcpa" && pwd -P) &&
	drive sa 4 save "$A" --steps 3 --async && test "$(cat "$A/latest")" = step-2 &&
	drive la 3 load "$A" && test $(grep -c "^rank [0-2]/3: loaded step 2 ok$" "$TEST_TMP/la") = 3
'
test_expect_success 'DCP async, a new writer per save, never closed: one world, one handle; exit commits the last' '
	mkdir "$TEST_TMP/dcpp" && P=$(cd "$TEST_TMP/dcpp" && pwd -P) &&
	drive sp 4 save "$P" --steps 4 --async --per-save &&
	test $(grep -c "^rank [0-3]/4: worlds 1 handles 1$" "$TEST_TMP/sp") = 4 &&
	test "$(cat "$P/latest")" = step-3 &&
	drive lp 3 load "$P" && test $(grep -c "^rank [0-2]/3: loaded step 3 ok$" "$TEST_TMP/lp") = 3
'
test_expect_success 'DCP with the node-local tier: n2 cache removed, 3 ranks load step 2, n2 pieces from the partner copy on n1' '
	C=$(cd "$TEST_TMP/c" && pwd -P) && mkdir "$TEST_TMP/dcpc" && E=$(cd "$TEST_TMP/dcpc" && pwd -P) &&
	LOOM_CKPT_CACHE="$C/cache-%n" drive sc 4 save "$E" --steps 3 &&
	test -f "$C/cache-n1/step-2/PIECES" && test -f "$C/cache-n2/step-2/PIECES" &&
	test "$(cat "$E/latest")" = step-2 &&
	rm -rf "$C/cache-n2" &&
	LOOM_CKPT_CACHE="$C/cache-%n" drive lc 3 load "$E" &&
	test $(grep -c "^rank [0-2]/3: loaded step 2 ok$" "$TEST_TMP/lc") = 3 &&
	grep -q "step-2: bytes [0-9]*\.\.[0-9]* of n2 come from its partner copy in $C/cache-n1 on n1" "$TEST_TMP/lc"
'
test_done
