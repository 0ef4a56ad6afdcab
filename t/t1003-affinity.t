#!/bin/sh
# --loom-affinity on the live cluster: verbose report against a topology
# fixture (no GPUs here), and real CPU binding on this host.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test -f "$LOOM_BUILD_DIR/spank/.libs/loom.so" || skip_all "plugin not built"
grep -q "define HAVE_HWLOC 1" "$LOOM_BUILD_DIR/config.h" || skip_all "built without hwloc"
test_need_plugin
# the fake NVML numbers the DGX fixture's GPUs (read in slurmstepd,
# which has slurmd's environment)
nvml=$LOOM_BUILD_DIR/spank/test/.libs/libfakenvml.so
LOOM_FAKE_NVML_BUSES=0:dd,0:cf,0:c1,0:9b,0:5f,0:51,0:41,0:19
export LOOM_FAKE_NVML_BUSES
test_need_cluster
fx=$LOOM_SRC_DIR/t/fixtures

# cpu_list_expand LIST: the CPUs of a list such as 0-2,5 (Linux's
# Cpus_allowed_list format), one a line; fails on anything else
cpu_list_expand() {
	printf '%s\n' "$1" | tr ',' '\n' | awk -F- '
		NF == 1 && $1 ~ /^[0-9]+$/ { print $1; next }
		NF == 2 && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && $1 + 0 <= $2 + 0 {
			for (c = $1 + 0; c <= $2 + 0; c++) print c; next }
		{ print "not a CPU list item: " $0 >"/dev/stderr"; bad = 1; exit }
		END { exit bad }'
}

test_expect_success 'verbose on the DGX fixture: one line per task, GPUs, CPUs, NUMA, NIC' '
	cluster_plugstack "topology_root=$fx/dgx-h100.xml nvml_library=none" &&
	srun -N2 -n4 -m block --loom-affinity=verbose sh -c "echo T \$SLURM_PROCID \$CUDA_VISIBLE_DEVICES \$NCCL_IB_HCA" >"$TEST_TMP/o4" 2>"$TEST_TMP/err";
	cat "$TEST_TMP/o4" "$TEST_TMP/err" &&
	test $(grep -c "^loom: affinity host=n[12] rank=[0-3] " "$TEST_TMP/err") -eq 4 &&
	grep -q "host=n1 rank=0 local_rank=0 gpus=0,1,2,3 cuda_visible_devices=0,1,2,3 device=0 cpus=0-55,112-167 (not bound) numa=0 nic=mlx5_0,mlx5_1,mlx5_2,mlx5_3" "$TEST_TMP/err" &&
	grep -q "host=n2 rank=3 local_rank=1 gpus=4,5,6,7 .*numa=1 nic=mlx5_4" "$TEST_TMP/err" &&
	grep -qx "T 1 4,5,6,7 =mlx5_4,mlx5_5,mlx5_6,mlx5_7" "$TEST_TMP/o4"
'
test_expect_success 'gres granted GPUs 2 and 5: only those, renumbered' '
	SLURM_STEP_GPUS=2,5 CUDA_VISIBLE_DEVICES=0,1 srun -N1 -n2 --loom-affinity=verbose,closest sh -c "echo T \$SLURM_PROCID \$CUDA_VISIBLE_DEVICES" >"$TEST_TMP/g" 2>"$TEST_TMP/ge";
	cat "$TEST_TMP/g" "$TEST_TMP/ge" &&
	grep -q "rank=0 local_rank=0 gpus=2 cuda_visible_devices=0,1 device=0 .*numa=0 nic=mlx5_2" "$TEST_TMP/ge" &&
	grep -q "rank=1 local_rank=1 gpus=5 cuda_visible_devices=0,1 device=1 .*numa=1 nic=mlx5_5" "$TEST_TMP/ge" &&
	grep -qx "T 0 0,1" "$TEST_TMP/g" && grep -qx "T 1 0,1" "$TEST_TMP/g"
'
# what torch.cuda.set_device(int(os.environ["LOCAL_RANK"])) picks, computed
# from the environment as CUDA would (no torch, no GPU): entry LOCAL_RANK
# of CUDA_VISIBLE_DEVICES must be the GPU the binding report names
pick='import os; v = os.environ["CUDA_VISIBLE_DEVICES"].split(","); lr = int(os.environ["LOCAL_RANK"]); print("P", os.environ["RANK"], lr, v[lr], os.environ["LOOM_LOCAL_DEVICE"], len(v))'
if ! command -v python3 >/dev/null 2>&1; then
	test_skip 'set_device(LOCAL_RANK) on the DGX fixture' 'python3 not installed'
elif [ ! -f "$nvml" ]; then
	test_skip 'set_device(LOCAL_RANK) on the DGX fixture' 'no fake NVML: built with the plugin tests'
