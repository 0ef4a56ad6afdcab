#!/bin/sh
# The node-local checkpoint tier (LOOM_CKPT_CACHE) on the live two-node
# cluster: every node's cache holds its own pieces and a partner copy of
# the other node's; LOOM_CKPT_FLUSH=N sends every Nth save on to the
# shared directory; a restart restores the newest step from the caches,
# n2's pieces from n1's partner copy once n2's cache is gone (also on
# another rank count); with both copies of a piece gone it falls back to
# the shared directory's last flushed step, naming what was missing;
# async saves go through the cache too; a stop save goes to the shared
# directory even when saves are flushed rarely; a bad cache is refused at
# open.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
DRIVE="$LOOM_BUILD_DIR/runtime/ckpt/test/ckpt-drive"
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"

mkdir -p "$TEST_TMP/ck" "$TEST_TMP/c"
D=$(cd "$TEST_TMP/ck" && pwd -P)
C=$(cd "$TEST_TMP/c" && pwd -P)
# several aggregator windows per save, chunks that split the domains; one
# checkpoint kept in each tier, so that the caches (step 3) and the shared
# directory (step 2, the last flushed) hold different steps
export LOOM_CKPT_BUFFER_MB=1 CKPT_DRIVE_ROWS=9001 LOOM_CKPT_CHUNK=65536 LOOM_CKPT_KEEP=1
export LOOM_CKPT_CACHE="$C/cache-%n"

# restore OUT NP LAYOUT [ENV...]: NP ranks on 2 nodes restore $D
restore() {
	out=$1 np=$2 layout=$3
	shift 3
	env LOOM_DEBUG=info "$@" srun --mpi=pmix -N2 -n$np "$DRIVE" restore "$D" $layout \
		>"$TEST_TMP/$out" 2>&1 && rc=0 || rc=$?
	grep -v "info: \(bootstrap\|world\)" "$TEST_TMP/$out"
	return $rc
}

test_expect_success 'three saves, LOOM_CKPT_FLUSH=2: each node cache holds step 3 (own + partner pieces), the shared directory step 2; three saves counted' '
	LOOM_CKPT_FLUSH=2 LOOM_METRICS_FILE="$TEST_TMP/m-%r.prom" LOOM_METRICS_KEEP=1 \
		srun --mpi=pmix -N2 -n4 "$DRIVE" save "$D" 1 cyclic 3 >"$TEST_TMP/s.out" 2>&1 &&
	cat "$TEST_TMP/s.out" &&
	test $(grep -c "save step [123] ranks 4: success" "$TEST_TMP/s.out") = 3 &&
	test "$(ls "$C/cache-n1")" = step-3 && test "$(ls "$C/cache-n2")" = step-3 &&
	test "$(ls "$D" | grep "^step-")" = step-2 && test "$(cat "$D/latest")" = step-2 &&
	cat "$C/cache-n1/step-3/PIECES" "$C/cache-n2/step-3/PIECES" &&
	grep -q "^own 0 [1-9]" "$C/cache-n1/step-3/PIECES" &&
	grep -q "^partner n2 [1-9][0-9]* 1440200$" "$C/cache-n1/step-3/PIECES" &&
	grep -q "^own [1-9][0-9]* 1440200$" "$C/cache-n2/step-3/PIECES" &&
	grep -q "^partner n1 0 [1-9]" "$C/cache-n2/step-3/PIECES" &&
	cmp "$C/cache-n1/step-3/MANIFEST" "$C/cache-n2/step-3/MANIFEST" &&
	test "$(stat -c %a "$C/cache-n1")" = 700 &&
	# three saves counted, the background flush of step 2 not again
	for r in 0 1 2 3; do
		test "$(. "$LOOM_SRC_DIR/t/lib/prom.sh" && prom_value "$TEST_TMP/m-$r.prom" loom_checkpoints_total comm=world)" = 3 &&
		! grep -q "^loom_checkpoints_total{.*comm=\"ckpt-writer\"} [1-9]" "$TEST_TMP/m-$r.prom" || return 1
	done
'
test_expect_success 'a restart restores step 3 from the node caches, every value right (4 ranks, rows)' '
	restore r1.out 4 rows &&
	grep -q "restore ranks 4: success step 3 wrong 0" "$TEST_TMP/r1.out" &&
	grep -q "restored step-3 from the node caches (2 pieces)" "$TEST_TMP/r1.out"
