#!/bin/sh
# Man pages render without a single groff warning.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
command -v groff >/dev/null 2>&1 || skip_all "groff not installed"

for page in "$LOOM_SRC_DIR"/docs/man/*.[0-9]; do
	name=$(basename "$page")
	test_expect_success "$name renders with no groff warnings (groff -ww)" "
		groff -ww -man -z '$page' >'$TEST_TMP/w' 2>&1 && cat '$TEST_TMP/w' && test ! -s '$TEST_TMP/w'
	"
done
test_expect_success 'every function loom.h declares is in a man page' '
	fns=$(grep -oE "^[a-z][a-z_ ]*\**loom_[a-z0-9_]+\(" "$LOOM_SRC_DIR/runtime/loom.h" |
		grep -oE "loom_[a-z0-9_]+" | sort -u) &&
	test $(echo $fns | wc -w) -gt 40 &&
	missing="" &&
	for f in $fns; do
		grep -q "$f" "$LOOM_SRC_DIR"/docs/man/*.3 || missing="$missing $f"
	done &&
	{ test -z "$missing" || { echo "undocumented:$missing"; false; }; }
'
test_expect_success 'every installed command has a man page (a .so link names an installed page)' '
	make -s -C "$LOOM_BUILD_DIR" install DESTDIR="$TEST_TMP/inst" prefix=/usr \
		>"$TEST_TMP/install.out" 2>&1 || { tail -20 "$TEST_TMP/install.out"; false; } &&
	cmds=$(ls "$TEST_TMP/inst/usr/bin") &&
	test $(echo $cmds | wc -w) -ge 8 &&
	missing="" &&
	for c in $cmds; do
		page="$TEST_TMP/inst/usr/share/man/man1/$c.1"
		if [ ! -s "$page" ]; then missing="$missing $c"; continue; fi
		# a .so link must name a page that was installed too
		so=$(sed -n "s/^\.so //p" "$page")
		[ -z "$so" ] || [ -s "$TEST_TMP/inst/usr/share/man/$so" ] || missing="$missing $c(->$so)"
	done &&
	{ test -z "$missing" || { echo "no man page:$missing"; false; }; }
'
test_done
