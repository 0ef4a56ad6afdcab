#!/bin/sh
# No call circles between source files: in the built objects of runtime/
# and spank/, no two files call each other, directly or around several
# files (t/lib/call-circles.py; each circle is printed by its files and
# the calls inside it). A file in a circle cannot be understood, tested
# or moved without the others.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
command -v nm >/dev/null 2>&1 || skip_all "nm (binutils) not installed"
command -v python3 >/dev/null 2>&1 || skip_all "python3 not installed"
CIRCLES="python3 $LOOM_SRC_DIR/t/lib/call-circles.py"

# fixture: a.c and b.c call each other, c.c calls a.c; built as libloom
# is (link-time optimised, fat objects) when the compiler can
fixture() {
	mkdir -p "$TEST_TMP/fix/.libs" && cd "$TEST_TMP/fix" &&
	printf 'int b(int);\nint a(int x) { return x ? b(x - 1) : 0; }\n' >a.c &&
	printf 'int a(int);\nint b(int x) { return %s; }\n' "$1" >b.c &&
	printf 'int a(int);\nint c(void) { return a(3); }\n' >c.c &&
	lto="-flto=auto -ffat-lto-objects" &&
	{ cc $lto -c a.c -o /dev/null 2>/dev/null || lto=; } &&
	for f in a b c; do cc -O2 $lto -c $f.c -o .libs/libx_la-$f.o || return 1; done
}

if command -v cc >/dev/null 2>&1; then
	test_expect_success 'the check names a circle of hand-made objects' '
		fixture "a(x)" &&
		test_must_fail_with "circle of 2 files: .*/fix/a.c .*/fix/b.c" \
			$CIRCLES "$TEST_TMP"/fix/.libs/*.o >"$TEST_TMP/got" &&
		grep -q "fix/b.c -> .*fix/a.c: a$" "$TEST_TMP/got" &&
		! grep -q "^circle.*/c\.c" "$TEST_TMP/got"
	'
	test_expect_success 'the check passes hand-made objects without one' '
		fixture "x" &&
		$CIRCLES "$TEST_TMP"/fix/.libs/*.o >"$TEST_TMP/got" &&
		grep -q "^2 calls between 3 files, 0 circles$" "$TEST_TMP/got"
	'
else
	test_skip 'the check names a circle of hand-made objects' 'no cc'
	test_skip 'the check passes hand-made objects without one' 'no cc'
fi

test_expect_success 'no call circle between the files of runtime/ and spank/' '
	cd "$LOOM_BUILD_DIR" &&
	ls runtime/*/.libs/*.o spank/.libs/*.o | grep -v "^runtime/test/" >"$TEST_TMP/objs" &&
	test $(wc -l <"$TEST_TMP/objs") -gt 50 &&
	$CIRCLES --min-calls 100 $(cat "$TEST_TMP/objs")
'
test_done
