#!/bin/sh
# loom-doctor --slow on the live cluster: a rank that sleeps 20 ms more
# than the others before each allreduce (4 ranks, then 8, on 2 nodes) is
# named with its node, while the job still runs (--job too) and after it;
# its metric stands out (the others' loom_wait_seconds_total minus its
# own); a rank stopped and continued in bursts (SIGSTOP/SIGCONT) is named;
# a balanced job names nobody; a rank slowed for the first half of the
# run only is named over that half (--until) and not over the second
# (--last).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
test_need_cluster
cluster_plugstack none
DOC=$LOOM_BUILD_DIR/runtime/tools/loom-doctor
FS=$LOOM_BUILD_DIR/t/runtime/flight-slow

# run_slow NAME N ITERS WHO MS FIRST: flight-slow on N ranks of 2 nodes,
# records and markers in $TEST_TMP/NAME (LOOM_FLIGHT_OPS 1024), metrics
# files kept there; output $TEST_TMP/o.NAME. In the background when
# FLIGHT_SLOW_HOLD=1 (its srun's pid in $TEST_TMP/pid.NAME).
run_slow() {
	local d=$TEST_TMP/$1
	mkdir -p "$d" && chmod 777 "$d" &&
	LOOM_FLIGHT_DIR=$d LOOM_FLIGHT_OPS=1024 LOOM_METRICS_FILE="$d/m-%r.prom" LOOM_METRICS_KEEP=1 \
		env_srun -O -N2 -n"$2" -J "$1" -- "$FS" "$3" "$4" "$5" "$6" "$d" >"$TEST_TMP/o.$1" 2>&1
}

# caused FILE...: "rank value" lines, the others' waiting each world rank
# caused per the metric: the sum of every rank's loom_wait_seconds_total
# minus ranks x its own (the dashboard's query, on one scrape)
caused() {
	cat "$@" | awk '/^loom_wait_seconds_total\{.*comm="world"/ {
		match($0, /rank="[0-9]+"/); r = substr($0, RSTART + 6, RLENGTH - 7)
		w[r] = $2; s += $2; n++ }
		END { for (r in w) printf "%s %.6f\n", r, s - n * w[r] }' | sort -k2 -g -r
}

# wait_done DIR N: until every rank left done.RANK
wait_done() {
	timeout 120 sh -c 'until [ $(ls "$1" | grep -c "^done\.") -ge "$2" ]; do sleep 0.2; done' \
		sh "$1" "$2" && return 0
	echo "not $2 ranks done in $1"; ls "$1"; return 1
}

test_expect_success '4 ranks, rank 3 late by 20 ms: named with its node while the job runs' '
	d=$TEST_TMP/s4 &&
	{ FLIGHT_SLOW_HOLD=1 run_slow s4 4 100 3 20 100 & echo $! >"$TEST_TMP/pid.s4"; } &&
	wait_done "$d" 4 &&
	{ "$DOC" --slow "$d" >"$TEST_TMP/doc" 2>&1; test $? -eq 1; } &&
	cat "$TEST_TMP/doc" &&
	grep -Eq "^verdict: world: rank 3 \(n2\) made the others wait [0-9]+ % of the last 100 allreduce \([0-9.]+ ms per operation, score (0\.[6-9][0-9]|1\.00)\)\$" "$TEST_TMP/doc" &&
	grep -Eq "^world: rank 3 \(n2, host [^,]+, pid $(cat "$d/pid.3")\): caused " "$TEST_TMP/doc"
'

test_expect_success '--slow --job: the same verdict from the running job' '
	j=$(squeue -h -o %i -n s4) && test -n "$j" &&
	{ LOOM_FLIGHT_DIR=$TEST_TMP/s4 timeout 120 "$DOC" --slow --job "$j" >"$TEST_TMP/jdoc" 2>&1; test $? -eq 1; } &&
	cat "$TEST_TMP/jdoc" &&
	grep -q "^verdict: world: rank 3 (n2) made the others wait" "$TEST_TMP/jdoc"
'

test_expect_success '--slow --json: the ranks by the waiting they caused, machine-readable' '
	{ "$DOC" --slow --json "$TEST_TMP/s4" >"$TEST_TMP/json"; test $? -eq 1; } &&
	python3 - "$TEST_TMP/json" <<-\PY
	import json, sys
	j = json.load(open(sys.argv[1]))
	s = j["slow"]
	assert j["errors"] == [] and s["records"] == 4 and s["straggler"] is True, j
	w = [c for c in s["communicators"] if c["comm"] == "world"][0]
	assert w["straggler"] == 3 and w["operations"] == 100 and w["kind"] == "allreduce", w
	top = w["ranks"][0]
	assert top["rank"] == 3 and top["node"] == "n2" and top["score"] >= 0.6, top
	assert [r["caused_s"] for r in w["ranks"]] == sorted((r["caused_s"] for r in w["ranks"]), reverse=True)
	assert s["verdict"].startswith("world: rank 3 (n2) made the others wait"), s["verdict"]
	PY
