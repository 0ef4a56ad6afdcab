#!/bin/sh
# An option that would do nothing gets a "loom: warning" on the user's
# terminal that names it, why, and what to add; the step still runs.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_plugin
test_need_cluster
cluster_plugstack ""

test_expect_success '--loom-gpus-per-task with --loom-affinity=none: warned, the step runs' '
	timeout 60 srun -N1 -n1 --loom-gpus-per-task=1 --loom-affinity=none echo ran >"$TEST_TMP/o" 2>"$TEST_TMP/e" &&
	cat "$TEST_TMP/e" &&
	grep -qx ran "$TEST_TMP/o" &&
	grep -q "^loom: warning: --loom-gpus-per-task=1 does nothing with --loom-affinity=none: .*(add --loom-affinity=closest)$" "$TEST_TMP/e"
'

test_expect_success '--loom-gpus-per-task on nodes without GPUs: each node'"'"'s first task says so' '
	timeout 60 srun -N2 -n4 --loom-gpus-per-task=1 --loom-affinity=closest true 2>"$TEST_TMP/e" &&
	cat "$TEST_TMP/e" &&
	test $(grep -c "^loom: warning: --loom-gpus-per-task=1 does nothing on node n[12]: the step has no GPUs there" "$TEST_TMP/e") = 2 &&
	grep -q "on node n1" "$TEST_TMP/e" && grep -q "on node n2" "$TEST_TMP/e"
'

test_expect_success '--loom-ckpt-signal without --loom-ckpt, also from SLURM_SPANK_LOOM_CKPT_SIGNAL' '
	timeout 60 srun -N1 -n1 --loom-ckpt-signal=USR1@90 true 2>"$TEST_TMP/e1" &&
	SLURM_SPANK_LOOM_CKPT_SIGNAL=USR1 timeout 60 srun -N1 -n1 true 2>"$TEST_TMP/e2" &&
	cat "$TEST_TMP/e1" "$TEST_TMP/e2" &&
	grep -q "^loom: warning: --loom-ckpt-signal does nothing without --loom-ckpt=DIR" "$TEST_TMP/e1" &&
	grep -q "^loom: warning: --loom-ckpt-signal does nothing without --loom-ckpt=DIR" "$TEST_TMP/e2"
'

test_expect_success 'options that do something: no warning' '
	mkdir -p "$TEST_TMP/ck" &&
	timeout 60 srun -N1 -n1 --loom-ckpt="$TEST_TMP/ck" --loom-ckpt-signal=USR1@90 \
		--loom-affinity=closest true 2>"$TEST_TMP/e" &&
	cat "$TEST_TMP/e" &&
	! grep -q "warning" "$TEST_TMP/e"
'
test_done
