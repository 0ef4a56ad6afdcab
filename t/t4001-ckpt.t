#!/bin/sh
# Checkpoint/restart across ranks on the live cluster (runtime/test/ckpt-drive):
# resharding 4 -> 2 and 2 -> 4 (row blocks and block-cyclic), a flipped
# byte in the newest checkpoint detected and the previous one used,
# kill -9 of one rank during a commit never leaves a loadable partial
# checkpoint, and a stop signal to one rank agreed on every rank at the
# same step.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
DRIVE="$LOOM_BUILD_DIR/runtime/test/ckpt-drive"
test_need_cluster

D=$TEST_TMP/ck
mkdir -p "$D"
# several aggregator windows per save
export LOOM_CKPT_BUFFER_MB=1 CKPT_DRIVE_ROWS=9001

test_expect_success '4 ranks (2 nodes, 2 aggregators) save block-cyclic, step 1 and 2' '
	srun --mpi=pmix -N2 -n4 "$DRIVE" save "$D" 1 cyclic &&
	srun --mpi=pmix -N2 -n4 "$DRIVE" save "$D" 2 cyclic >"$TEST_TMP/s.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/s.out"; test $rc = 0 &&
	grep -q "aggregators=2 mode=two-phase" "$D/step-2/MANIFEST" &&
	test "$(cat "$D/latest")" = step-2
'
test_expect_success 'resharding 4 -> 2: 2 ranks with row blocks load equal tensors' '
	srun --mpi=pmix -N2 -n2 "$DRIVE" restore "$D" rows >"$TEST_TMP/r.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/r.out"; test $rc = 0 &&
	grep -q "restore ranks 2: success step 2 wrong 0" "$TEST_TMP/r.out"
'
test_expect_success 'resharding 2 -> 4: 2 ranks save rows (independent), 4 load block-cyclic' '
	LOOM_CKPT_MODE=independent srun --mpi=pmix -N2 -n2 "$DRIVE" save "$D" 3 rows &&
	grep -q "mode=independent" "$D/step-3/MANIFEST" &&
	srun --mpi=pmix -N2 -n4 "$DRIVE" restore "$D" cyclic >"$TEST_TMP/r4.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/r4.out"; test $rc = 0 &&
	grep -q "restore ranks 4: success step 3 wrong 0" "$TEST_TMP/r4.out"
'
test_expect_success 'a flipped byte in the newest checkpoint: detected, previous one used' '
	test -d "$D/step-2" && test ! -d "$D/step-1" &&
	printf "\\377" | dd of="$D/step-3/t0.bin" bs=1 seek=123457 conv=notrunc 2>/dev/null &&
	srun --mpi=pmix -N2 -n4 "$DRIVE" restore "$D" rows >"$TEST_TMP/c.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/c.out"; test $rc = 0 &&
	grep -q "restore ranks 4: success step 2 wrong 0" "$TEST_TMP/c.out" &&
	grep -q "step-3/t0.bin (tensor matrix): .* checksum mismatch: expected [0-9a-f]*, got [0-9a-f]*" "$TEST_TMP/c.out" &&
	grep -q "falling back" "$TEST_TMP/c.out"
'
test_expect_success 'kill -9 of one rank during a commit: no step-9, latest unchanged, restart loads step 2' '
	rm -rf "$D/step-3" && before=$(cat "$D/latest") &&
	CKPT_DRIVE_ROWS=100000 srun --mpi=pmix -N2 -n4 "$DRIVE" crash "$D" 9 cyclic >"$TEST_TMP/k.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/k.out"; test $rc != 0 &&
	ls -a "$D" && test ! -e "$D/step-9" &&
	test "$(cat "$D/latest")" = "$before" &&
	srun --mpi=pmix -N2 -n4 "$DRIVE" restore "$D" cyclic >"$TEST_TMP/k2.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/k2.out"; test $rc = 0 &&
	grep -q "restore ranks 4: success step 2 wrong 0" "$TEST_TMP/k2.out"