'

test_expect_success 'the metric: the others waited for rank 3 (loom_wait_seconds_total)' '
	d=$TEST_TMP/s4 && touch "$d/go" &&
	timeout 60 sh -c "until [ \$(grep -c \"allreduces done\" \"\$1\") -ge 4 ]; do sleep 0.2; done" sh "$TEST_TMP/o.s4" &&
	timeout 60 sh -c "while [ -n \"\$(squeue -h -o %i -n s4)\" ]; do sleep 0.2; done" &&
	all_ranks_passed "$TEST_TMP/o.s4" 4 "allreduces done" &&
	caused "$d"/m-*.prom >"$TEST_TMP/caused" && cat "$TEST_TMP/caused" &&
	test "$(head -1 "$TEST_TMP/caused" | cut -d" " -f1)" = 3 &&
	awk "NR == 1 { exit !(\$2 > 1.0) }" "$TEST_TMP/caused"
'

test_expect_success '8 ranks, rank 5 late by 20 ms: named, node n2' '
	run_slow s8 8 100 5 20 100 &&
	all_ranks_passed "$TEST_TMP/o.s8" 8 "allreduces done" &&
	{ "$DOC" --slow "$TEST_TMP/s8" >"$TEST_TMP/doc" 2>&1; test $? -eq 1; } &&
	cat "$TEST_TMP/doc" &&
	grep -q "^verdict: world: rank 5 (n2) made the others wait" "$TEST_TMP/doc" &&
	caused "$TEST_TMP/s8"/m-*.prom | head -1 | grep -q "^5 "
'

# a rank a node: 4 ranks on a 2-core host, beside another test's ranks
# (make -j2 check), can leave one of them truly late
test_expect_success 'a balanced job: no straggler' '
	run_slow bal 2 100 -1 0 0 &&
	all_ranks_passed "$TEST_TMP/o.bal" 2 "allreduces done" &&
	{ "$DOC" --slow "$TEST_TMP/bal" >"$TEST_TMP/doc" 2>&1; rc=$?; cat "$TEST_TMP/doc"; test $rc -eq 0; } &&
	grep -q "^verdict: no straggler\$" "$TEST_TMP/doc" &&
	grep -q "^world: no straggler in the last 100 allreduce" "$TEST_TMP/doc"
'

test_expect_success 'rank 1 kept off its CPU (SIGSTOP/SIGCONT in bursts): named, node n1' '
	d=$TEST_TMP/stop &&
	{ run_slow stop 4 300 -1 0 0 & echo $! >"$TEST_TMP/pid.stop"; } &&
	wait_file() { timeout 120 sh -c "until [ -s \"\$1\" ]; do sleep 0.1; done" sh "$1"; } &&
	wait_file "$d/pid.1" && p=$(cat "$d/pid.1") &&
	while ! [ -e "$d/done.1" ] && kill -STOP "$p" 2>/dev/null; do
		sleep 0.03; kill -CONT "$p"; sleep 0.03
	done &&
	{ kill -CONT "$p" 2>/dev/null || true; } && wait "$(cat "$TEST_TMP/pid.stop")" &&
	{ "$DOC" --slow "$d" >"$TEST_TMP/doc" 2>&1; test $? -eq 1; } &&
	cat "$TEST_TMP/doc" &&
	grep -q "^verdict: world: rank 1 (n1) made the others wait" "$TEST_TMP/doc"
'

test_expect_success 'rank 2 slowed in the first half only: named over #1-#100, not over the last 80' '
	run_slow half 4 200 2 20 100 &&
	all_ranks_passed "$TEST_TMP/o.half" 4 "allreduces done" &&
	"$DOC" --slow --last 80 "$TEST_TMP/half" >"$TEST_TMP/doc" 2>&1 &&
	cat "$TEST_TMP/doc" &&
	grep -q "^verdict: no straggler\$" "$TEST_TMP/doc" &&
	grep -q "allreduce #121-#200 (80 operations)" "$TEST_TMP/doc" &&
	{ "$DOC" --slow --last 80 --until 100 "$TEST_TMP/half" >"$TEST_TMP/doc" 2>&1; test $? -eq 1; } &&
	cat "$TEST_TMP/doc" &&
	grep -q "allreduce #21-#100 (80 operations)" "$TEST_TMP/doc" &&
	grep -q "^verdict: world: rank 2 (n2) made the others wait [0-9]* % of the last 80 allreduce" "$TEST_TMP/doc"
'
test_done
