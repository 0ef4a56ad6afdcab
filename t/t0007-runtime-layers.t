#!/bin/sh
# The runtime's layers hold in the built code: no call from a folder of
# runtime/ into a folder above it (runtime/README.md gives the order), no
# #include of a folder above it, and libloom.so exports exactly the
# functions loom.h declares.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
command -v nm >/dev/null 2>&1 || skip_all "nm (binutils) not installed"
B=$LOOM_BUILD_DIR/runtime
ORDER="util metrics flight transport comm coll core boot backend api dp ckpt"

# "folder symbol" lines: what each object defines (D) and needs (U)
symbols() {
	for f in $ORDER; do
		for o in "$B/$f"/.libs/*.o; do
			[ -f "$o" ] || continue
			nm -P "$o" | awk -v f="$f" -v o="${o##*/}" '
				$2 ~ /^[TDBRVW]$/ { print "D", f, o, $1 }
				$2 == "U" { print "U", f, o, $1 }'
		done
	done
}

test_expect_success 'every layer folder has objects in the built library' '
	for f in $ORDER; do
		ls "$B/$f"/.libs/*.o >/dev/null 2>&1 || { echo "no objects in runtime/$f"; false; }
	done
'

test_expect_success 'no call goes up a layer' '
	symbols >"$TEST_TMP/syms" &&
	awk -v order="$ORDER" "
		BEGIN { n = split(order, o, \" \"); for (i = 1; i <= n; i++) rank[o[i]] = i }
		\$1 == \"D\" { def[\$4] = \$2; obj[\$4] = \$3 }
		\$1 == \"U\" { use[++k] = \$0 }
		END {
			for (i = 1; i <= k; i++) {
				split(use[i], u, \" \")
				s = u[4]
				if (!(s in def)) continue
				if (rank[def[s]] > rank[u[2]]) {
					printf \"runtime/%s/%s calls up into runtime/%s/%s: %s\\n\", u[2], u[3], def[s], obj[s], s
					bad++
				}
				edges++
			}
			printf \"%d calls between runtime objects checked\\n\", edges
			exit bad > 0 || edges < 100
		}" "$TEST_TMP/syms"
'

# "file:line: text" for each #include "<upper>/..." in runtime/<folder>/
# of tree $1 where <upper> comes after <folder> in ORDER; the unit tests
# in runtime/<folder>/test/ may include anything and are not looked at
includes_up() {
	local i=0 j f g s
	for f in $ORDER; do
		i=$((i + 1)) j=0
		for g in $ORDER; do
			j=$((j + 1))
			[ $j -gt $i ] || continue
			for s in "$1/runtime/$f"/*.[ch]; do
				[ -f "$s" ] || continue
				grep -Hn "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]\(\.\./\)\{0,1\}$g/" "$s" |
					sed "s|^$1/||"
			done
		done
	done
}

test_expect_success 'the include check finds an upward include of a hand-made tree' '
	mkdir -p "$TEST_TMP/fix/runtime/comm/test" "$TEST_TMP/fix/runtime/coll" &&
	printf "#include \"util/util.h\"\n#include \"comm/comm.h\"\n" >"$TEST_TMP/fix/runtime/coll/x.c" &&
	printf "#include \"ckpt/ckpt.h\"\n" >"$TEST_TMP/fix/runtime/comm/test/t.c" &&
	includes_up "$TEST_TMP/fix" >"$TEST_TMP/up" &&
	test ! -s "$TEST_TMP/up" &&
	printf "#  include <../core/core.h>\n" >"$TEST_TMP/fix/runtime/coll/coll.h" &&
	includes_up "$TEST_TMP/fix" >"$TEST_TMP/up" &&
	cat "$TEST_TMP/up" &&
	test "$(cat "$TEST_TMP/up")" = "runtime/coll/coll.h:1:#  include <../core/core.h>"
'

test_expect_success 'no #include goes up a layer' '
	includes_up "$LOOM_SRC_DIR" >"$TEST_TMP/up" &&
	{ test ! -s "$TEST_TMP/up" || { cat "$TEST_TMP/up"; false; }; }
'

test_expect_success 'libloom.so exports exactly the functions of loom.h' '
	so=$(ls "$B"/.libs/libloom.so.*.*.* | head -n 1) &&
	grep -oE "^[a-z][a-z_ ]*[ *]loom_[a-z0-9_]+\(" "$LOOM_SRC_DIR/runtime/loom.h" |
		grep -oE "loom_[a-z0-9_]+" | sort -u >"$TEST_TMP/want" &&
	nm -D --defined-only "$so" | awk "\$2 ~ /^[TDBRVWi]$/ { print \$3 }" | sed "s/@.*//" |
		sort -u >"$TEST_TMP/got" &&
	test $(wc -l <"$TEST_TMP/want") -gt 60 &&
	{ diff "$TEST_TMP/want" "$TEST_TMP/got" || { echo "< in loom.h only, > exported only"; false; }; }
'
test_done