'
test_expect_success 'SIGUSR1 to one rank: every rank stops at the same step, then saves' '
	E=$TEST_TMP/sig; mkdir -p "$E"
	LOOM_CKPT_SIGNAL=USR1 CKPT_DRIVE_ROWS=61 srun --mpi=pmix -N2 -n4 "$DRIVE" train "$E" rows 1000 \
		>"$TEST_TMP/g.out" 2>&1 & pid=$!
	for i in $(seq 1 100); do test -s "$E/pid.3" && break; sleep 0.1; done &&
	sleep 1 && kill -USR1 $(cat "$E/pid.3") && wait $pid && rc=0 || rc=$?
	cat "$TEST_TMP/g.out"; test $rc = 0 &&
	test $(grep -c "stop at step" "$TEST_TMP/g.out") = 4 &&
	test $(sed -n "s/.*stop at step //p" "$TEST_TMP/g.out" | sort -u | wc -l) = 1 &&
	s=$(sed -n "s/.*stop at step //p" "$TEST_TMP/g.out" | head -1) &&
	test -f "$E/step-$s/MANIFEST" &&
	grep "should_stop:" "$TEST_TMP/g.out" >&2
'
test_expect_success 'the restarted job resumes after the stop step (SLURM_RESTART_COUNT=1)' '
	E=$TEST_TMP/sig && s=$(sed -n "s/.*stop at step //p" "$TEST_TMP/g.out" | head -1) &&
	SLURM_RESTART_COUNT=1 CKPT_DRIVE_ROWS=61 srun --mpi=pmix -N2 -n4 "$DRIVE" train "$E" rows $((s + 3)) \
		>"$TEST_TMP/g2.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/g2.out"; test $rc = 0 &&
	grep -q "restart 1 of job .*: resuming after step $s" "$TEST_TMP/g2.out" &&
	grep -q "over 2 calls" "$TEST_TMP/g2.out"
'
test_expect_success 'pieces sent one message each, packed per window, or ranks set differently: identical files, each loads' '
	F=$TEST_TMP/direct; mkdir -p "$F/one" "$F/packed" "$F/mixed"
	LOOM_CKPT_DIRECT_BYTES=1 srun --mpi=pmix -N2 -n4 "$DRIVE" save "$F/one" 5 cyclic &&
	LOOM_CKPT_DIRECT_BYTES=1099511627776 srun --mpi=pmix -N2 -n4 "$DRIVE" save "$F/packed" 5 cyclic &&
	ls "$F/one/step-5"/*.bin >"$TEST_TMP/bins" && test -s "$TEST_TMP/bins" &&
	srun --mpi=pmix -N2 -n4 sh -c "LOOM_CKPT_DIRECT_BYTES=\$((SLURM_PROCID % 2 ? 1 : 1099511627776)) \
		exec \"$DRIVE\" save \"$F/mixed\" 5 cyclic" &&
	for f in $(cat "$TEST_TMP/bins"); do
		cmp "$f" "$F/packed/step-5/${f##*/}" && cmp "$f" "$F/mixed/step-5/${f##*/}" || exit 1
	done &&
	LOOM_CKPT_DIRECT_BYTES=1 srun --mpi=pmix -N2 -n4 "$DRIVE" restore "$F/packed" cyclic >"$TEST_TMP/d1.out" 2>&1 &&
	LOOM_CKPT_DIRECT_BYTES=1099511627776 srun --mpi=pmix -N2 -n3 "$DRIVE" restore "$F/one" rows >"$TEST_TMP/d2.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/d1.out" "$TEST_TMP/d2.out"; test $rc = 0 &&
	grep -q "restore ranks 4: success step 5 wrong 0" "$TEST_TMP/d1.out" &&
	grep -q "restore ranks 3: success step 5 wrong 0" "$TEST_TMP/d2.out"
'
test_expect_success 'loom-ckpt-bench: two-phase and independent figures next to sequential' '
	B=$TEST_TMP/bench; mkdir -p "$B"
	unset CKPT_DRIVE_ROWS LOOM_CKPT_BUFFER_MB
	srun --mpi=pmix -N2 -n4 "$LOOM_BUILD_DIR/runtime/tools/loom-ckpt-bench" --dir "$B" --size 8M --reps 1 \
		>"$TEST_TMP/b.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/b.out"; test $rc = 0 &&
	grep -q "4 ranks on 2 nodes" "$TEST_TMP/b.out" &&
	grep -q "two-phase   save: .* 2 aggregators" "$TEST_TMP/b.out" &&
	grep -Eq "two-phase checkpoint write: +[0-9.]+ MB/s" "$TEST_TMP/b.out" &&
	grep -q "signal to durable commit (8.0 MiB): [0-9.]* s" "$TEST_TMP/b.out" &&
	test $(ls -d "$B"/step-* | wc -l) = 1 && test -f "$(ls -d "$B"/step-*)/MANIFEST"
'
test_done
