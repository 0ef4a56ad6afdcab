#!/bin/sh
# A node that stops answering without closing its connections
# (docs/fault-tolerance.md, "The heartbeat and the fence"): both ranks of
# a node stop themselves with SIGSTOP at a random iteration of
# allreduces, as a node that lost power would; nothing closes their
# connections. With LOOM_HEARTBEAT set, the survivors see them lost,
# revoke, agree (every survivor prints the same failed set: the stopped
# node's ranks), shrink, and the shrunk world's allreduce gives the right
# sums; the same with one rank stopped beside a running node-mate, which
# waits for it in shared memory. Then the test sends SIGCONT: the stopped
# ranks are fenced, their agree and shrink return LOOM_ERR_REVOKED and
# their allreduces fail, while the survivors' sums, checked again after
# the wake-up, stay right. With LOOM_HEARTBEAT=0 the same stop ends in
# LOOM_ERR_TIMEOUT, nothing agreed. Every srun is bounded (t_srun), every
# wait too: a hang fails the test.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
LOOM_TEST_NODES=3
export LOOM_TEST_NODES
test_need_cluster
cluster_plugstack none
FT=$LOOM_BUILD_DIR/t/runtime/ft-check
T2_SRUN_TIMEOUT=400
# generous against a loaded machine: the self-fence needs H/2 without a run
HB=8

# stopped N NODES VICTIMS FAILED: an N-rank run on NODES nodes whose
# VICTIMS (a comma list) stop themselves; SIGCONT once the survivors
# shrank; checks of both sides
stopped() {
	d=$TEST_TMP/stop.$3 && rm -rf "$d" && mkdir -p "$d" &&
	it=$(( $(loom_rand 19) + 1 )) && echo "iteration $it" &&
	{ LOOM_HEARTBEAT=$HB LOOM_TIMEOUT=120 env_srun -N"$2" -n"$1" -- $FT stop "$3" $it "$d" \
		>"$TEST_TMP/o" 2>&1 & echo $! >"$TEST_TMP/srun.pid"; } &&
	{ timeout 300 sh -c 'until [ -e "$1/shrunk" ]; do sleep 0.2; done' sh "$d" || echo "no shrink"; } &&
	for v in $(echo "$3" | tr , ' '); do
		timeout 60 sh -c 'until [ -s "$1/pid.$2" ]; do sleep 0.2; done' sh "$d" "$v" &&
		kill -CONT "$(cat "$d/pid.$v")" || echo "no pid for rank $v"
	done &&
	{ wait "$(cat "$TEST_TMP/srun.pid")" || :; } &&
	cat "$TEST_TMP/o" &&
	s=$(( $1 - $(echo "$3" | tr , '\n' | wc -l) )) && nv=$(( $1 - s )) &&
	test "$(grep -c ': agree: ' "$TEST_TMP/o")" -eq $s &&
	test "$(grep ': agree: ' "$TEST_TMP/o" | sed 's/^rank [0-9]*: //' | sort -u)" = "agree: flag 1 failed $4" &&
	test "$(grep -Ec ": shrunk: rank [0-9]+ of $s sum [0-9]+ want [0-9]+ ok$" "$TEST_TMP/o")" -eq $s &&
	test "$(grep -Ec ": after: rank [0-9]+ of $s sum [0-9]+ want [0-9]+ ok$" "$TEST_TMP/o")" -eq $s &&
	test "$(grep -Ec ': split: .* ok$' "$TEST_TMP/o")" -eq $s &&
	test "$(grep -Ec ": dup: rank [0-9]+ of $s sum .* ok$" "$TEST_TMP/o")" -eq $s &&
	test "$(grep -Ec ': mesh-dp: .* ok$' "$TEST_TMP/o")" -eq $s &&
	test "$(grep -c ': done$' "$TEST_TMP/o")" -eq $s &&
	test "$(grep -c ': fenced: agree status -13$' "$TEST_TMP/o")" -eq $nv &&
	test "$(grep -c ': fenced: shrink status -13$' "$TEST_TMP/o")" -eq $nv &&
	test "$(grep -Ec ': fenced: allreduce status -(5|13)$' "$TEST_TMP/o")" -eq $nv &&
	test "$(grep -Ec ': fenced: dup allreduce status -(5|13)$' "$TEST_TMP/o")" -eq $nv &&
	test "$(grep -c ': fenced done$' "$TEST_TMP/o")" -eq $nv &&
	grep -q "nothing came from it for $HB s (LOOM_HEARTBEAT)" "$TEST_TMP/o" &&
	grep -q "this rank is fenced" "$TEST_TMP/o" &&
	! grep -E 'FAIL|WRONG' "$TEST_TMP/o"
}

test_expect_success '4 ranks / 2 nodes: the second node stopped; the first shrinks, the stopped ranks are fenced' '
	stopped 4 2 2,3 2,3
'
test_expect_success '6 ranks / 3 nodes: the last node stopped; 4 go on, the stopped ranks are fenced' '
	stopped 6 3 4,5 4,5
'
test_expect_success '6 ranks / 3 nodes: the middle node stopped; 4 go on, the stopped ranks are fenced' '
	stopped 6 3 2,3 2,3
'
# its node-mate waits for it in shared memory, where nothing times out:
# the waiter probes it over TCP, and the dial goes unanswered
test_expect_success '4 ranks / 2 nodes: rank 1 alone stopped, beside a running node-mate; 3 go on' '
	stopped 4 2 1 1
'
# without the heartbeat nothing turns the silence into a failure: the
# allreduce and then the agreement end at LOOM_TIMEOUT, nothing agreed
unwatched() {
	d=$TEST_TMP/stop.off && rm -rf "$d" && mkdir -p "$d" &&
	{ LOOM_HEARTBEAT=0 LOOM_TIMEOUT=20 env_srun -N2 -n4 -- $FT stop 2,3 3 "$d" \
		>"$TEST_TMP/o" 2>&1 & echo $! >"$TEST_TMP/srun.pid"; } &&
	{ timeout 300 sh -c 'until [ -e "$1/gaveup" ] || [ -e "$1/shrunk" ]; do sleep 0.2; done' sh "$d" ||
		echo "no end"; } &&
	for v in 2 3; do
		timeout 60 sh -c 'until [ -s "$1/pid.$2" ]; do sleep 0.2; done' sh "$d" "$v" &&
		kill -CONT "$(cat "$d/pid.$v")" || echo "no pid for rank $v"
	done &&
	{ wait "$(cat "$TEST_TMP/srun.pid")" || :; } &&
	cat "$TEST_TMP/o" &&
	test ! -e "$d/shrunk" &&
	test "$(grep -c ": FAIL agree: status -4 " "$TEST_TMP/o")" -eq 2
}
test_expect_success 'LOOM_HEARTBEAT=0: a stopped node is not detected; agree ends in LOOM_ERR_TIMEOUT' '
	unwatched
'
test_done
