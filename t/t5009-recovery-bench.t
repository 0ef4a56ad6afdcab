#!/bin/sh
# bench/recovery (docs/fault-tolerance.md, "What recovery costs") on its
# own three-node test cluster, one short round: it prints one well-formed
# row for the heal (4 ranks -> 2, every heal phase a number, restored from
# the node caches), one for the requeue (every requeue phase a number)
# and one for the spare (4 -> 2, then 2 spares on the third node taken),
# and the medians' lines; it refuses bad arguments. Figures are
# printed, never asserted.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
LOOM_TEST_NODES=3
export LOOM_TEST_NODES
test_need_plugin
test_need_cluster
B=$LOOM_SRC_DIR/bench/recovery
n='[0-9][0-9]*\.[0-9][0-9][0-9]'

test_expect_success '--help and bad arguments' '
	"$B" --help >"$TEST_TMP/h.out" && grep -q "^  bench/recovery \[-B BUILD_DIR\]" "$TEST_TMP/h.out" &&
	{ "$B" --rounds 2 2>"$TEST_TMP/e.out"; test $? = 2; } && grep -q "unknown argument" "$TEST_TMP/e.out" &&
	{ "$B" -r x 2>"$TEST_TMP/e.out"; test $? = 2; } && grep -q "is not a number" "$TEST_TMP/e.out" &&
	{ "$B" --kill-at 3 2>"$TEST_TMP/e.out"; test $? = 2; } && grep -q "kill-at must lie" "$TEST_TMP/e.out"
'
test_expect_success 'one round with --spare: a heal, a requeue and a spare row, well formed, and the medians' '
	"$B" -B "$LOOM_BUILD_DIR" -r 1 --steps 30 --kill-at 15 --spare -O "$TEST_TMP/rec" >"$TEST_TMP/r.out" &&
	cat "$TEST_TMP/r.out" &&
	grep -q "^| path | round | ranks | detect | agree | rebuild | stop | requeue | start | restore | first | total | redone | tier |$" "$TEST_TMP/r.out" &&
	test "$(grep -c "^| heal \|^| requeue \|^| spare " "$TEST_TMP/r.out")" = 3 &&
	grep -q "^| heal | 1 | 4 -> 2 | $n | $n | -*$n | - | - | - | $n | $n | $n | [0-9]* | caches |$" "$TEST_TMP/r.out" &&
	grep -q "^| requeue | 1 | 4 | - | - | - | $n | $n | $n | $n | $n | $n | 0 | \(caches\|shared\) |$" "$TEST_TMP/r.out" &&
	grep -q "^| spare | 1 | 4 -> 2 + 2 | $n | $n | -*$n | - | - | - | $n | $n | $n | [0-9]* | caches |$" "$TEST_TMP/r.out" &&
	grep -q "^Median total: heal $n s, requeue $n s; the requeue loses [0-9.]*x the heal.s time\.$" "$TEST_TMP/r.out" &&
	grep -q "^Median total with a spare: $n s; the requeue loses [0-9.]*x its time\.$" "$TEST_TMP/r.out" &&
	test -f "$TEST_TMP/rec/report.md"
'
test_done
