#!/bin/sh
# examples/torch_ddp_gpu.py (DDP on NCCL, set_device(LOCAL_RANK) under
# --loom-affinity=closest) checked for import and argument handling, on
# this host and without a GPU: --help, bad arguments refused with a
# message, and with no CUDA device a clear message and exit 1, no
# traceback. Needs python3-torch (skipped without it); no cluster.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_torch
EX=$LOOM_SRC_DIR/examples/torch_ddp_gpu.py

test_expect_success '--help: the usage and every option' '
	"$LOOM_PYTHON" "$EX" --help >"$TEST_TMP/help" && cat "$TEST_TMP/help" &&
	grep -q "^usage: torch_ddp_gpu.py" "$TEST_TMP/help" &&
	for o in --steps --batch --hidden --lr --log-every; do
		grep -q -- "$o" "$TEST_TMP/help" || exit 1
	done
'
test_expect_success 'bad arguments: exit 2 with a message naming the argument' '
	for a in "--steps x" "--steps 0" "--batch -3" "--lr nan" "--bogus" "extra"; do
		"$LOOM_PYTHON" "$EX" $a 2>"$TEST_TMP/err" && rc=0 || rc=$?
		cat "$TEST_TMP/err"
		test $rc = 2 && grep -q "^torch_ddp_gpu.py: error: " "$TEST_TMP/err" &&
		! grep -q Traceback "$TEST_TMP/err" || exit 1
	done &&
	"$LOOM_PYTHON" "$EX" --steps x 2>&1 | grep -q "argument --steps: .x. is not a positive integer"
'
test_expect_success 'no GPU: exit 1, one clear line, no traceback' '
	CUDA_VISIBLE_DEVICES= "$LOOM_PYTHON" "$EX" --steps 3 >"$TEST_TMP/gpu.out" 2>"$TEST_TMP/err" && rc=0 || rc=$?
	cat "$TEST_TMP/gpu.out" "$TEST_TMP/err" && test $rc = 1 && test ! -s "$TEST_TMP/gpu.out" &&
	test $(wc -l <"$TEST_TMP/err") = 1 &&
	grep -q "^torch_ddp_gpu.py: CUDA is not available .*needs a GPU for each task" "$TEST_TMP/err" &&
	! grep -q Traceback "$TEST_TMP/err"
'
test_done
