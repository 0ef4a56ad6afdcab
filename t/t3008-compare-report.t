#!/bin/sh
# bench/compare-report.py on raw rows written here (no cluster): the
# table takes the best of each column, and the largest allreduce is also
# shown round by round, loom against the memcpy of its own round, with
# the median of those shares. Goal figures are read from these lines.
# loom's rows are loom-bench --json's, gloo's gloo-bench.py's table.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed (bench/compare-report.py needs it)"
R=$LOOM_SRC_DIR/bench/compare-report.py
# loom-bench --json's JSON Lines: a run's settings, its rows, its totals
loom_head() { echo '{"loom_bench":"0.1.0","collective":"allreduce","nranks":2,"iters":20,"warmup":5}'; }
loom_tail() { echo '{"wrong":null,"avg_busbw":3.0,"mpi_wrong":null,"mpi_avg_busbw":1.0}'; }
# loom_row size time busbw mpi_time mpi_busbw memcpy memcpy_all: a row,
# Open MPI's and memcpy's columns in it
loom_row() { printf '{"size":%s,"count":%s,"type":"float32","redop":"sum","root":-1,"time":%s,"best":%s,"algbw":%s,"busbw":%s,"wrong":null,"mpi_time":%s,"mpi_busbw":%s,"mpi_wrong":null,"memcpy":%s,"memcpy_all":%s}\n' \
	"$1" $(($1 / 4)) "$2" "$2" "$3" "$3" "$4" "$5" "$6" "$7"; }
gloo_row() { printf '%12s %12s   float32    sum    -1 %11s %11s %9s %9s     N/A\n' "$1" $(($1 / 4)) "$2" "$2" "$3" "$3"; }
# round r: loom busbw, Open MPI busbw, gloo busbw, memcpy, memcpy_all at 64 MiB
write_round() {
	{ loom_head
	  loom_row 8 0.14 0.057 0.19 0.042 0.400 0.400
	  loom_row 67108864 "$2" "$3" "$4" "$5" "$8" "$9"; loom_tail; } >"$TEST_TMP/c/raw/allreduce-1x2-loom-r$1.json"
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
	: >"$TEST_TMP/c/raw/allreduce-1x2-loom-r3.json" &&
	write_round 4 11184.81 6.000 33554.43 2.000 67108.86 1.000 12.000 6.000 &&
	python3 "$R" "$TEST_TMP/c" >"$TEST_TMP/rep" &&
	sed -n "/round by round/,/^Median/p" "$TEST_TMP/rep" >"$TEST_TMP/t" && cat "$TEST_TMP/t" &&
	! grep -q "^| 3 |" "$TEST_TMP/t" &&
	grep -qx "| 4 | 6.000 | 2.000 | 1.000 | 12.000 | 6.000 | 3.00x | 6.00x | 50.0% | 100.0% |" "$TEST_TMP/t" &&
	grep -qx "Median over 3 round(s): loom/memcpy 50.0%, loom/all 100.0%." "$TEST_TMP/t"
'
test_expect_success 'the plot: by matplotlib where it is installed, else one line says why' '
	mkdir -p "$TEST_TMP/p/raw" &&
	{ loom_head; loom_row 8 0.14 0.057 0.19 0.042 0.400 0.400
	  loom_row 1024 1.00 1.000 2.00 0.500 4.000 4.000
	  loom_row 65536 10.00 6.000 20.00 3.000 9.000 9.000; loom_tail; } >"$TEST_TMP/p/raw/allreduce-1x2-loom-r1.json" &&
	python3 "$R" "$TEST_TMP/p" >"$TEST_TMP/prep" && cat "$TEST_TMP/prep" &&
	if python3 -c "import matplotlib" 2>/dev/null; then
		grep -qx "Plot: $TEST_TMP/p/compare.svg" "$TEST_TMP/prep" &&
		python3 -c "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); \
			print(\" \".join(sorted(g.getAttribute(\"id\") for g in d.getElementsByTagName(\"g\") \
				if g.getAttribute(\"id\").startswith(\"curve-\"))))" "$TEST_TMP/p/compare.svg" >"$TEST_TMP/ids" &&
		cat "$TEST_TMP/ids" &&
		echo "curve-allreduce-1x2-loom curve-allreduce-1x2-memcpy curve-allreduce-1x2-mpi" | cmp - "$TEST_TMP/ids"
	else
		grep -qx "No plot: matplotlib is not installed (python3-matplotlib)\." "$TEST_TMP/prep" &&
		! test -e "$TEST_TMP/p/compare.svg"
	fi
'
test_expect_success 'a run cut short (no totals line) is left out, the whole run before it kept' '
	mkdir -p "$TEST_TMP/x/raw" &&
	{ loom_head; loom_row 8 0.14 0.057 0.19 0.042 0.400 0.400; loom_tail
	  loom_head; loom_row 67108864 11184.81 6.000 33554.43 2.000 10.000 5.000; } >"$TEST_TMP/x/raw/allreduce-1x2-loom-r1.json" &&
	python3 "$R" "$TEST_TMP/x" >"$TEST_TMP/xrep" && cat "$TEST_TMP/xrep" &&
	grep -q "^| 8 B | 0.14 | 0.19 |" "$TEST_TMP/xrep" &&
	! grep -q "^| 64 MiB |" "$TEST_TMP/xrep"
'
test_done
