#!/bin/sh
# The flight recorder and loom-doctor on the live cluster: a rank that
# stops before its 7th allreduce is named (rank, node, communicator, #7)
# while it hangs, and again from the same records after kill -9 of the
# step; a broadcast where the others call allreduce is a mismatch naming
# both; a hang inside one tensor-parallel group names that group and not
# the world; the timeout line of each rank that waited carries the
# verdict (a lost peer's line may add more after the kill). The hanging ranks wait
# for ever: the test waits for their markers and for loom-doctor to see
# them (events, under an outer timeout), then kills the step.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
test_need_cluster
cluster_plugstack none
. "$LOOM_SRC_DIR/t/runtime/flight.sh"

test_expect_success 'rank 2 of 4 stops before its 7th allreduce: loom-doctor names it while it hangs' '
	d=$(marker_dir) && f=$(marker_dir) && echo "$f" >"$TEST_TMP/fdir" &&
	start_step fl-hang hang 2 "$d" "$f" &&
	wait_file "$d/asleep.2" &&
	doctor_until "$f" "^verdict: world: ranks 0,1,3 wait in allreduce #7 " &&
	cat "$TEST_TMP/doc" &&
	grep -Eq "$HANG" "$TEST_TMP/doc" &&
	grep -Eq "^world: rank 2 \(n2, pid [0-9]+\) last finished allreduce #6 and is in no collective\$" "$TEST_TMP/doc" &&
	! grep -q mismatch "$TEST_TMP/doc"
'

test_expect_success 'loom-doctor --json gives the same verdict, machine-readable' '
	f=$(cat "$TEST_TMP/fdir") &&
	"$DOC" --json "$f" >"$TEST_TMP/json" || test $? -eq 1 &&
	python3 - "$TEST_TMP/json" <<-\PY
	import json, sys
	j = json.load(open(sys.argv[1]))
	r = j["report"]
	assert j["errors"] == [], j["errors"]
	assert r["records"] == 4 and r["stuck"] is True, r
	assert r["verdict"].startswith("world: ranks 0,1,3 wait in allreduce #7 "), r["verdict"]
	kinds = sorted(x["type"] for x in r["findings"])
	assert kinds == ["behind", "waiting"], kinds
	w = [c for c in r["communicators"] if c["comm"] == "world"][0]
	assert w["last_posted"] == 7 and w["world_ranks"] == [0, 1, 2, 3], w
	PY
'

test_expect_success 'loom-doctor --job collects the records from the nodes of the running job (srun --overlap), also as JSON' '
	j=$(squeue -h -o %i -n fl-hang) && test -n "$j" &&
	f=$(cat "$TEST_TMP/fdir") &&
	LOOM_FLIGHT_DIR=$f timeout 120 "$DOC" --job "$j" >"$TEST_TMP/jdoc" 2>&1 && rc=0 || rc=$? &&
	cat "$TEST_TMP/jdoc" &&
	test $rc -eq 1 &&
	grep -Eq "$HANG" "$TEST_TMP/jdoc" &&
	{ LOOM_FLIGHT_DIR=$f timeout 120 "$DOC" --json --job "$j" >"$TEST_TMP/jjson" || :; } &&
	python3 - "$TEST_TMP/jjson" <<-\PY
	import json, sys
	j = json.load(open(sys.argv[1]))
	r = j["report"]
	# the nodes of the cluster share this host, and so the directory: each
	# node sends the 4 records
	assert j["errors"] == [] and r["records"] >= 4 and r["records"] % 4 == 0, j
	assert r["stuck"] is True, j
	assert r["verdict"].startswith("world: ranks 0,1,3 wait in allreduce #7 "), r["verdict"]
	PY
'

test_expect_success 'after kill -9 of the step the records give the same verdict' '
	f=$(cat "$TEST_TMP/fdir") &&
	kill_step fl-hang &&
	"$DOC" "$f" >"$TEST_TMP/doc2" 2>&1 || test $? -eq 1 &&
	cat "$TEST_TMP/doc2" &&
	grep -Eq "$GONE" "$TEST_TMP/doc2" &&
	test $(ls "$f"/*.flight | wc -l) -eq 4
'

test_expect_success 'broadcast where the others call allreduce: a mismatch naming both' '
	d=$(marker_dir) && f=$(marker_dir) &&
	start_step fl-mm mismatch 2 "$d" "$f" &&
	for r in 0 1 2 3; do wait_file "$d/called.$r" || exit 1; done &&
	doctor_until "$f" "mismatch at #7" &&
	kill_step fl-mm &&
	cat "$TEST_TMP/doc" &&
	grep -q "^world: mismatch at #7: ranks 0,1,3 called allreduce, rank 2 called broadcast(root 0)\$" "$TEST_TMP/doc" &&
	grep -q "^verdict: world: mismatch at #7: ranks 0,1,3 called allreduce, rank 2 called broadcast(root 0)\$" "$TEST_TMP/doc"
'

test_expect_success 'a hang in one tp group names that communicator, not the world' '
	tp_hang fl-tp
'

test_expect_success 'the timeout line of the ranks that waited carries the verdict' '
	d=$(marker_dir) && f=$(marker_dir) &&
	LOOM_TIMEOUT=3 start_step fl-tmo hang 2 "$d" "$f" &&
	wait_file "$d/asleep.2" &&
	timeout 120 sh -c "until test \$(grep -c \"7th allreduce: \" \"\$1\") -eq 3; do sleep 0.2; done" sh "$TEST_TMP/o.fl-tmo" &&
	kill_step fl-tmo &&
	cat "$TEST_TMP/o.fl-tmo" &&
	grep "error: flight records in $f: world: ranks 0,1,3 wait in allreduce #7 .*; rank 2 (n2, pid [0-9]*) last finished allreduce #6 and is in no collective\$" "$TEST_TMP/o.fl-tmo" >"$TEST_TMP/v" &&
	for r in 0 1 3; do grep -q "^loom\[$r/4 n[12]\]: error: flight records" "$TEST_TMP/v" || exit 1; done &&
	test $(ls "$f"/*.flight | wc -l) -eq 4
'
test_done
