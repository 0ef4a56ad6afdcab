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
test_expect_success 'loom(3) names the functions of loom.h it documents' '
	for f in loom_init loom_allreduce loom_comm_split loom_mesh loom_wait loom_strerror; do
		grep -q "$f" "$LOOM_SRC_DIR/docs/man/loom.3" || { echo "missing $f"; exit 1; }
		grep -q "$f(" "$LOOM_SRC_DIR/runtime/loom.h" || { echo "$f not in loom.h"; exit 1; }
	done
'
test_done
