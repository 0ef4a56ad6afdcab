#!/bin/sh
# loom-doctor's reader and analyses against mutated flight records
# (runtime/flight/test/flight_fuzz.c): random bytes, extreme header, slot
# and operation fields, names without a NUL or full of escapes, files
# truncated, extended and made sparse and many GiB long. Every file is
# accepted within the documented bounds or rejected with a one-line
# message, both analyses return (an alarm per iteration) and print no
# raw control byte; then the same under valgrind: no invalid access, no
# leak of loom's. No cluster. About 25 s in all (10000 iterations plain,
# 1000 under valgrind).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
F=$LOOM_BUILD_DIR/runtime/flight/test/flight_fuzz
test -x "$F" || skip_all "flight_fuzz not built"
test_expect_success 'fuzzed flight records: the reader keeps its bounds, the analyses return clean' '
	"$F" 10000 1 >"$TEST_TMP/o" 2>&1 && rc=0 || rc=$?
	grep -v "^ok" "$TEST_TMP/o" | head -30
	test $rc = 0 && ! grep -q "not ok" "$TEST_TMP/o" &&
	grep -q "^ok .* the reader both accepted and rejected files" "$TEST_TMP/o" &&
	grep -q "^ok .* a communicator at operation UINT64_MAX" "$TEST_TMP/o"
'
if command -v valgrind >/dev/null 2>&1; then
test_expect_success 'the same under valgrind: no invalid access, no leak of loom'"'"'s' '
	"$LOOM_BUILD_DIR/libtool" --mode=execute valgrind -q --error-exitcode=99 \
		--leak-check=full --errors-for-leak-kinds=definite "$F" 1000 2 \
		>"$TEST_TMP/v" 2>&1 && rc=0 || rc=$?
	grep -v "^ok" "$TEST_TMP/v" | head -40
	test $rc = 0 && ! grep -q "not ok" "$TEST_TMP/v"
'
else
	test_skip 'the same under valgrind' 'valgrind not installed'
fi
test_done
