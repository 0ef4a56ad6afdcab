#!/bin/sh
# Every global name of the static libloom.a (shipped in libloom-dev) starts
# with loom_: a program that links it statically shares one namespace
# with it, so an internal helper called ck_agree or rv_rank0 could clash
# with the program's own. (libloom.so exports only loom.h's functions:
# t0007.)
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
command -v nm >/dev/null 2>&1 || skip_all "nm (binutils) not installed"
A=$LOOM_BUILD_DIR/runtime/.libs/libloom.a
[ -f "$A" ] || skip_all "no static libloom.a in this build (--disable-static)"

# "member: name" for each global defined in archive $1 without the
# prefix. Names that are no C identifier (GCC's "file.c.hash" markers of
# link-time optimised objects, shown when nm reads them without the LTO
# plugin) and __gnu_lto_* are the compiler's, not ours.
unprefixed() {
	nm -A -P -g --defined-only "$1" |
		awk '{ m = $1; sub(/^.*\[/, "", m); sub(/\]:$/, "", m) }
			$2 ~ /^[A-Za-z_][A-Za-z0-9_]*$/ && $2 !~ /^(loom_|__gnu_lto_)/ { print m ": " $2 }' |
		sort
}

if command -v cc >/dev/null 2>&1 && command -v ar >/dev/null 2>&1; then
	test_expect_success 'the check names a global without loom_ in a hand-made archive' '
		cd "$TEST_TMP" &&
		printf "static int helper(int x) { return x; }\nint loom_a(int x) { return helper(x); }\n" >a.c &&
		printf "int ck_agree(int x) { return x; }\nint loom_b;\n" >b.c &&
		cc -c a.c && cc -c b.c &&
		ar rc good.a a.o && ar rc bad.a a.o b.o &&
		unprefixed good.a >got && test ! -s got &&
		unprefixed bad.a >got && cat got &&
		test "$(cat got)" = "b.o: ck_agree"
	'
else
	test_skip 'the check names a global without loom_ in a hand-made archive' 'no cc or ar'
fi

test_expect_success 'libloom.a defines only loom_ globals' '
	nm -g --defined-only "$A" | grep -q " T loom_init$" &&
	unprefixed "$A" >"$TEST_TMP/bad" &&
	test ! -s "$TEST_TMP/bad" || {
		echo "$(wc -l <"$TEST_TMP/bad") globals without loom_:"
		awk -F": " "\$1 != m { if (m) print l; m = \$1; l = \$0; next } { l = l \" \" \$2 } END { print l }" "$TEST_TMP/bad"
		false
	}
'
test_done