'
test_expect_success 'n2 cache removed: 2 ranks restore step 3, n2 pieces from the partner copy on n1' '
	rm -rf "$C/cache-n2" &&
	restore r2.out 2 rows &&
	grep -q "restore ranks 2: success step 3 wrong 0" "$TEST_TMP/r2.out" &&
	grep -q "step-3: bytes [0-9]*\.\.1440200 of n2 come from its partner copy in $C/cache-n1 on n1 (its own copy is missing)" "$TEST_TMP/r2.out" &&
	grep -q "restored step-3 from the node caches (1 of 2 pieces from partner copies)" "$TEST_TMP/r2.out"
'
test_expect_success 'both copies of n2 pieces gone (n2 cache removed, n1 partner copy damaged): step 2 from the shared directory, said why' '
	rm -rf "$C/cache-n2" &&
	lo=$(sed -n "s/^partner n2 \([0-9]*\) .*/\1/p" "$C/cache-n1/step-3/PIECES") &&
	printf "damage" | dd of="$C/cache-n1/step-3/t0.bin" bs=1 seek=$((lo + 100)) conv=notrunc 2>/dev/null &&
	restore r3.out 4 cyclic &&
	grep -q "restore ranks 4: success step 2 wrong 0" "$TEST_TMP/r3.out" &&
	grep -q "cache-n1/step-3/t0.bin (tensor matrix): .* checksum mismatch" "$TEST_TMP/r3.out" &&
	grep -q "step-3 in the node caches is unusable" "$TEST_TMP/r3.out" &&
	grep -q "restored step-2 from the shared directory $D" "$TEST_TMP/r3.out"
'
test_expect_success 'LOOM_CKPT_REDUNDANCY=none, n2 cache removed: the warning names the bytes and the node whose cache misses them; step 2 from the shared directory' '
	rm -rf "$C"/cache-* "$D"/step-* &&
	LOOM_CKPT_REDUNDANCY=none LOOM_CKPT_FLUSH=2 srun --mpi=pmix -N2 -n4 "$DRIVE" save "$D" 1 rows 3 \
		>"$TEST_TMP/n.out" 2>&1 && cat "$TEST_TMP/n.out" &&
	! grep -q "^partner" "$C/cache-n1/step-3/PIECES" &&
	rm -rf "$C/cache-n2" &&
	restore r4.out 4 rows &&
	grep -q "restore ranks 4: success step 2 wrong 0" "$TEST_TMP/r4.out" &&
	grep -q "step-3 in the node caches is not usable: bytes [0-9]*\.\.1440200 of 1440200 have no copy in any node.s cache (missing from the cache of n2, and no partner copy covers them)" "$TEST_TMP/r4.out"
'
test_expect_success 'async saves through the cache (buffers overwritten as each returns), flushed every save: 3 ranks restore the last from the caches' '
	rm -rf "$C"/cache-* "$D"/step-* &&
	srun --mpi=pmix -N2 -n4 "$DRIVE" asave "$D" 5 cyclic 3 >"$TEST_TMP/a.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/a.out"; test $rc = 0 &&
	grep -q "asave: wait: success" "$TEST_TMP/a.out" &&
	! grep -q "saving blocking" "$TEST_TMP/a.out" &&
	test "$(cat "$D/latest")" = step-7 && test "$(ls "$C/cache-n2")" = step-7 &&
	restore r5.out 3 rows &&
	grep -q "restore ranks 3: success step 7 wrong 0" "$TEST_TMP/r5.out" &&
	grep -q "restored step-7 from the node caches" "$TEST_TMP/r5.out"
