#!/bin/sh
# The metrics file is valid Prometheus text (strict parser) and its
# counters are what the program did.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
python3 -c 'import sys' 2>/dev/null || skip_all "python3 not installed"
prom="python3 $LOOM_SRC_DIR/t/lib/promtext.py"

test_expect_success 'the unit program writes a metrics file that parses strictly' '
	SLURM_JOB_ID=77 LOOM_METRICS_FILE="$TEST_TMP/m-%j-%r.prom" \
		"$LOOM_BUILD_DIR/runtime/metrics/test/metrics" >"$TEST_TMP/tap" &&
	! grep "^not ok" "$TEST_TMP/tap" &&
	test -f "$TEST_TMP/m-77-3.prom" &&
	$prom "$TEST_TMP/m-77-3.prom"
'
# the program runs 5 + 1 allreduces on "world" (the file is rewritten at exit)
test_expect_success 'counters in the file match the operations run' '
	test "$($prom "$TEST_TMP/m-77-3.prom" loom_operations_total comm=world op=allreduce job=77)" = 6 &&
	test "$($prom "$TEST_TMP/m-77-3.prom" loom_timeouts_total comm=world)" = 1 &&
	test "$($prom "$TEST_TMP/m-77-3.prom" loom_checkpoints_total comm=world)" = 1
'
test_expect_success 'no temporary file is left beside it' '
	test $(ls "$TEST_TMP" | grep -c "\.tmp\.") -eq 0
'
test_expect_success 'the parser rejects a counter without _total' '
	printf "# TYPE x counter\nx 1\n" >"$TEST_TMP/bad1" && ! $prom "$TEST_TMP/bad1"
'
test_expect_success 'the parser rejects a family split in two' '
	printf "a 1\nb 2\na{x=\"1\"} 3\n" >"$TEST_TMP/bad2" && ! $prom "$TEST_TMP/bad2"
'
test_expect_success 'the parser rejects a bad escape and a missing newline' '
	printf "a{x=\"\\\\q\"} 1\n" >"$TEST_TMP/bad3" && ! $prom "$TEST_TMP/bad3" &&
	printf "a 1" >"$TEST_TMP/bad4" && ! $prom "$TEST_TMP/bad4"
'
test_done
