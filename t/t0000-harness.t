#!/bin/sh
# The test harness itself: a failing command anywhere in a body fails the
# test, helpers behave under dash, the summary's status follows failures.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"

# run_inner BODY...: a script of one test per argument, under /bin/sh, with
# its TAP in $TEST_TMP/inner.tap and its status in $TEST_TMP/inner.rc
run_inner() {
	{
		echo '. "$LOOM_SRC_DIR/t/lib/test-lib.sh"'
		for b in "$@"; do
			printf "test_expect_success 'inner' '%s'\n" "$b"
		done
		echo 'test_done'
	} >"$TEST_TMP/inner.t"
	rc=0
	/bin/sh "$TEST_TMP/inner.t" >"$TEST_TMP/inner.tap" 2>&1 || rc=$?
	echo $rc >"$TEST_TMP/inner.rc"
}

test_expect_success 'a failing command in the middle of a body fails the test' '
	run_inner "false; true" &&
	grep -qx "not ok 1 - inner" "$TEST_TMP/inner.tap" &&
	[ "$(cat "$TEST_TMP/inner.rc")" != 0 ]
'

test_expect_success 'a failure inside a function the body calls fails the test' '
	run_inner "f() { false; echo after; }; f; true" &&
	grep -qx "not ok 1 - inner" "$TEST_TMP/inner.tap" &&
	! grep -q "^#   after" "$TEST_TMP/inner.tap"
'

test_expect_success 'conditions and negations do not end a body' '
	run_inner "if false; then :; fi; ! false; false || true; true" "true" &&
	grep -qx "ok 1 - inner" "$TEST_TMP/inner.tap" &&
	grep -qx "ok 2 - inner" "$TEST_TMP/inner.tap" &&
	grep -qx "1..2" "$TEST_TMP/inner.tap" &&
	[ "$(cat "$TEST_TMP/inner.rc")" = 0 ]
'

test_expect_success 'one failing test of several makes the script fail' '
	run_inner "true" "false" "true" &&
	grep -qx "ok 1 - inner" "$TEST_TMP/inner.tap" &&
	grep -qx "not ok 2 - inner" "$TEST_TMP/inner.tap" &&
	grep -qx "ok 3 - inner" "$TEST_TMP/inner.tap" &&
	[ "$(cat "$TEST_TMP/inner.rc")" != 0 ]
'

test_expect_success 'test_must_fail_with: needs both the failure and the message' '
	test_must_fail_with "No such" ls /nonexistent-loom &&
	! test_must_fail_with "No such" true &&
	! test_must_fail_with "unrelated words" ls /nonexistent-loom
'

test_expect_success 'loom_rand and free_port vary under dash; free ports lie below the ephemeral range' '
	out=$(/bin/sh -c ". \"$LOOM_SRC_DIR/t/lib/cluster.sh\"; . \"$LOOM_SRC_DIR/t/runtime/lib.sh\";
		for i in 1 2 3 4 5 6 7 8; do free_port; done") &&
	echo "$out" &&
	[ "$(echo "$out" | wc -l)" -eq 8 ] &&
	[ "$(echo "$out" | sort -u | wc -l)" -gt 1 ] &&
	low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range) &&
	for p in $out; do [ "$p" -ge 20000 ] && [ "$p" -lt "$low" ] || { echo "port $p not in 20000..$low"; exit 1; }; done &&
	n=$(/bin/sh -c ". \"$LOOM_SRC_DIR/t/lib/cluster.sh\"; loom_rand 10") &&
	[ "$n" -ge 0 ] && [ "$n" -lt 10 ]
'

test_done
