#!/bin/sh
# bench/compare --quick on its own test cluster: it prints well-formed
# comparison rows for loom and Open MPI (and gloo where python3-torch is
# installed), reports a collective gloo lacks and a peer that is not
# installed without failing, writes a well-formed SVG (where matplotlib
# is installed), and refuses bad arguments. Figures are printed, never asserted.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_cluster_host
test_need_plugin
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed (bench/compare-report.py needs it)"
C=$LOOM_SRC_DIR/bench/compare
if grep -q '^#define HAVE_MPI 1' "$LOOM_BUILD_DIR/config.h"; then have_mpi=1; else have_mpi=0; fi
if /usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
	have_gloo=1
else
	have_gloo=0
fi
num='[0-9][0-9.]*'
# raw_loom FILE PYTHON: run PYTHON on each run (o: its settings and totals,
# its rows under "rows") of a loom-bench --json raw file (bench/compare
# writes two runs' JSON Lines, the small sizes' and the large ones'); a
# line that is not one JSON object or a run without its totals fails
raw_loom() {
	python3 -c 'import json, sys
run = None
for l in open(sys.argv[1]):
	x = json.loads(l)
	if run is None:
		assert "loom_bench" in x, x
		run = dict(x, rows=[])
	elif "size" in x:
		run["rows"].append(x)
	else:
		assert "avg_busbw" in x and "loom_bench" not in x, x
		o, run = dict(run, **x), None
		exec(sys.argv[2])
assert run is None, "a run without its totals line"' "$1" "$2"
}
# | size | loom us | MPI us | gloo us | loom GB/s | MPI GB/s | gloo GB/s | memcpy | memcpy_all | vs MPI | vs gloo | loom/memcpy | loom/all |
# with a number or "—" (absent peer) for MPI and gloo
cell() { [ "$1" = 1 ] && echo "$num" || echo "—"; }
rowre() { # mpi gloo
	local m g; m=$(cell "$1"); g=$(cell "$2")
	echo "^\| [0-9]+ (B|KiB|MiB) \| $num \| $m \| $g \| $num \| $m \| $g \| $num \| $num \| ${m}x? \| ${g}x? \| $num% \| $num% \|\$"
}

test_expect_success 'bench/compare --quick (allreduce, reduce_scatter; both shapes and the 8-rank growth row)' '
	# from a shell, not make check: no LOOM_BUILD_DIR or LOOM_SRC_DIR (a run
	# of 4748112 stopped at once, t/backend/lib.sh needed the first)
	b=$LOOM_BUILD_DIR &&
	timeout 900 env -u LOOM_BUILD_DIR -u LOOM_SRC_DIR "$C" --quick -o allreduce,reduce_scatter -B "$b" -O "$TEST_TMP/c" \
		>"$TEST_TMP/rep" 2>"$TEST_TMP/rep.err" && rc=0 || rc=$?
	cat "$TEST_TMP/rep.err" "$TEST_TMP/rep"
	test $rc = 0 && test -s "$TEST_TMP/c/report.md" && cmp "$TEST_TMP/rep" "$TEST_TMP/c/report.md"
'

test_expect_success 'allreduce tables: one well-formed row per size for loom and Open MPI (and gloo)' '
	re=$(rowre $have_mpi $have_gloo)
	for shape in "2 ranks, 1 node" "4 ranks, 2 nodes x 2 tasks"; do
		sed -n "/^### allreduce, $shape (best of 1)/,/^###/p" "$TEST_TMP/rep" >"$TEST_TMP/t"
		cat "$TEST_TMP/t"
		# --quick: 8 B, 512 B, 32 KiB, 64 KiB
		test $(grep -Ec "$re" "$TEST_TMP/t") = 4
	done
'

test_expect_success 'the 2-rank allreduce at 64 KiB round by round: one row, the medians' '
	sed -n "/^### allreduce, 2 ranks, 1 node, 64 KiB, round by round/,/^Median/p" "$TEST_TMP/rep" >"$TEST_TMP/t"
	cat "$TEST_TMP/t"
	m=$(cell $have_mpi); g=$(cell $have_gloo)
	grep -Eq "^\| 1 \| $num \| $m \| $g \| $num \| $num \| ${m}x? \| ${g}x? \| $num% \| $num% \|\$" "$TEST_TMP/t" &&
	grep -Eq "^Median over 1 round\(s\): loom/memcpy $num%, loom/all $num%\.\$" "$TEST_TMP/t"
'

test_expect_success 'reduce_scatter: gloo has none, said so; loom and Open MPI rows are there' '
	sed -n "/^### reduce_scatter, 2 ranks, 1 node/,/^###/p" "$TEST_TMP/rep" >"$TEST_TMP/t"
	cat "$TEST_TMP/t"
	test $(grep -Ec "$(rowre $have_mpi 0)" "$TEST_TMP/t") = 4 &&
	if [ $have_gloo = 1 ]; then grep -q "^(gloo: not supported)" "$TEST_TMP/t"; fi
'

