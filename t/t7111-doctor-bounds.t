#!/bin/sh
# loom-doctor, as root, on flight records another user made: bounded in
# memory (sparse files of hundreds of MiB, every slot in use, a ring of
# 65536 operations, communicators of a million ranks: a few MiB read per
# file, resident size under 100 MB), limits on files and bytes that say
# what they left out, names with ESC and other control bytes printed
# without a raw control byte, and an operation kind far out of range
# (the mismatch key once overflowed on it). No cluster: the records are
# written here, by a small Python writer of docs/flight-format.md.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
DOC=$LOOM_BUILD_DIR/runtime/tools/loom-doctor
command -v python3 >/dev/null || skip_all "python3 not installed"
[ "$(id -u)" = 0 ] || skip_all "needs root to act as user nobody"
id nobody >/dev/null 2>&1 || skip_all "no user nobody"
as_nobody() { runuser -u nobody -- "$@"; }

# mk.py OUT NOPS SIZE RANK CTX NAME NODE KIND SPARSE: a record of SIZE
# ranks (this one RANK), every slot in use (slot i: context CTX+i, name
# NAME, NAME-i after the first), 3 collectives posted on each, the last
# of kind KIND; the file SPARSE bytes long (0: its size) with holes
cat >"$TEST_TMP/mk.py" <<-\PY
	import struct, sys, time
	out, nops, size, rank, ctx, name, node, kind, sparse = sys.argv[1:]
	nops, size, rank, ctx, kind, sparse = map(int, (nops, size, rank, ctx, kind, sparse))
	name = name.encode("latin-1").decode("unicode_escape").encode("latin-1")
	node = node.encode("latin-1").decode("unicode_escape").encode("latin-1")
	slot = 256 + nops * 64
	fsize = 256 + 32 * slot
	with open(out, "wb") as f:
	    h = bytearray(256)
	    struct.pack_into("<8sIIIIIIQiiiIddII", h, 0, b"LOOMFLT\0", 1, 256, 256, 64, 32, nops,
	                     fsize, rank, size, 1, 0, time.time() - 100, 0.0, 32, 0)
	    h[80:80 + len(node)] = node
	    h[144:153] = b"elsewhere"
	    h[208:209] = b"7"
	    h[232:233] = b"0"
	    f.write(h)
	    for i in range(32):
	        s = bytearray(256)
	        nm = name if i == 0 else name + b"-%d" % i
	        struct.pack_into("<IIiiiIQ", s, 0, 1, 0, rank, size, 0, 0, ctx + i)
	        s[32:32 + min(len(nm), 63)] = nm[:63]
	        struct.pack_into("<QQ", s, 96, 3, 2)
	        f.seek(256 + i * slot)
	        f.write(s)
	        for seq in (1, 2, 3):
	            f.seek(256 + i * slot + 256 + (seq & (nops - 1)) * 64)
	            f.write(struct.pack("<QIIQiiiidd", seq, kind if seq == 3 else 1, 1 if seq == 3 else 2,
	                                8, 0, 0, 0, 0, 1.0, 0.0))
	    f.truncate(max(sparse, fsize))
	PY
mk() { python3 "$TEST_TMP/mk.py" "$@"; }

S=$TEST_TMP/sparse
test_expect_success 'nobody makes four sparse records of 200 MiB (little on disk)' '
	mkdir "$S" && chown nobody "$S" &&
	for i in 1 2 3 4; do
		as_nobody python3 "$TEST_TMP/mk.py" "$S/step0-rank$i.flight" 65536 1048576 0 $((i * 100)) w n 1 $((200 << 20)) || return 1
	done &&
	test $(stat -c %s "$S/step0-rank1.flight") = $((200 << 20)) &&
	test $(du -k "$S" | cut -f1) -lt 10000
'

