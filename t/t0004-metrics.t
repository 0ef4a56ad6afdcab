#!/bin/sh
# The metrics file passes promtool check metrics (Prometheus's own parser
# and its lint of the names) and its counters are what the program did.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
command -v promtool >/dev/null || skip_all "promtool not installed (Debian: prometheus; contrib/install-deps)"
. "$LOOM_SRC_DIR/t/lib/prom.sh"
f=$TEST_TMP/m-77-3.prom

test_expect_success 'the unit program writes a metrics file that promtool accepts' '
	SLURM_JOB_ID=77 SLURM_STEP_ID=2 LOOM_METRICS_FILE="$TEST_TMP/m-%j-%r.prom" \
		"$LOOM_BUILD_DIR/runtime/metrics/test/metrics" >"$TEST_TMP/tap" &&
	! grep "^not ok" "$TEST_TMP/tap" &&
	test -f "$f" &&
	promtool check metrics <"$f" && prom_check "$f"
'
# the program runs 5 + 1 allreduces on "world" (the file is rewritten at exit)
test_expect_success 'counters in the file match the operations run' '
	test "$(prom_value "$f" loom_operations_total comm=world op=allreduce slurm_job_id=77)" = 6 &&
	test "$(prom_value "$f" loom_timeouts_total comm=world)" = 1 &&
	test "$(prom_value "$f" loom_checkpoints_total comm=world)" = 1
'
# 6 allreduces of 1 ms and a barrier of 0.1 ms on "world"; a broadcast would not count
test_expect_success 'loom_wait_seconds_total: the time in collectives that need every rank' '
	test "$(prom_value "$f" loom_wait_seconds_total comm=world)" = 0.0061 &&
	test "$(prom_value "$f" loom_wait_seconds_total rank=1)" = 0.0005
'
test_expect_success 'labels: slurm_job_id and slurm_step_id, not job and step (Prometheus owns job)' '
	test "$(prom_value "$f" loom_timeouts_total comm=world slurm_job_id=77 slurm_step_id=2 rank=3)" = 1 &&
	! grep -E "[{,](job|step)=" "$f"
'
# 1 MiB in 1 ms on 4 ranks, then 8 B in 1 ms: 8 / 0.001 * 1.5 bytes/s
test_expect_success 'bus bandwidth in bytes per second' '
	test "$(prom_value "$f" loom_busbw_last_bytes_per_second comm=world op=allreduce)" = 12000 &&
	test "$(prom_value "$f" loom_busbw_mean_bytes_per_second comm=world op=allreduce)" = 1.31072e+09 &&
	! grep -q gigabytes "$f"
'
test_expect_success 'no temporary file is left beside it' '
	test $(ls "$TEST_TMP" | grep -c "\.tmp\.") -eq 0
'
test_expect_success 'the checks reject a counter without _total, a non-base unit' '
	printf "# HELP x h\n# TYPE x counter\nx 1\n" >"$TEST_TMP/bad1" && ! prom_check "$TEST_TMP/bad1" &&
	printf "# HELP x_gigabytes h\n# TYPE x_gigabytes gauge\nx_gigabytes 1\n" >"$TEST_TMP/bad5" &&
	! prom_check "$TEST_TMP/bad5"
'
test_expect_success 'the checks reject a family split in two, a series twice, a negative counter' '
	printf "# HELP a h\n# TYPE a gauge\na 1\n# HELP b h\n# TYPE b gauge\nb 2\na{x=\"1\"} 3\n" >"$TEST_TMP/bad2" &&
	! prom_check "$TEST_TMP/bad2" &&
	printf "# HELP a h\n# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n" >"$TEST_TMP/bad6" &&
	! prom_check "$TEST_TMP/bad6" &&
	printf "# HELP a_total h\n# TYPE a_total counter\na_total{x=\"1\"} -1\n" >"$TEST_TMP/bad7" &&
	! prom_check "$TEST_TMP/bad7"
'
test_expect_success 'the checks reject a bad escape and a missing newline' '
	printf "# HELP a h\n# TYPE a gauge\na{x=\"\\\\q\"} 1\n" >"$TEST_TMP/bad3" && ! prom_check "$TEST_TMP/bad3" &&
	printf "# HELP a h\n# TYPE a gauge\na 1" >"$TEST_TMP/bad4" && ! prom_check "$TEST_TMP/bad4"
'
test_done
