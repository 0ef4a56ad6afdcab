#!/bin/sh
# The metrics file in a directory other users can write (mode 1777, as
# /tmp or a shared textfile-collector directory is): links and FIFOs that
# user nobody plants at the final name or at the temporary name the writer
# used to take (NAME.tmp.PID) neither redirect a root writer onto another
# file nor make it hang; it still writes its metrics. The unit program
# runtime/metrics/test/metrics does the flushing (at its test and at exit), under
# timeout. Needs root, as make check on CI runs.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
[ "$(id -u)" = 0 ] || skip_all "needs root to act as user nobody"
id nobody >/dev/null 2>&1 || skip_all "no user nobody"
command -v runuser >/dev/null || skip_all "runuser not installed"
M=$LOOM_BUILD_DIR/runtime/metrics/test/metrics
S=$TEST_TMP/shared
mkdir "$S" && chmod 1777 "$S"
printf 'root secret\n' >"$TEST_TMP/victim" && chmod 600 "$TEST_TMP/victim"
as_nobody() { runuser -u nobody -- "$@"; }

# flush NAME PLANT: the unit program, as root, writes $S/NAME; before it
# starts (it waits on a gate, its pid known) nobody runs PLANT with $1 the
# old temporary name $S/NAME.tmp.PID and $2 the final name $S/NAME
flush() {
	rm -f "$TEST_TMP/gate" "$TEST_TMP/pid" && mkfifo "$TEST_TMP/gate" &&
	LOOM_METRICS_FILE="$S/$1" timeout 30 sh -c 'echo $$ >"$1"; read x <"$2"; exec "$3"' \
		sh "$TEST_TMP/pid" "$TEST_TMP/gate" "$M" >"$TEST_TMP/$1.tap" 2>&1 &
	bg=$!
	while [ ! -s "$TEST_TMP/pid" ]; do sleep 0.1; done
	as_nobody sh -c "$2" sh "$S/$1.tmp.$(cat "$TEST_TMP/pid")" "$S/$1" &&
	echo go >"$TEST_TMP/gate" &&
	wait $bg && rc=0 || rc=$?
	cat "$TEST_TMP/$1.tap"
	test $rc = 0 && ! grep -q "^not ok" "$TEST_TMP/$1.tap"
}
# written NAME: a regular file of root's with the metrics, the victim as it was
written() {
	test -f "$S/$1" && test ! -L "$S/$1" && test "$(stat -c %u "$S/$1")" = 0 &&
	grep -q "^loom_operations_total{.*comm=\"world\",op=\"allreduce\"} 6$" "$S/$1" &&
	test "$(cat "$TEST_TMP/victim")" = "root secret" &&
	test "$(stat -c %a "$TEST_TMP/victim")" = 600 &&
	test $(ls -a "$S" | grep -c "^$1\.tmp\.[0-9a-f]\{16\}$") = 0
}

test_expect_success 'a link at the old temporary name: not followed, the victim untouched' '
	flush a.prom "ln -s $TEST_TMP/victim \"\$1\"" && written a.prom
'
test_expect_success 'a link at the final name: replaced, not followed' '
	flush b.prom "ln -s $TEST_TMP/victim \"\$2\"" && written b.prom
'
test_expect_success 'a FIFO at the final name: replaced, no hang' '
	flush c.prom "mkfifo \"\$2\"" && written c.prom
'
test_expect_success 'a FIFO at the old temporary name: no hang' '
	flush d.prom "mkfifo \"\$1\"" && written d.prom
'
test_expect_success 'a directory that is a link (to a root-only one): refused, said once, no hang' '
	mkdir -m 700 "$TEST_TMP/root-only" && as_nobody ln -s "$TEST_TMP/root-only" "$S/dir" &&
	LOOM_METRICS_FILE="$S/dir/e.prom" timeout 30 "$M" >"$TEST_TMP/e.tap" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/e.tap"; test $rc != 124 &&
	test $(grep -c "metrics: $S/dir/e.prom: the directory: .*; not written (said once)" "$TEST_TMP/e.tap") = 1 &&
	test -z "$(ls -A "$TEST_TMP/root-only")"
'
test_done