test_expect_success 'loom-doctor as root reads them in under 100 MB and says what it left out' '
	/usr/bin/time -v "$DOC" "$S" >"$TEST_TMP/s.out" 2>"$TEST_TMP/s.err" && rc=0 || rc=$?
	cat "$TEST_TMP/s.out" "$TEST_TMP/s.err"
	test $rc -le 1 &&
	rss=$(sed -n "s/.*Maximum resident set size (kbytes): //p" "$TEST_TMP/s.err") &&
	test "$rss" -lt 100000 &&
	grep -qx "skipped 126 communicator slots beyond the limit of 2097152 ranks over all communicators" "$TEST_TMP/s.out" &&
	grep -q "^verdict: " "$TEST_TMP/s.out"
'

test_expect_success 'the limits on files and bytes say what they skipped' '
	{ "$DOC" --max-files 2 "$S" >/dev/null 2>"$TEST_TMP/f.err" || :; } && cat "$TEST_TMP/f.err" &&
	grep -qx "loom-doctor: skipped 2 files beyond the limit of 2 files (--max-files)" "$TEST_TMP/f.err" &&
	{ "$DOC" --max-mb 3 "$S" >/dev/null 2>"$TEST_TMP/b.err" || :; } && cat "$TEST_TMP/b.err" &&
	grep -qx "loom-doctor: skipped 3 files beyond the limit of 3 MiB of records kept (--max-mb)" "$TEST_TMP/b.err" &&
	{ "$DOC" --json --max-files 1 "$S" >"$TEST_TMP/f.json" || :; } &&
	python3 -c "import json,sys; j = json.load(open(sys.argv[1])); assert j[\"errors\"] == [\"3 files beyond the limit of 1 files (--max-files)\"] and j[\"report\"][\"records\"] == 1, j" "$TEST_TMP/f.json" &&
	{ "$DOC" --max-files 0 "$S" 2>/dev/null && rc=0 || rc=$?; } && test $rc = 2 &&
	{ "$DOC" --max-mb -1 "$S" 2>/dev/null && rc=0 || rc=$?; } && test $rc = 2
'

E=$TEST_TMP/esc
test_expect_success 'names with ESC and control bytes: no raw control byte in the output' '
	mkdir "$E" && chown nobody "$E" &&
	as_nobody python3 "$TEST_TMP/mk.py" "$E/step0-rank0.flight" 4 2 0 1 "w\\x1b]0;pwned\\x07\\x1b[2J\\x7f\\xc2\\x9b" "n\\x1b[31mred\\r" 1 0 &&
	as_nobody sh -c "printf garbage >\"$E/\$(printf \"evil\\033[31m\").flight\"" &&
	"$DOC" "$E" >"$TEST_TMP/e.out" 2>&1 && rc=0 || rc=$?
	cat -v "$TEST_TMP/e.out"
	test $rc = 1 &&
	test $(tr -d "\\n" <"$TEST_TMP/e.out" | LC_ALL=C tr -d "[:print:]" | wc -c) = 0 &&
	grep -q "w\\\\x1b\\]0;pwned\\\\x07\\\\x1b\\[2J\\\\x7f\\\\xc2\\\\x9b" "$TEST_TMP/e.out" &&
	grep -q "evil\\\\x1b\\[31m.flight: truncated flight record: 7 bytes" "$TEST_TMP/e.out" &&
	"$DOC" --json "$E" >"$TEST_TMP/e.json" 2>&1 || :
	python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$TEST_TMP/e.json"
'

K=$TEST_TMP/kind
test_expect_success 'an operation kind far out of range: a mismatch with an unknown kind, no overflow' '
	mkdir "$K" &&
	mk "$K/step0-rank0.flight" 4 2 0 1 w n 1 0 && mk "$K/step0-rank1.flight" 4 2 1 1 w n 4294967295 0 &&
	"$DOC" "$K" >"$TEST_TMP/k.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/k.out"; test $rc = 1 &&
	grep -q "^w: mismatch at #3: rank 0 called allreduce, rank 1 called ?$" "$TEST_TMP/k.out"
'

if command -v valgrind >/dev/null; then
test_expect_success 'the reader under valgrind on all of them: no invalid access, no leak' '
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		"$DOC" "$S" "$E" "$K" >/dev/null 2>"$TEST_TMP/vg" && rc=0 || rc=$?
	cat "$TEST_TMP/vg"; test $rc -le 1
'
else
	test_skip 'the reader under valgrind' 'valgrind not installed'
fi
test_done