else
test_expect_success 'one GPU per task: set_device(LOCAL_RANK) names the task.s closest GPU (DGX fixture, NVML order)' '
	cluster_plugstack "topology_root=$fx/dgx-h100.xml nvml_library=$nvml" &&
	srun -O -N1 -n8 --loom-affinity=verbose,closest python3 -c "$pick" >"$TEST_TMP/p" 2>"$TEST_TMP/pe";
	cat "$TEST_TMP/p" "$TEST_TMP/pe" &&
	test $(grep -c "^P " "$TEST_TMP/p") -eq 8 &&
	test $(grep -c "cuda_visible_devices=4,5,6,7,0,1,2,3 device=" "$TEST_TMP/pe") -eq 8 &&
	grep -q "rank=0 local_rank=0 gpus=4 cuda_visible_devices=4,5,6,7,0,1,2,3 device=0 .*nic=mlx5_3" "$TEST_TMP/pe" &&
	for r in 0 1 2 3 4 5 6 7; do
		gpu=$(sed -n "s/.* rank=$r local_rank=$r gpus=\([0-9]*\) .*/\1/p" "$TEST_TMP/pe") &&
		test -n "$gpu" && grep -qx "P $r $r $gpu $r 8" "$TEST_TMP/p" ||
		{ echo "rank $r: set_device(LOCAL_RANK) would not name GPU [$gpu]"; false; } || return 1
	done
'
test_expect_success 'two GPUs per task: each task sees its own only, LOOM_LOCAL_DEVICE 0' '
	srun -O -N1 -n4 --loom-affinity=verbose,closest --loom-gpus-per-task=2 python3 -c "import os; v = os.environ[\"CUDA_VISIBLE_DEVICES\"]; print(\"Q\", os.environ[\"RANK\"], v, os.environ[\"LOOM_LOCAL_DEVICE\"])" >"$TEST_TMP/p2" 2>"$TEST_TMP/pe2";
	cat "$TEST_TMP/p2" "$TEST_TMP/pe2" &&
	test $(grep -c "local_rank=[0-3] gpus=[0-7],[0-7] cuda_visible_devices=[0-7],[0-7] device=0 " "$TEST_TMP/pe2") -eq 4 &&
	grep -qx "Q 0 4,5 0" "$TEST_TMP/p2" && grep -qx "Q 3 2,3 0" "$TEST_TMP/p2"
'
fi
test_expect_success 'a map entry naming a missing GPU fails the step with a loom: line' '
	cluster_plugstack "topology_root=$fx/gpu4-1numa.xml nvml_library=none" &&
	srun -N1 -n1 --loom-affinity=map:6 true >"$TEST_TMP/m" 2>&1 && rc=0 || rc=$?; cat "$TEST_TMP/m";
	test $rc -ne 0 &&
	grep -q "loom: --loom-affinity=map:...: entry 1 names GPU 6, but the step has 4 GPUs on this node (0-3)" "$TEST_TMP/m"
'
test_expect_success 'closest on this host: the two tasks of a node get disjoint CPUs' '
	cluster_plugstack "affinity=closest" &&
	srun -N1 -n2 sh -c "grep Cpus_allowed_list /proc/self/status" >"$TEST_TMP/b" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/b"
	test $rc -eq 0 &&
	test $(wc -l <"$TEST_TMP/b") -eq 2 &&
	l1=$(sed -n "1s/^Cpus_allowed_list:[[:space:]]*//p" "$TEST_TMP/b") &&
	l2=$(sed -n "2s/^Cpus_allowed_list:[[:space:]]*//p" "$TEST_TMP/b") &&
	cpu_list_expand "$l1" >"$TEST_TMP/c1.all" && sort -u "$TEST_TMP/c1.all" >"$TEST_TMP/c1" &&
	cpu_list_expand "$l2" >"$TEST_TMP/c2.all" && sort -u "$TEST_TMP/c2.all" >"$TEST_TMP/c2" &&
	{ test -s "$TEST_TMP/c1" && test -s "$TEST_TMP/c2" || { echo "an empty CPU list: [$l1] [$l2]"; false; }; } &&
	both=$(sort "$TEST_TMP/c1" "$TEST_TMP/c2" | uniq -d | tr "\n" " ") &&
	{ test -z "$both" || { echo "CPUs in both tasks lists [$l1] [$l2]: $both"; false; }; }
'
test_expect_success 'without verbose, each binding is still logged for the admin (slurmd log)' '
	cluster_plugstack "affinity=closest" &&
	srun -N1 -n2 -w n1 sh -c "echo step=\$SLURM_JOB_ID.\$SLURM_STEP_ID" >"$TEST_TMP/a" 2>"$TEST_TMP/ae" && rc=0 || rc=$?
	cat "$TEST_TMP/a" "$TEST_TMP/ae"
	test $rc -eq 0 &&
	id=$(sed -n "s/^step=\([0-9]*\.[0-9]*\)\$/\1/p" "$TEST_TMP/a" | sort -u) &&
	test -n "$id" && test $(printf "%s\n" "$id" | wc -l) -eq 1 &&
	log=$LOOM_CLUSTER_DIR/log/slurmd-n1.log &&
	{ grep -F "[$id] loom: affinity host=n1 " "$log" || true; } >"$TEST_TMP/lg" &&
	cat "$TEST_TMP/lg" &&
	test $(wc -l <"$TEST_TMP/lg") -eq 2 &&
	test $(grep -c " rank=0 local_rank=0 " "$TEST_TMP/lg") -eq 1 &&
	test $(grep -c " rank=1 local_rank=1 " "$TEST_TMP/lg") -eq 1 &&
	! grep -q "loom: affinity" "$TEST_TMP/ae"
'
test_expect_success 'affinity=none (the default) leaves the binding alone' '
	cluster_plugstack "" &&
	srun -N1 -n2 sh -c "grep Cpus_allowed_list /proc/self/status" >"$TEST_TMP/nb" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/nb"
	test $rc -eq 0 && test $(wc -l <"$TEST_TMP/nb") -eq 2 &&
	test $(sort -u "$TEST_TMP/nb" | wc -l) -eq 1
'
test_done
