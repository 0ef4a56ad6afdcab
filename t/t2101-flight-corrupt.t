#!/bin/sh
# loom-doctor on record files that are not what the writer makes:
# truncated, a wrong magic or version, sizes that do not add up, a ring
# that is not a power of two, a communicator slot out of range, garbage,
# an empty file, a link, a directory. Each gets one message naming the
# file and is skipped (exit 2 when nothing usable is left), never a
# crash; a good record beside them is still read. The parser runs under
# valgrind on the same files. No cluster: one rank of loom-bench makes
# the good record.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
DOC=$LOOM_BUILD_DIR/runtime/tools/loom-doctor
command -v python3 >/dev/null || skip_all "python3 not installed"

G=$TEST_TMP/good
test_expect_success 'one rank of loom-bench leaves a record loom-doctor reads' '
	mkdir "$G" &&
	LOOM_FLIGHT_DIR=$G "$LOOM_BUILD_DIR/bench/loom-bench" allreduce -b 8 -e 8 -n 5 -w 1 >/dev/null &&
	test -f "$G/step0-rank0.flight" &&
	"$DOC" "$G" >"$TEST_TMP/d.out" &&
	cat "$TEST_TMP/d.out" &&
	test "$(cat "$TEST_TMP/d.out")" = "verdict: no hang: on every communicator the ranks recorded are at the same operation"
'

# bad NAME PYTHON-EXPRESSION-ON-b: a copy of the good record, changed
bad() {
	python3 - "$G/step0-rank0.flight" "$TEST_TMP/bad/$1.flight" "$2" <<-\PY
	import struct, sys
	b = bytearray(open(sys.argv[1], "rb").read())
	exec(sys.argv[3])
	open(sys.argv[2], "wb").write(b)
	PY
}

test_expect_success 'corrupt and truncated records: one message naming each file, no crash' '
	mkdir "$TEST_TMP/bad" &&
	bad short "b = b[:100]" &&
	bad cut "b = b[:1000]" &&
	bad magic "b[0:8] = b\"NOTLOOM\\0\"" &&
	bad version "struct.pack_into(\"<I\", b, 8, 9)" &&
	bad nops "struct.pack_into(\"<I\", b, 28, 3)" &&
	bad fsize "struct.pack_into(\"<Q\", b, 32, 12345)" &&
	bad rank "struct.pack_into(\"<ii\", b, 40, 7, 4)" &&
	bad slot "struct.pack_into(\"<i\", b, 256 + 8, 99)" &&
	bad garbage "b = bytearray((i * 7919) % 251 for i in range(len(b)))" &&
	: >"$TEST_TMP/bad/empty.flight" &&
	ln -s "$G/step0-rank0.flight" "$TEST_TMP/bad/link.flight" &&
	mkdir "$TEST_TMP/bad/dir.flight" &&
	"$DOC" "$TEST_TMP/bad" >"$TEST_TMP/d.out" 2>&1 && rc=0 || rc=$? &&
	cat "$TEST_TMP/d.out" &&
	test $rc -eq 2 &&
	B=$TEST_TMP/bad &&
	grep -qx "loom-doctor: $B/short.flight: truncated flight record: 100 bytes, less than its 256-byte header; skipped" "$TEST_TMP/d.out" &&
	grep -qx "loom-doctor: $B/cut.flight: truncated flight record: 1000 bytes of 532736; skipped" "$TEST_TMP/d.out" &&
	grep -qx "loom-doctor: $B/magic.flight: not a loom flight record (bad magic); skipped" "$TEST_TMP/d.out" &&
	grep -qx "loom-doctor: $B/version.flight: flight record version 9; this loom reads version 1; skipped" "$TEST_TMP/d.out" &&
	grep -q "^loom-doctor: $B/nops.flight: corrupt flight record: 32 slots of 3 ops" "$TEST_TMP/d.out" &&
	grep -qx "loom-doctor: $B/fsize.flight: corrupt flight record: header says 12345 bytes, its sizes make 532736; skipped" "$TEST_TMP/d.out" &&
	grep -qx "loom-doctor: $B/rank.flight: corrupt flight record: rank 7 of 4; skipped" "$TEST_TMP/d.out" &&
	grep -q "^loom-doctor: $B/slot.flight: corrupt flight record: communicator slot 0 (rank 99 of 1" "$TEST_TMP/d.out" &&
	grep -qx "loom-doctor: $B/garbage.flight: not a loom flight record (bad magic); skipped" "$TEST_TMP/d.out" &&
	grep -qx "loom-doctor: $B/empty.flight: truncated flight record: 0 bytes, less than its 256-byte header; skipped" "$TEST_TMP/d.out" &&
	grep -q "^loom-doctor: $B/link.flight: .*; skipped" "$TEST_TMP/d.out" &&
	grep -qx "loom-doctor: $B/dir.flight: not a regular file; skipped" "$TEST_TMP/d.out" &&
	test $(grep -c "; skipped\$" "$TEST_TMP/d.out") -eq 12 &&
	grep -qx "loom-doctor: no usable flight record" "$TEST_TMP/d.out"
'

test_expect_success 'a good record beside the bad ones is still read (exit 0)' '
	cp "$G/step0-rank0.flight" "$TEST_TMP/bad/" &&
	"$DOC" "$TEST_TMP/bad" >"$TEST_TMP/d.out" 2>"$TEST_TMP/err" &&
	test $(grep -c "; skipped\$" "$TEST_TMP/err") -eq 12 &&
	grep -q "^verdict: no hang" "$TEST_TMP/d.out" &&
	"$DOC" --json "$TEST_TMP/bad" >"$TEST_TMP/json" &&
	python3 -c "import json,sys; j = json.load(open(sys.argv[1])); assert len(j[\"errors\"]) == 12 and j[\"report\"][\"records\"] == 1, j" "$TEST_TMP/json"
'

test_expect_success 'a directory that cannot be listed: one message, exit 2' '
	"$DOC" "$TEST_TMP/nosuch" >"$TEST_TMP/d.out" 2>&1 && rc=0 || rc=$? &&
	test $rc -eq 2 &&
	grep -qx "loom-doctor: $TEST_TMP/nosuch: No such file or directory; skipped" "$TEST_TMP/d.out"
'

if command -v valgrind >/dev/null; then
test_expect_success 'the parser under valgrind on the bad and good files: no invalid access, no leak' '
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		"$DOC" "$TEST_TMP/bad" >/dev/null 2>"$TEST_TMP/vg" && rc=0 || rc=$? &&
	cat "$TEST_TMP/vg" &&
	test $rc -eq 0 &&
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		"$DOC" --json "$TEST_TMP/bad" >/dev/null 2>&1
'
else
	test_skip 'the parser under valgrind' 'valgrind not installed'
fi
test_done
