#!/bin/sh
# No function of runtime/ or spank/ (their unit tests aside) runs over 100
# lines, from its opening brace to its closing one, unless ALLOW below
# names it with the reason it reads better whole: a long function does
# several jobs that cannot be read or tested apart. The functions are
# found by t/lib/long-functions.py, which relies on the project's K&R
# style (a body's braces in column 0) and fails where a file leaves it.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
command -v python3 >/dev/null 2>&1 || skip_all "python3 not installed"
MAX=100

# "file:function  why it reads better whole", one a line
ALLOW='
'

# "file:function lines line" for each function over $MAX lines in the
# files named, less those in $ALLOW; fails if a file cannot be parsed
long_unlisted() {
	printf '%s\n' "$ALLOW" | awk 'NF { print $1 }' >"$TEST_TMP/allow"
	python3 "$LOOM_SRC_DIR/t/lib/long-functions.py" --max $MAX "$@" >"$TEST_TMP/long" || {
		cat "$TEST_TMP/long"
		return 1
	}
	awk 'FILENAME == ARGV[1] { ok[$1]; next } !($1 in ok)' "$TEST_TMP/allow" "$TEST_TMP/long"
}

# fixture: in x.c, a function of $1 lines, a short one, a one-line one
fixture() {
	{
		printf '/* a file */\nstatic int\nlong_one(int a,\n\t int b)\n{\n'
		i=2; while [ $i -lt $1 ]; do printf '\ta += b;\n'; i=$((i + 1)); done
		printf '}\n\nstatic const int t[] = {\n1,\n};\n\n'
		printf 'int short_one(void)\n{\n\treturn long_one(1, t[0]);\n}\n'
		printf 'int one_line(void) { return 0; }\n'
	} >"$TEST_TMP/x.c"
}

test_expect_success 'the check names a hand-made function of 101 lines, not 100' '
	fixture 101 &&
	long_unlisted "$TEST_TMP/x.c" >"$TEST_TMP/got" &&
	test "$(cat "$TEST_TMP/got")" = "$TEST_TMP/x.c:long_one 101 5" &&
	fixture 100 &&
	long_unlisted "$TEST_TMP/x.c" >"$TEST_TMP/got" &&
	test ! -s "$TEST_TMP/got" &&
	fixture 101 &&
	ALLOW="$TEST_TMP/x.c:long_one  a reason" &&
	long_unlisted "$TEST_TMP/x.c" >"$TEST_TMP/got" &&
	test ! -s "$TEST_TMP/got"
'

test_expect_success 'the check fails on a body it cannot see open' '
	printf "int f(void) {\n\treturn 0;\n}\n" >"$TEST_TMP/y.c" &&
	! long_unlisted "$TEST_TMP/y.c" >"$TEST_TMP/got" &&
	grep "y.c:3: \"}\" closes no body" "$TEST_TMP/got"
'

test_expect_success "no function of runtime/ or spank/ over $MAX lines" '
	cd "$LOOM_SRC_DIR" &&
	find runtime spank -name "*.[ch]" ! -path "*/test/*" | sort >"$TEST_TMP/files" &&
	test $(wc -l <"$TEST_TMP/files") -gt 50 &&
	long_unlisted $(cat "$TEST_TMP/files") >"$TEST_TMP/bad" &&
	{ test ! -s "$TEST_TMP/bad" || { echo "file:function lines line"; cat "$TEST_TMP/bad"; false; }; }
'

test_expect_success 'every function ALLOW names is still over the limit' '
	cd "$LOOM_SRC_DIR" &&
	printf "%s\n" "$ALLOW" | awk "NF { print \$1 }" >"$TEST_TMP/allow" &&
	for a in $(cat "$TEST_TMP/allow"); do
		python3 t/lib/long-functions.py --max $MAX "${a%%:*}" 2>/dev/null | grep -q "^$a " ||
			{ echo "$a is no longer over $MAX lines: take it off ALLOW"; false; }
	done
'
test_done
