#!/bin/sh
# bench/compare-report.py on raw rows written here (no cluster): the
# table takes the best of each column, and the largest allreduce is also
# shown round by round, loom against the memcpy of its own round, with
# the median of those shares. Goal figures are read from these lines.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed (bench/compare-report.py needs it)"
R=$LOOM_SRC_DIR/bench/compare-report.py
hdr='#       size        count      type  redop  root        time        best     algbw     busbw  #wrong    mpi_time mpi_busbw    memcpy memcpy_all'
# loom_row size time busbw mpi_time mpi_busbw memcpy memcpy_all
loom_row() { printf '%12s %12s   float32    sum    -1 %11s %11s %9s %9s     N/A %11s %9s %9s %10s\n' \
	"$1" $(($1 / 4)) "$2" "$2" "$3" "$3" "$4" "$5" "$6" "$7"; }
gloo_row() { printf '%12s %12s   float32    sum    -1 %11s %11s %9s %9s     N/A\n' "$1" $(($1 / 4)) "$2" "$2" "$3" "$3"; }
# round r: loom busbw, Open MPI busbw, gloo busbw, memcpy, memcpy_all at 64 MiB
write_round() {
	{ echo "# loom-bench 0.1.0: allreduce, 2 ranks"; echo "$hdr"
	  loom_row 8 0.14 0.057 0.19 0.042 0.400 0.400
	  loom_row 67108864 "$2" "$3" "$4" "$5" "$8" "$9"; } >"$TEST_TMP/c/raw/allreduce-1x2-loom-r$1.txt"
	{ echo "# gloo-bench torch 1.13.0a0: allreduce, 2 ranks"
	  gloo_row 8 421 0.000; gloo_row 67108864 "$6" "$7"; } >"$TEST_TMP/c/raw/allreduce-1x2-gloo-r$1.txt"
}

test_expect_success 'two rounds of raw rows' '
	mkdir -p "$TEST_TMP/c/raw" &&
	#           r  loom us   GB/s  mpi us    GB/s gloo us   GB/s memcpy all
	write_round 1 11184.81 6.000 33554.43 2.000 67108.86 1.000 10.000 5.000 &&
	write_round 2 16777.22 4.000 26843.55 2.500 33554.43 2.000 10.000 8.000 &&
	python3 "$R" "$TEST_TMP/c" >"$TEST_TMP/rep" && cat "$TEST_TMP/rep"
'

test_expect_success 'the table: best of each column (loom round 1, Open MPI and gloo round 2)' '
	grep -qx "| 64 MiB | 11185 | 26844 | 33554 | 6.000 | 2.500 | 2.000 | 10.000 | 8.000 | 2.40x | 3.00x | 60.0% | 75.0% |" "$TEST_TMP/rep"
'

test_expect_success 'round by round: each ratio from its own round, then the medians' '
	sed -n "/^### allreduce, 2 ranks, 1 node, 64 MiB, round by round/,/^Median/p" "$TEST_TMP/rep" >"$TEST_TMP/t" &&
	cat >"$TEST_TMP/want" <<-\EOT &&
	### allreduce, 2 ranks, 1 node, 64 MiB, round by round

	| round | loom GB/s | Open MPI GB/s | gloo GB/s | memcpy GB/s | memcpy_all GB/s | vs Open MPI | vs gloo | loom/memcpy | loom/all |
	|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
	| 1 | 6.000 | 2.000 | 1.000 | 10.000 | 5.000 | 3.00x | 6.00x | 60.0% | 120.0% |
	| 2 | 4.000 | 2.500 | 2.000 | 10.000 | 8.000 | 1.60x | 2.00x | 40.0% | 50.0% |

	Median over 2 round(s): loom/memcpy 50.0%, loom/all 85.0%.
	EOT
	diff "$TEST_TMP/want" "$TEST_TMP/t"
'

test_expect_success 'a round whose loom run failed is left out, not counted as zero' '
	: >"$TEST_TMP/c/raw/allreduce-1x2-loom-r3.txt" &&
	write_round 4 11184.81 6.000 33554.43 2.000 67108.86 1.000 12.000 6.000 &&
	python3 "$R" "$TEST_TMP/c" >"$TEST_TMP/rep" &&
	sed -n "/round by round/,/^Median/p" "$TEST_TMP/rep" >"$TEST_TMP/t" && cat "$TEST_TMP/t" &&
	! grep -q "^| 3 |" "$TEST_TMP/t" &&
	grep -qx "| 4 | 6.000 | 2.000 | 1.000 | 12.000 | 6.000 | 3.00x | 6.00x | 50.0% | 100.0% |" "$TEST_TMP/t" &&
	grep -qx "Median over 3 round(s): loom/memcpy 50.0%, loom/all 100.0%." "$TEST_TMP/t"
'
test_done