test_expect_success 'cost-growth table: 2, 4 and 8 ranks' '
	sed -n "/^### allreduce cost growth/,\$p" "$TEST_TMP/rep" >"$TEST_TMP/t"
	cat "$TEST_TMP/t"
	m=$(cell $have_mpi); g=$(cell $have_gloo)
	for r in "2 ranks, 1 node" "4 ranks, 2 nodes x 2 tasks" "8 ranks, 2 nodes x 4 tasks"; do
		grep -Eq "^\| $r \| $num \| $m \| $g \| $num \| $m \| $g \|\$" "$TEST_TMP/t"
	done
'

test_expect_success 'the raw rows are loom-bench --json rows and gloo-bench nccl-tests rows' '
	row="^ +[0-9]+ +[0-9]+ +float32 +[a-z]+ +-?[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +N/A"
	f=$TEST_TMP/c/raw/allreduce-1x2-loom-r1.json &&
	raw_loom "$f" "for r in o[\"rows\"]: print(r[\"type\"], r[\"redop\"], r[\"wrong\"], \"mpi_busbw\" in r, r[\"memcpy\"] > 0)" >"$TEST_TMP/rows" &&
	cat "$TEST_TMP/rows" &&
	test $(grep -c "^float32 sum None $([ $have_mpi = 1 ] && echo True || echo False) True\$" "$TEST_TMP/rows") = 4 &&
	if [ $have_gloo = 1 ]; then
		test $(grep -Ec "$row\$" "$TEST_TMP/c/raw/allreduce-2x4-gloo-r1.txt") = 4 &&
		grep -q "^# gloo-bench torch .*: allreduce, 4 ranks, backend gloo" "$TEST_TMP/c/raw/allreduce-2x4-gloo-r1.txt"
	fi
'

# regression: with 4 task slots a node, srun put "2x4" as 3 + 1
tasks() { raw_loom "$1" "print(o[\"tasks_per_node\"])" | sort -u; }
cpus() { raw_loom "$1" "print(o[\"cpus_rank0\"])" | sort -u; }
test_expect_success 'each shape ran as many tasks on every node (2x4: 2 and 2, 2x8: 4 and 4)' '
	test "$(tasks "$TEST_TMP/c/raw/allreduce-2x4-loom-r1.json")" = "2(x2)" &&
	test "$(tasks "$TEST_TMP/c/raw/allreduce-2x8-loom-r1.json")" = "4(x2)" &&
	test "$(tasks "$TEST_TMP/c/raw/allreduce-1x2-loom-r1.json")" = 2 &&
	if [ $have_gloo = 1 ]; then
		grep -qx "# tasks per node: 2(x2)" "$TEST_TMP/c/raw/allreduce-2x4-gloo-r1.txt"
	fi
'

if python3 -c "import matplotlib" 2>/dev/null; then
test_expect_success 'compare.svg: well-formed, one panel per collective and shape, one line per peer' '
	python3 -c "import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); \
		print(len([g for g in d.getElementsByTagName(\"g\") if g.getAttribute(\"id\").startswith(\"curve-\")]))" \
		"$TEST_TMP/c/compare.svg" >"$TEST_TMP/n" &&
	cat "$TEST_TMP/n" &&
	# 4 panels x (loom, memcpy, Open MPI?, gloo? except reduce_scatter)
	test $(cat "$TEST_TMP/n") = $((4 * (2 + have_mpi) + 2 * have_gloo))
'
else
test_expect_success 'no matplotlib: the report says so in one line, no plot' '
	grep -qx "No plot: matplotlib is not installed (python3-matplotlib)\." "$TEST_TMP/rep" &&
	! test -e "$TEST_TMP/c/compare.svg"
'
fi

test_expect_success 'a peer that is not installed is listed as such and does not fail the run' '
	LOOM_COMPARE_PYTHON=/nonexistent/python3 timeout 600 "$C" --quick --no-growth -o allreduce -s 1x2 \
		-B "$LOOM_BUILD_DIR" -O "$TEST_TMP/d" >"$TEST_TMP/rep2" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/rep2"
	test $rc = 0 &&
	grep -q "^| gloo | not installed (no torch.distributed with gloo for /nonexistent/python3" "$TEST_TMP/rep2" &&
	test $(grep -Ec "$(rowre $have_mpi 0)" "$TEST_TMP/rep2") = 4 &&
	! ls "$TEST_TMP/d/raw" | grep -q gloo
'

