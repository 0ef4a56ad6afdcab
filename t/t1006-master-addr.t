#!/bin/sh
# MASTER_ADDR on a cluster whose node names do not resolve (NodeAddr
# differs from NodeName, no DNS or /etc/hosts entry for n1/n2): loom.so
# gives the NodeAddr Slurm reaches the node at, so torchrun-style
# rendezvous works. A real PyTorch DDP program runs unchanged when
# python3-torch is installed.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_plugin
LOOM_TEST_RESOLVE_NODES=0
export LOOM_TEST_RESOLVE_NODES
test_need_cluster
cluster_plugstack ""
HELLO=$LOOM_BUILD_DIR/examples/loom-hello

test_expect_success 'the set-up: inside a job, node name n1 does not resolve' '
	! timeout 60 srun -N1 -n1 -w n2 getent hosts n1 &&
	addr=$(scontrol show node n1 | sed -n "s/.*NodeAddr=\([^ ]*\).*/\1/p") &&
	test "$addr" = localhost
'

test_expect_success 'every task gets MASTER_ADDR = the NodeAddr of the first node (localhost)' '
	timeout 60 srun -N2 -n4 sh -c "echo \$SLURM_PROCID \$MASTER_ADDR" >"$TEST_TMP/m" 2>"$TEST_TMP/m.err" &&
	cat "$TEST_TMP/m" "$TEST_TMP/m.err" &&
	sort "$TEST_TMP/m" >"$TEST_TMP/ms" &&
	printf "%s localhost\n" 0 1 2 3 >"$TEST_TMP/want" &&
	diff "$TEST_TMP/want" "$TEST_TMP/ms"
'

test_expect_success 'the slurmd log says why MASTER_ADDR is not the node name' '
	grep -q "loom: node name n1 does not resolve here: MASTER_ADDR is its NodeAddr localhost" \
		"$LOOM_CLUSTER_DIR"/log/slurmd-n*.log
'

test_expect_success 'loom-hello -N2 -n4 through the rendezvous (no PMIx) passes' '
	timeout 120 srun -N2 -n4 "$HELLO" >"$TEST_TMP/h" 2>&1 && cat "$TEST_TMP/h" &&
	test $(grep -c "master localhost:[0-9]* | world native via env" "$TEST_TMP/h") = 4 &&
	test "$(tail -n 1 "$TEST_TMP/h")" = "PASS: loom-hello, 4 ranks"
'

if /usr/bin/python3 -c "import torch.distributed" 2>/dev/null; then
	test_expect_success 'a PyTorch DDP program over gloo runs unchanged, -N2 -n4' '
		timeout 300 srun -N2 -n4 --loom-env=torch /usr/bin/python3 \
			"$LOOM_SRC_DIR/t/python/ddp_gloo.py" >"$TEST_TMP/ddp" 2>&1 && cat "$TEST_TMP/ddp" &&
		test $(grep -c "^ddp rank [0-3]/4 master localhost:[0-9]* allreduce 10 (want 10) params " "$TEST_TMP/ddp") = 4 &&
		test $(sed -n "s/.* params //p" "$TEST_TMP/ddp" | sort -u | wc -l) = 1
	'
else
	test_skip 'a PyTorch DDP program over gloo runs unchanged' \
		'python3-torch is not installed (contrib/install-deps installs it)'
fi
test_done
