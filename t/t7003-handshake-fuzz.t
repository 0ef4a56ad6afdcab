#!/bin/sh
# The rendezvous/mesh handshake against random bytes, truncated and forged
# frames (t/security/handshake_fuzz.c), plain and under valgrind: every
# check passes and valgrind finds no memory error.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
F=$LOOM_BUILD_DIR/t/security/handshake_fuzz
test_expect_success 'fuzzed handshakes: only the real peer is taken, no forged server fools a client' '
	"$F" >"$TEST_TMP/o" 2>&1 && rc=0 || rc=$?
	grep -v "refused a connection" "$TEST_TMP/o" | head -30
	test $rc = 0 && ! grep -q "^not ok" "$TEST_TMP/o" && grep -q "^ok .* none taken" "$TEST_TMP/o"
'
test_expect_success 'the relayed hello and the one for another rank are logged as a relay' '
	grep "saw the connection as 127.0.0.1:[0-9]* -> 127.0.0.1:[0-9]*, this side as 127.0.0.1:[0-9]* -> 127.0.0.1:[0-9]*: a relay? refused" "$TEST_TMP/o" &&
	grep "meant to reach 3, this side is 0: a relay? refused" "$TEST_TMP/o"
'
if command -v valgrind >/dev/null 2>&1; then
test_expect_success 'the same under valgrind: no invalid read or write, no uninitialised use' '
	"$LOOM_BUILD_DIR/libtool" --mode=execute valgrind -q --error-exitcode=99 --trace-children=no \
		"$F" >"$TEST_TMP/v" 2>&1 && rc=0 || rc=$?
	grep -v "refused a connection" "$TEST_TMP/v" | head -40
	test $rc = 0 && ! grep -q "^not ok" "$TEST_TMP/v"
'
else
	test_skip 'the same under valgrind' 'valgrind not installed'
fi
test_done
