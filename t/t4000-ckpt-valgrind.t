#!/bin/sh
# The checkpoint unit tests once more under valgrind: no invalid access,
# no uninitialised value reaching a system call, no leak of libloom's.
# (Regression: a load whose manifest failed closed uninitialised file
# descriptors, possibly one the program owned.)
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
command -v valgrind >/dev/null || skip_all "valgrind not installed"
for t in ckpt_format ckpt_world ckpt_files; do
	test_expect_success "runtime/ckpt/test/$t: valgrind clean" '
		"$LOOM_BUILD_DIR/libtool" --mode=execute valgrind -q --error-exitcode=99 \
			--leak-check=full --errors-for-leak-kinds=definite \
			"$LOOM_BUILD_DIR/runtime/ckpt/test/'$t'" >"$TEST_TMP/vg.out" 2>&1 && rc=0 || rc=$?
		grep -v "^ok " "$TEST_TMP/vg.out" || true; test $rc = 0 &&
		grep -q "^1\.\.[1-9]" "$TEST_TMP/vg.out" && ! grep -q "^not ok" "$TEST_TMP/vg.out"
	'
done
test_done
