#!/bin/sh
# The test cluster itself: daemons start, nodes go idle, jobs run on both
# nodes, and stopping it leaves nothing of ours running.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_cluster

test_expect_success 'sinfo shows two idle nodes' '
	sinfo -h -p debug -o "%t %D %N" | tee /dev/stderr | grep -qx "idle 2 n\[1-2\]"
'
test_expect_success 'srun -N2 -n4 runs two tasks on each node' '
	srun -N2 -n4 -l printenv SLURMD_NODENAME | sort >"$TEST_TMP/nodes" &&
	cat "$TEST_TMP/nodes" &&
	test $(grep -c "n1\$" "$TEST_TMP/nodes") -eq 2 &&
	test $(grep -c "n2\$" "$TEST_TMP/nodes") -eq 2
'
test_expect_success 'node names resolve inside tasks' '
	srun -N1 -n1 getent hosts n2 | grep -q "^127.0.0.1"
'
test_expect_success 'srun --mpi=pmix starts tasks with PMIx' '
	srun --mpi=pmix -N2 -n2 printenv PMIX_RANK | sort | tr "\n" " " | grep -qx "0 1 "
'
test_expect_success 'sbatch runs a batch job to completion' '
	id=$(sbatch --parsable -N2 -n2 -o "$TEST_TMP/job.out" --wrap "srun hostname") &&
	for i in $(seq 1 100); do
		st=$(sacct -n -X -j $id -o State 2>/dev/null | tr -d " ")
		st=${st:-$(scontrol show job $id 2>/dev/null | sed -n "s/.*JobState=\([A-Z]*\).*/\1/p")}
		[ "$st" = COMPLETED ] && break
		sleep 0.2
	done &&
	test "$st" = COMPLETED && test $(wc -l <"$TEST_TMP/job.out") -eq 2
'
# regression: slurmstepd renames itself and is reparented to init, so a
# step still running at stop time used to outlive the cluster
test_expect_success 'cluster_stop also ends running steps and their tasks' '
	id=$(sbatch --parsable -N2 -n2 --wrap "srun sleep 300") &&
	for i in $(seq 1 100); do
		test "$(squeue -h -j $id -o %T)" = RUNNING && test $(pgrep -fc "^sleep 300") -ge 2 && break
		sleep 0.2
	done &&
	pids="$CLUSTER_PIDS $(_cluster_ns_pids)" &&
	echo "before stop: $pids" &&
	test $(echo $pids | wc -w) -gt 5 &&
	cluster_stop &&
	for p in $pids; do
		if _cluster_alive $p; then echo "pid $p alive: $(tr "\\0" " " </proc/$p/cmdline)"; exit 1; fi
	done &&
	! pgrep -f "$LOOM_CLUSTER_DIR"
'
# regression: the EXIT trap stops again after a test stopped the cluster,
# with the namespace list of before. The kernel hands freed namespace
# inode numbers to the next namespaces made, here a stranger's: the
# second stop must leave it alone.
test_expect_success 'a second cluster_stop leaves a later namespace alone' '
	test -e "$LOOM_CLUSTER_DIR/stopped" || exit 1
	unshare -m --propagation private sleep 1000 &
	victim=$!
	# the event: the victim runs sleep in a mount namespace not ours
	ours=$(readlink /proc/self/ns/mnt) ns=
	for i in $(seq 1 200); do
		ns=$(readlink /proc/$victim/ns/mnt 2>/dev/null) || ns=
		test -n "$ns" && test "$ns" != "$ours" &&
			test "$(cat /proc/$victim/comm 2>/dev/null)" = sleep && break
		sleep 0.05
	done
	test -n "$ns" && test "$ns" != "$ours" || { echo "unshare made no namespace"; kill $victim; exit 1; }
	echo "victim ns $ns; ours were: $CLUSTER_NS" &&
	cluster_stop &&
	_cluster_alive $victim && kill $victim
'
test_done
