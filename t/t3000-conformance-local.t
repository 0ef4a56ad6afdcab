#!/bin/sh
# The conformance suite and loom-bench on a world of one rank (no
# cluster needed): every collective, dtype, op and size on the size-1
# paths, and loom-bench's rows, checks and argument errors.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
C=$LOOM_BUILD_DIR/t/conformance/conformance
B=$LOOM_BUILD_DIR/bench/loom-bench
unset RANK WORLD_SIZE PMIX_RANK MASTER_ADDR MASTER_PORT LOOM_BACKEND LOOM_TRANSPORT

test_expect_success 'conformance, full matrix, one rank: every check passes' '
	"$C" >"$TEST_TMP/c.out" 2>"$TEST_TMP/c.err" && rc=0 || rc=$?
	grep -v "^ok" "$TEST_TMP/c.out"; cat "$TEST_TMP/c.err"
	test $rc = 0 && ! grep -q "^not ok" "$TEST_TMP/c.out" &&
	n=$(grep -c "^ok" "$TEST_TMP/c.out") && test "$n" -gt 100 &&
	grep -qx "# conformance backend=native ranks=1: $n/$n passed" "$TEST_TMP/c.out"
'
test_expect_success 'conformance output is valid TAP with a plan matching the checks' '
	plan=$(sed -n "s/^1\.\.\([0-9]*\)$/\1/p" "$TEST_TMP/c.out") &&
	test "$plan" = "$(grep -Ec "^(not )?ok " "$TEST_TMP/c.out")"
'
test_expect_success 'conformance --quick runs a smaller matrix, all passing' '
	"$C" --quick >"$TEST_TMP/q.out" 2>&1 &&
	n=$(grep -c "^ok" "$TEST_TMP/q.out") &&
	grep -qx "# conformance backend=native ranks=1: $n/$n passed" "$TEST_TMP/q.out"
'
test_expect_success 'conformance rejects a bad argument, naming it' '
	test_must_fail_with "bad argument .--frobnicate." "$C" --frobnicate &&
	test_must_fail_with "case .nope." "$C" --case nope
'
test_expect_success 'conformance with an unavailable backend reports not ok, exits non-zero' '
	LOOM_BACKEND=nccl "$C" >"$TEST_TMP/n.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/n.out"; test $rc != 0 &&
	grep -q "^not ok 1 - loom_init (LOOM_BACKEND=nccl)" "$TEST_TMP/n.out" &&
	grep -q "# conformance backend=nccl ranks=?: 0/1 passed" "$TEST_TMP/n.out"
'
# a row: size count type redop root time best algbw busbw #wrong
row='^ +[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z]+ +-?[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9]+|N/A)'
for op in allreduce allgather reduce_scatter broadcast alltoall reduce; do
	test_expect_success "loom-bench $op -c 1 on one rank: rows, 0 wrong" '
		"$B" '$op' -b 8 -e 1M -f 4 -n 2 -w 1 -c 1 >"$TEST_TMP/b.out" 2>&1 && rc=0 || rc=$?
		cat "$TEST_TMP/b.out"; test $rc = 0 &&
		test $(grep -Ec "$row\$" "$TEST_TMP/b.out") = 10 &&
		grep -q "^# Wrong elements *: 0 OK" "$TEST_TMP/b.out" &&
		grep -q "^# Avg bus bandwidth *: [0-9.]* GB/s" "$TEST_TMP/b.out"
	'
done
test_expect_success 'loom-bench: every dtype and op checks out' '
	for d in int8 int32 int64 float16 bfloat16 float32 float64; do
		for o in sum prod min max avg; do
			"$B" -d $d -o $o -b 1K -e 64K -f 8 -n 1 -w 0 -c 1 >"$TEST_TMP/d.out" 2>&1 ||
				{ echo "$d $o:"; cat "$TEST_TMP/d.out"; exit 1; }
		done
	done
'
test_expect_success 'loom-bench --memcpy adds two bandwidth columns, rank 0 alone and all ranks at once, both measured' '
	"$B" -b 1M -e 1M -n 2 --memcpy >"$TEST_TMP/m.out" 2>&1 && cat "$TEST_TMP/m.out" &&
	grep -Eq "^#.* memcpy +memcpy_all\$" "$TEST_TMP/m.out" &&
	grep -Eq "^ +1048576 +262144 +float32 +sum +-1 .* N/A +[0-9]*[1-9][0-9]*\.[0-9]+ +[0-9]*[1-9][0-9]*\.[0-9]+\$" "$TEST_TMP/m.out"
