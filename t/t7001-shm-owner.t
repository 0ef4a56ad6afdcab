#!/bin/sh
# libloom's shared-memory segments against user nobody (the unit program
# forks children that become nobody): pre-created names, wrong modes and
# snooping are refused. Needs root, as make check on CI runs.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
[ "$(id -u)" = 0 ] || skip_all "needs root to act as user nobody"
test_expect_success 'pre-created, wrong-mode and foreign segments are refused; nobody cannot open the job'"'"'s' '
	"$LOOM_BUILD_DIR/t/security/shm_owner" >"$TEST_TMP/o" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/o"
	test $rc = 0 && ! grep -q "^not ok" "$TEST_TMP/o" && test $(grep -c "^ok" "$TEST_TMP/o") -ge 12 &&
	grep -q "belongs to uid [0-9]* with mode 0666, not to this job" "$TEST_TMP/o" &&
	grep -q "cannot create it: File exists (someone else made that name first)" "$TEST_TMP/o"
'
test_done
