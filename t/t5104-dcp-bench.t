#!/bin/sh
# bench/dcp-bench.py at a tiny size on the live cluster (4 ranks on 2
# nodes): it runs and prints well-formed rows for every writer and round,
# the summaries and the ratios. A benchmark: no timing is asserted. Needs
# python3-torch (skipped without it).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_torch
test_need_plugin
test_need_cluster
BENCH=$LOOM_SRC_DIR/bench/dcp-bench.py
N='[0-9][0-9.]*'        # a time or a ratio
R='[0-9][0-9.]*\(e+[0-9]*\)\{0,1\}'     # bytes/s as %.4g prints them

test_expect_success 'bad arguments are refused with a message' '
	! "$LOOM_PYTHON" "$BENCH" --dir "$TEST_TMP/x" --size 12Q 2>"$TEST_TMP/err" &&
	grep -q "is not a size" "$TEST_TMP/err" &&
	! "$LOOM_PYTHON" "$BENCH" --dir "$TEST_TMP/x" --rounds 0 2>"$TEST_TMP/err" &&
	grep -q "is not a positive integer" "$TEST_TMP/err"
'

mkdir -p "$TEST_TMP/b"
B=$(cd "$TEST_TMP/b" && pwd -P)
test_expect_success 'dcp-bench.py, 256 KiB on 4 ranks / 2 nodes, 2 rounds: every row well formed' '
	timeout 300 srun -N2 -n4 --loom-env=torch "$LOOM_PYTHON" "$BENCH" \
		--size 256K --tensors 2 --rounds 2 --dir "$B" >"$TEST_TMP/bench.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/bench.out" && test $rc = 0 &&
	grep -q "^# dcp-bench: 4 ranks on 2 nodes, state 262144 bytes (2 tensors of " "$TEST_TMP/bench.out" &&
	for r in 1 2; do for w in torch-fs loom loom-async; do
		test $(grep -c "^row $r $w $N $N $R $N\$" "$TEST_TMP/bench.out") = 1 || exit 1
	done; done &&
	test $(grep -c "^row " "$TEST_TMP/bench.out") = 6 &&
	for w in torch-fs loom loom-async; do
		grep -q "^summary $w $N $N $R\$" "$TEST_TMP/bench.out" || exit 1
	done &&
	grep -q "^first-async $N $N $N\$" "$TEST_TMP/bench.out" &&
	grep -q "^async-blocked-over-memcpy $N\$" "$TEST_TMP/bench.out" &&
	grep -q "^throughput-over-torch-fs loom $N\$" "$TEST_TMP/bench.out" &&
	grep -q "^throughput-over-torch-fs loom-async $N\$" "$TEST_TMP/bench.out" &&
	grep -q "^async-durable-over-blocking $N\$" "$TEST_TMP/bench.out" &&
	test -z "$(ls "$B")"
'
test_done
