#!/bin/sh
# --loom-affinity on the live cluster: verbose report against a topology
# fixture (no GPUs here), and real CPU binding on this host.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test -f "$LOOM_BUILD_DIR/spank/.libs/loom.so" || skip_all "plugin not built"
grep -q "define HAVE_HWLOC 1" "$LOOM_BUILD_DIR/config.h" || skip_all "built without hwloc"
test_need_plugin
test_need_cluster
fx=$LOOM_SRC_DIR/t/fixtures

test_expect_success 'verbose on the DGX fixture: one line per task, GPUs, CPUs, NUMA, NIC' '
	cluster_plugstack "topology_root=$fx/dgx-h100.xml nvml_library=none" &&
	srun -N2 -n4 -m block --loom-affinity=verbose sh -c "echo T \$SLURM_PROCID \$CUDA_VISIBLE_DEVICES \$NCCL_IB_HCA" >"$TEST_TMP/o4" 2>"$TEST_TMP/err";
	cat "$TEST_TMP/o4" "$TEST_TMP/err" &&
	test $(grep -c "^loom: affinity host=n[12] rank=[0-3] " "$TEST_TMP/err") -eq 4 &&
	grep -q "host=n1 rank=0 local_rank=0 gpus=0,1,2,3 cuda_visible_devices=0,1,2,3 cpus=0-55,112-167 (not bound) numa=0 nic=mlx5_0,mlx5_1,mlx5_2,mlx5_3" "$TEST_TMP/err" &&
	grep -q "host=n2 rank=3 local_rank=1 gpus=4,5,6,7 .*numa=1 nic=mlx5_4" "$TEST_TMP/err" &&
	grep -qx "T 1 4,5,6,7 =mlx5_4,mlx5_5,mlx5_6,mlx5_7" "$TEST_TMP/o4"
'
test_expect_success 'gres granted GPUs 2 and 5: only those, renumbered' '
	SLURM_STEP_GPUS=2,5 CUDA_VISIBLE_DEVICES=0,1 srun -N1 -n2 --loom-affinity=verbose,closest sh -c "echo T \$SLURM_PROCID \$CUDA_VISIBLE_DEVICES" >"$TEST_TMP/g" 2>"$TEST_TMP/ge";
	cat "$TEST_TMP/g" "$TEST_TMP/ge" &&
	grep -q "rank=0 local_rank=0 gpus=2 cuda_visible_devices=0 .*numa=0 nic=mlx5_2" "$TEST_TMP/ge" &&
	grep -q "rank=1 local_rank=1 gpus=5 cuda_visible_devices=1 .*numa=1 nic=mlx5_5" "$TEST_TMP/ge"
'
test_expect_success 'a map entry naming a missing GPU fails the step with a loom: line' '
	cluster_plugstack "topology_root=$fx/gpu4-1numa.xml nvml_library=none" &&
	srun -N1 -n1 --loom-affinity=map:6 true >"$TEST_TMP/m" 2>&1 && rc=0 || rc=$?; cat "$TEST_TMP/m";
	test $rc -ne 0 &&
	grep -q "loom: --loom-affinity=map:...: entry 1 names GPU 6, but the step has 4 GPUs on this node (0-3)" "$TEST_TMP/m"
'
test_expect_success 'closest on this host: the two tasks of a node get disjoint CPUs' '
	cluster_plugstack "affinity=closest" &&
	srun -N1 -n2 sh -c "grep Cpus_allowed_list /proc/self/status" >"$TEST_TMP/b" 2>&1; cat "$TEST_TMP/b" &&
	test $(wc -l <"$TEST_TMP/b") -eq 2 && test $(sort -u "$TEST_TMP/b" | wc -l) -eq 2 &&
	! grep -q "0-1" "$TEST_TMP/b"
'
test_expect_success 'without verbose, each binding is still logged for the admin (slurmd log)' '
	grep "loom: affinity host=n1 rank=[01] local_rank=[01] " "$LOOM_CLUSTER_DIR/log/slurmd-n1.log" >"$TEST_TMP/lg" ; cat "$TEST_TMP/lg";
	test $(wc -l <"$TEST_TMP/lg") -ge 2 &&
	! grep -q "loom: affinity" "$TEST_TMP/b"
'
test_expect_success 'affinity=none (the default) leaves the binding alone' '
	cluster_plugstack "" &&
	srun -N1 -n2 sh -c "grep Cpus_allowed_list /proc/self/status" >"$TEST_TMP/nb" 2>&1; cat "$TEST_TMP/nb" &&
	test $(sort -u "$TEST_TMP/nb" | wc -l) -eq 1
'
test_done