'
test_expect_success 'SIGTERM while saves go to the caches only (LOOM_CKPT_FLUSH=1000): the stop save is committed in the shared directory; a restart takes it there' '
	rm -rf "$C"/cache-* "$D"/step-* "$D"/pid.* &&
	(LOOM_CKPT_REQUEUE=0 LOOM_CKPT_FLUSH=1000 CKPT_DRIVE_SAVE_EVERY=2 \
		srun --mpi=pmix -N2 -n4 "$DRIVE" train "$D" cyclic 100000 >"$TEST_TMP/t.out" 2>&1; \
		echo "exit $?" >>"$TEST_TMP/t.out") &
	for i in $(seq 120); do test -f "$D/pid.3" && test -f "$D/pid.0" && break; sleep 0.25; done &&
	for i in $(seq 240); do ls "$C/cache-n1" 2>/dev/null | grep -q "^step-" && break; sleep 0.25; done &&
	sleep 0.5 && kill -TERM $(cat "$D"/pid.[0-3]) &&
	wait_for "$TEST_TMP/t.out" "^exit " 60 && cat "$TEST_TMP/t.out" &&
	grep -q "^exit 0" "$TEST_TMP/t.out" &&
	s=$(sed -n "s/^rank 0 stop at step \([0-9]*\)/\1/p" "$TEST_TMP/t.out") && test -n "$s" &&
	test "$(cat "$D/latest")" = step-$s && test "$(ls "$D" | grep "^step-")" = step-$s &&
	c=$(ls "$C/cache-n1") && test -n "$c" && test "$c" != step-$s &&
	restore r6.out 4 rows &&
	grep -q "restore ranks 4: success step $s wrong 0" "$TEST_TMP/r6.out" &&
	grep -q "restored step-$s from the shared directory $D" "$TEST_TMP/r6.out"
'
if [ -f "${LOOM_TEST_PLUGIN:-$LOOM_BUILD_DIR/spank/.libs/loom.so}" ]; then
test_expect_success 'srun --loom-ckpt-cache=DIR/pc-%n-%j: loom.so passes it, libloom expands it on each node; the save lands in pc-n1-JOB and pc-n2-JOB' '
	(unset LOOM_CKPT_CACHE; srun --mpi=pmix -N2 -n2 --loom-ckpt="$D" --loom-ckpt-cache="$C/pc-%n-%j" \
		sh -c "echo job \$SLURM_JOB_ID cache \$LOOM_CKPT_CACHE; exec \"\$0\" save \"\$LOOM_CKPT_DIR\" 11 rows" "$DRIVE") \
		>"$TEST_TMP/p.out" 2>&1 && cat "$TEST_TMP/p.out" &&
	j=$(sed -n "s/^job \([0-9]*\) .*/\1/p" "$TEST_TMP/p.out" | head -1) && test -n "$j" &&
	grep -q "cache $C/pc-%n-$j$" "$TEST_TMP/p.out" &&
	grep -q "save step 11 ranks 2: success" "$TEST_TMP/p.out" &&
	test -f "$C/pc-n1-$j/step-11/PIECES" && test -f "$C/pc-n2-$j/step-11/PIECES"
'
else
	test_skip "srun --loom-ckpt-cache" "loom.so not built"
fi
test_expect_success 'a bad cache fails loom_ckpt_open on every rank, naming it: relative, missing parent, unknown %, a link, another user, one directory for both nodes' '
	for bad in "rel/cache" "$C/no/such/cache" "$C/x-%q" "$C/link" "$C/theirs" "$C/shared"; do
		case $bad in
		*link) ln -sfn "$C" "$C/link" ;;
		*theirs) mkdir -p "$C/theirs" && chown nobody "$C/theirs" ;;
		esac
		LOOM_CKPT_CACHE=$bad srun --mpi=pmix -N2 -n2 "$DRIVE" save "$D" 9 rows \
			>"$TEST_TMP/b.out" 2>&1 && { echo "accepted $bad"; return 1; }
		cat "$TEST_TMP/b.out"
		test $(grep -c "^open: " "$TEST_TMP/b.out") = 2 || return 1
		case $bad in
		rel*) grep -q "LOOM_CKPT_CACHE=rel/cache is not an absolute path" "$TEST_TMP/b.out" ;;
		*no/such*) grep -q "cannot create it: No such file or directory (its parent directory does not exist)" "$TEST_TMP/b.out" ;;
		*%q) grep -q "%q. is not understood" "$TEST_TMP/b.out" ;;
		*link) grep -q "node cache $C/link .* is a symbolic link: refusing it" "$TEST_TMP/b.out" ;;
		*theirs) grep -q "node cache $C/theirs .* is owned by another user: refusing it" "$TEST_TMP/b.out" ;;
		*shared) grep -q "node cache $C/shared is the same directory on n[12] and n[12]: give every node its own" "$TEST_TMP/b.out" ;;
		esac || return 1
	done &&
	test ! -d "$D/step-9"
'
test_done
