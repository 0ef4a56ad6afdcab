#!/bin/sh
# PyTorch on loom's collectives, benchmarked at tiny sizes (figures are
# printed, never asserted): bench/compare --quick --torch-loom on its own
# test cluster gains the "torch (loom)" columns (gloo-bench.py --backend
# loom) beside loom-bench and gloo, every row well formed; bench/ddp-step.py
# on "loom" and on gloo, 2 ranks on 1 node and 4 ranks on 2 nodes, prints
# one well-formed row each. Needs the process group "loom" (python3-torch,
# libtorch-dev, pybind11-dev): skipped without it.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_torch_extension
test_need_plugin
test_need_cluster_host
C=$LOOM_SRC_DIR/bench/compare
DS=$LOOM_SRC_DIR/bench/ddp-step.py
num='[0-9][0-9.]*'

# bench/compare starts its own cluster: before this script's own
test_expect_success 'bench/compare --quick --torch-loom: "torch (loom)" columns, rows well formed' '
	b=$LOOM_BUILD_DIR &&
	timeout 900 env -u LOOM_BUILD_DIR -u LOOM_SRC_DIR "$C" --quick --torch-loom -o allreduce -s 1x2,2x4 \
		--no-growth -B "$b" -O "$TEST_TMP/c" >"$TEST_TMP/rep" 2>"$TEST_TMP/rep.err" && rc=0 || rc=$?
	cat "$TEST_TMP/rep.err" "$TEST_TMP/rep"
	test $rc = 0 &&
	grep -q "^| torch (loom) | the process group \"loom\" through torch.distributed" "$TEST_TMP/rep" &&
	for shape in "2 ranks, 1 node" "4 ranks, 2 nodes x 2 tasks"; do
		sed -n "/^### allreduce, $shape (best of 1)/,/^###/p" "$TEST_TMP/rep" >"$TEST_TMP/t" &&
		grep -q "^| size | loom us | Open MPI us | gloo us | torch (loom) us | loom GB/s | Open MPI GB/s | gloo GB/s | torch (loom) GB/s | memcpy GB/s | memcpy_all GB/s | vs Open MPI | vs gloo | vs torch (loom) | loom/memcpy | loom/all |\$" "$TEST_TMP/t" &&
		test $(grep -Ec "^\| [0-9]+ (B|KiB|MiB) \| $num \| ($num|—) \| $num \| $num \| $num \| ($num|—) \| $num \| $num \| $num \| $num \| (${num}x|—) \| ${num}x \| ${num}x \| $num% \| $num% \|\$" "$TEST_TMP/t") = $(grep -c "^| [0-9]" "$TEST_TMP/t") &&
		grep -q "^| [0-9]" "$TEST_TMP/t" ||
		return 1
	done
'

test_need_cluster
# ddp NAME NODES TASKS BACKEND: a tiny DDP step, one row from rank 0
ddp() {
	timeout 300 srun -N"$2" -n"$3" --ntasks-per-node=$(($3 / $2)) --loom-env=torch "$LOOM_PYTHON" "$DS" \
		--backend "$4" --width 64 --hidden 128 --steps 3 --warmup 1 >"$TEST_TMP/$1" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/$1" && test $rc = 0 &&
	grep -q "^# ddp-step torch .*: backend $4, $3 ranks, MLP 64-128-128-64, 33088 parameters, batch 32, 3 steps after 1 warm-up" "$TEST_TMP/$1" &&
	test $(grep -Ec "^$4 $3 33088 32 $num $num $num\$" "$TEST_TMP/$1") = 1
}
for be in loom gloo; do
	test_expect_success "bench/ddp-step.py on $be, 2 ranks on 1 node: one well-formed row" "ddp d1-$be 1 2 $be"
	test_expect_success "bench/ddp-step.py on $be, 4 ranks on 2 nodes: one well-formed row" "ddp d2-$be 2 4 $be"
done
test_done
