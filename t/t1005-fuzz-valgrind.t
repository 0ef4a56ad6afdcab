#!/bin/sh
# The parser fuzz test once more under valgrind: no invalid access, no leak.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
fuzz=$LOOM_BUILD_DIR/spank/test/fuzz
test -x "$fuzz" || skip_all "plugin not built"
command -v valgrind >/dev/null || skip_all "valgrind not installed"
test_expect_success 'fuzzed parsers: no memory error, no leak of loom'"'"'s under valgrind' '
	"$LOOM_BUILD_DIR/libtool" --mode=execute valgrind -q --error-exitcode=99 \
		--leak-check=full --errors-for-leak-kinds=definite \
		--suppressions="$LOOM_SRC_DIR/spank/test/libslurm.supp" "$fuzz" 3000 &&
	echo valgrind clean
'
test_done