# sizes up to 256 KiB run -N iterations (a tenth of them as warm-up),
# larger ones -n after -w, for loom (and its Open MPI columns) and gloo
# alike: every row of a raw file follows the header of its own run
test_expect_success 'small sizes run -N iterations, large ones -n: every peer, each size in its run' '
	timeout 600 "$C" -o allreduce -s 1x2 -b 8 -e 512K -f 64 -n 2 -w 1 -N 30 --no-growth -r 1 \
		-B "$LOOM_BUILD_DIR" -O "$TEST_TMP/s" >"$TEST_TMP/s.out" 2>&1 || { cat "$TEST_TMP/s.out"; false; } &&
	for f in "$TEST_TMP"/s/raw/allreduce-1x2-*-r1.*; do
		case $f in *.err) continue ;; esac
		echo "== $f" && cat "$f" &&
		case $f in
		*.json) raw_loom "$f" "it = (o[\"iters\"], o[\"warmup\"]); [print(r[\"size\"], \"small\" if it == (30, 3) else \"large\" if it == (2, 1) else \"?\") for r in o[\"rows\"]]" >"$TEST_TMP/runs" ;;
		*) awk "/iters/ { it = \$0 } /^ *[0-9]/ { print \$1, (it ~ /iters 30, warmup 3\$/ ? \"small\" : it ~ /iters 2, warmup 1\$/ ? \"large\" : \"?\") }" "$f" >"$TEST_TMP/runs" ;;
		esac &&
		cat "$TEST_TMP/runs" &&
		printf "8 small\n512 small\n32768 small\n524288 large\n" | cmp - "$TEST_TMP/runs" || return 1
	done
'

test_expect_success 'in a node every peer ran bound one task to a core, across nodes unbound; the report says so' '
	test "$(cpus "$TEST_TMP/c/raw/allreduce-1x2-loom-r1.json")" = 1 &&
	test "$(cpus "$TEST_TMP/c/raw/allreduce-2x8-loom-r1.json")" = $(nproc) &&
	test "$(cpus "$TEST_TMP/c/raw/allreduce-2x4-loom-r1.json")" = $(nproc) &&
	if [ $have_gloo = 1 ]; then
		grep -qx "# cpus rank 0 may run on: 1" "$TEST_TMP/c/raw/allreduce-1x2-gloo-r1.txt" &&
		grep -qx "# cpus rank 0 may run on: $(nproc)" "$TEST_TMP/c/raw/allreduce-2x4-gloo-r1.txt"
	fi &&
	grep -q "^Tasks in a node bound one to a core, every peer alike (srun --loom-affinity=closest); across the two nodes" "$TEST_TMP/c/report.md"
'

# regression: a run of one or two sizes printed no table at all (the
# report drew only collectives with a curve to plot)
test_expect_success 'a run of one size prints its table (and no plot panel); --unbound leaves the tasks unbound' '
	mkdir "$TEST_TMP/pub" &&
	timeout 600 "$C" -o allreduce -s 1x2 -b 8 -e 8 -N 20 --no-growth -r 1 --unbound \
		-B "$LOOM_BUILD_DIR" -O "$TEST_TMP/one" -P "$TEST_TMP/pub" >"$TEST_TMP/one.out" 2>&1 || { cat "$TEST_TMP/one.out"; false; } &&
	sed -n "/^### allreduce, 2 ranks, 1 node (best of 1)/,/^###/p" "$TEST_TMP/one.out" >"$TEST_TMP/t" &&
	cat "$TEST_TMP/t" &&
	test $(grep -Ec "$(rowre $have_mpi $have_gloo)" "$TEST_TMP/t") = 1 &&
	grep -q "^| 8 B |" "$TEST_TMP/t" &&
	! grep -q "^Plot:" "$TEST_TMP/one.out" &&
	test "$(cpus "$TEST_TMP/one/raw/allreduce-1x2-loom-r1.json")" = $(nproc) &&
	grep -q "^Tasks not bound (--unbound): placed by the scheduler\.$" "$TEST_TMP/one.out"
'

test_expect_success '-P: the report under a dated name, headed by the command and the commit' '
	ls "$TEST_TMP/pub" >"$TEST_TMP/pub.ls" && cat "$TEST_TMP/pub.ls" &&
	grep -Eqx "[0-9]{4}-[0-9]{2}-[0-9]{2}(-[0-9]{4})?\.md" "$TEST_TMP/pub.ls" &&
	test $(wc -l <"$TEST_TMP/pub.ls") = 1 &&
	f=$TEST_TMP/pub/$(cat "$TEST_TMP/pub.ls") &&
	head -5 "$f" &&
	grep -q "^Command: .bench/compare -o allreduce -s 1x2 -b 8 -e 8 .*-P $TEST_TMP/pub., loom at [^ ]*\.$" "$f" &&
	tail -n +6 "$f" | cmp - "$TEST_TMP/one/report.md"
'

test_expect_success 'bad arguments are refused with a message' '
	test_must_fail_with "^bench/compare: -N .x.: expected a positive integer" "$C" -N x &&
	test_must_fail_with "^bench/compare: -o: unknown collective .bogus." "$C" -o bogus &&
	test_must_fail_with "^bench/compare: -B ./nonexistent.: no such directory" "$C" -B /nonexistent &&
	test_must_fail_with "^bench/compare: -s: unknown shape .3x3." "$C" -s 3x3 &&
	test_must_fail_with "^bench/compare: -r .0.: expected a positive integer" "$C" -r 0 &&
	test_must_fail_with "^bench/compare: -P ./nonexistent.: not a writable directory" "$C" -P /nonexistent
'
test_done