'
test_expect_success 'loom-bench names the bad argument' '
	test_must_fail_with "^loom-bench: collective .gather.: unknown collective" "$B" gather &&
	test_must_fail_with "^loom-bench: -d .float8.: unknown datatype" "$B" -d float8 &&
	test_must_fail_with "^loom-bench: --op .mean.: unknown reduction" "$B" --op mean &&
	test_must_fail_with "^loom-bench: -b .12Q.: not a size" "$B" -b 12Q &&
	test_must_fail_with "^loom-bench: -f .1.: expected a number greater than 1" "$B" -f 1 &&
	test_must_fail_with "^loom-bench: -n .0.: expected a positive integer" "$B" -n 0 &&
	test_must_fail_with "^loom-bench: unknown option .--bogus." "$B" --bogus &&
	test_must_fail_with "^loom-bench: -b .2M.: larger than -e" "$B" -b 2M -e 1M
'
test_expect_success 'loom-bench refuses the old flags, saying the new ones' '
	test_must_fail_with "^loom-bench: -o takes the reduction op now .nccl-tests. meaning.; name the collective as the first argument: loom-bench broadcast\$" "$B" -o broadcast &&
	test_must_fail_with "^loom-bench: --op-name is gone; name the collective as the first argument: loom-bench reduce\$" "$B" --op-name reduce &&
	test_must_fail_with "^loom-bench: -c takes a count now" "$B" --check &&
	test_must_fail_with "^loom-bench: -c takes a count now" "$B" -c -n 2
'
test_expect_success 'loom-bench takes nccl-tests names and "all": a row per datatype, op and size' '
	"$B" all_reduce_perf -d all -o all -b 64 -e 256 -f 4 -n 1 -w 0 -c 1 >"$TEST_TMP/a.out" &&
	cat "$TEST_TMP/a.out" &&
	grep -q "^# loom-bench .*: allreduce, 1 ranks, backend native, dtype all, op all," "$TEST_TMP/a.out" &&
	test $(grep -Ec "$row\$" "$TEST_TMP/a.out") = 70 &&
	grep -Eq "^ +256 +128 +bfloat16 +avg +-1 " "$TEST_TMP/a.out" &&
	"$B" broadcast -r all -e 8 -n 1 >"$TEST_TMP/r.out" && grep -q ", root all," "$TEST_TMP/r.out"
'
test_expect_success 'loom-bench --csv and --json (JSON Lines): the rows, well-formed' '
	"$B" reduce_scatter -b 8 -e 1K -f 4 -n 2 -w 1 -c 1 --memcpy --csv >"$TEST_TMP/c.csv" &&
	cat "$TEST_TMP/c.csv" &&
	python3 -c "import csv, sys; r = list(csv.DictReader(open(sys.argv[1]))); \
		assert len(r) == 5 and [x[\"wrong\"] for x in r] == [\"0\"] * 5, r; \
		assert float(r[-1][\"memcpy_all\"]) > 0 and int(r[-1][\"size\"]) == 1024" "$TEST_TMP/c.csv" &&
	"$B" alltoall -b 8 -e 1K -f 4 -n 2 -w 1 --json >"$TEST_TMP/j.json" &&
	cat "$TEST_TMP/j.json" &&
	python3 -c "import json, sys; l = [json.loads(x) for x in open(sys.argv[1])]; d, rows, t = l[0], l[1:-1], l[-1]; \
		assert d[\"collective\"] == \"alltoall\" and d[\"nranks\"] == 1 and len(rows) == 5, l; \
		assert all(\"size\" in r for r in rows) and \"size\" not in t, l; \
		assert rows[0][\"wrong\"] is None and t[\"wrong\"] is None and t[\"avg_busbw\"] >= 0" "$TEST_TMP/j.json"
'
test_expect_success 'loom-bench --backend nccl: unsupported, says why, exits non-zero' '
	test_must_fail_with "^loom-bench: --backend nccl: " "$B" --backend nccl
'
test_expect_success 'loom-bench --help lists the options' '
	"$B" --help >"$TEST_TMP/h" && grep -q -- "--peer mpi" "$TEST_TMP/h" && grep -q -- "--check N" "$TEST_TMP/h"
'
test_done
