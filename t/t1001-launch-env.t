#!/bin/sh
# torch launch environment on every task of srun -N2 -n4 and -N2 -n3.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test -f "$LOOM_BUILD_DIR/spank/.libs/loom.so" || skip_all "plugin not built"
test_need_plugin
test_need_cluster
cluster_plugstack "env=torch master_port_base=31000 master_port_range=500 nccl_env=NCCL_DEBUG=WARN,NCCL_SOCKET_IFNAME=lo"

dump='printf "%s " "$SLURM_PROCID" "$SLURMD_NODENAME" "$RANK" "$LOCAL_RANK" "$WORLD_SIZE" "$LOCAL_WORLD_SIZE" "$NODE_RANK" "$GROUP_RANK" "$MASTER_ADDR" "$MASTER_PORT" "$NCCL_DEBUG" "$NCCL_SOCKET_IFNAME" "$SLURM_JOB_ID" "$SLURM_STEP_ID"; echo'

# check_layout FILE NTASKS "tasks on node 0" "tasks on node 1"
check_layout() {
	awk -v n="$2" -v c0="$3" -v c1="$4" '
	{ procid=$1; node=$2; rank=$3; lr=$4; ws=$5; lws=$6; nr=$7; gr=$8; ma=$9; mp=$10
	  nid = (node == "n1") ? 0 : 1
	  want_lws = nid == 0 ? c0 : c1
	  # block distribution: node 0 has ranks 0..c0-1
	  want_lr = nid == 0 ? procid : procid - c0
	  if (rank != procid) { print "RANK " rank " != SLURM_PROCID " procid; bad=1 }
	  if (ws != n) { print "rank " rank ": WORLD_SIZE=" ws; bad=1 }
	  if (lws != want_lws) { print "rank " rank ": LOCAL_WORLD_SIZE=" lws " want " want_lws; bad=1 }
	  if (lr != want_lr) { print "rank " rank ": LOCAL_RANK=" lr " want " want_lr; bad=1 }
	  if (nr != nid || gr != nid) { print "rank " rank ": NODE_RANK/GROUP_RANK=" nr "/" gr; bad=1 }
	  if (ma != "n1") { print "rank " rank ": MASTER_ADDR=" ma; bad=1 }
	  if (mp < 31000 || mp >= 31500) { print "rank " rank ": MASTER_PORT=" mp " outside 31000-31499"; bad=1 }
	  if ($11 != "WARN" || $12 != "lo") { print "rank " rank ": site nccl_env missing"; bad=1 }
	  port[mp]=1; seen[rank]=1; cnt++
	}
	END { np=0; for (p in port) np++
	      if (np != 1) { print "MASTER_PORT differs between tasks"; bad=1 }
	      if (cnt != n) { print cnt " tasks reported, want " n; bad=1 }
	      for (i = 0; i < n; i++) if (!(i in seen)) { print "rank " i " missing"; bad=1 }
	      exit bad }' "$1"
}

test_expect_success 'srun -N2 -n4: every variable right on every task' '
	srun -N2 -n4 -m block sh -c "$dump" >"$TEST_TMP/n4" && cat "$TEST_TMP/n4" &&
	check_layout "$TEST_TMP/n4" 4 2 2
'
test_expect_success 'srun -N2 -n3: LOCAL_WORLD_SIZE is 2 on n1 and 1 on n2' '
	srun -N2 -n3 -m block sh -c "$dump" >"$TEST_TMP/n3" && cat "$TEST_TMP/n3" &&
	check_layout "$TEST_TMP/n3" 3 2 1
'
test_expect_success 'two steps of one job get different MASTER_PORTs' '
	salloc -N2 -n2 sh -c "srun -N2 -n2 printenv MASTER_PORT | sort -u; srun -N2 -n2 printenv MASTER_PORT | sort -u" >"$TEST_TMP/ports" 2>"$TEST_TMP/salloc.err" &&
	cat "$TEST_TMP/ports" &&
	test $(wc -l <"$TEST_TMP/ports") -eq 2 &&
	test $(sort -u "$TEST_TMP/ports" | wc -l) -eq 2
'
test_expect_success 'a user-set RANK is kept, with a loom: warning' '
	RANK=42 srun -N1 -n1 sh -c "echo RANK=\$RANK" >"$TEST_TMP/keep" 2>&1; cat "$TEST_TMP/keep" &&
	grep -qx "RANK=42" "$TEST_TMP/keep" &&
	grep -q "loom: warning: keeping RANK=42 from the environment" "$TEST_TMP/keep"
'
test_expect_success 'with lock=env the site wins: RANK is rewritten' '
	cluster_plugstack "env=torch lock=env" &&
	RANK=42 srun -N1 -n1 printenv RANK >"$TEST_TMP/lock" 2>&1; cat "$TEST_TMP/lock" &&
	grep -qx 0 "$TEST_TMP/lock"
'
test_expect_success '--loom-env=mpi writes no torch variables' '
	cluster_plugstack "env=torch" &&
	srun -N2 -n2 --loom-env=mpi sh -c "echo \${RANK:-unset} \${MASTER_ADDR:-unset} \$PMIX_MCA_gds \$LOOM_ENV_MODE" >"$TEST_TMP/mpi" &&
	cat "$TEST_TMP/mpi" && test $(grep -cx "unset unset hash mpi" "$TEST_TMP/mpi") -eq 2
'
test_expect_success 'SLURM_SPANK_LOOM_ENV=none works like --loom-env=none' '
	SLURM_SPANK_LOOM_ENV=none srun -N1 -n1 sh -c "echo \${RANK:-unset} \$LOOM_ENV_MODE" >"$TEST_TMP/envvar" &&
	cat "$TEST_TMP/envvar" && grep -qx "unset none" "$TEST_TMP/envvar"
'
test_expect_success '--loom-ckpt and --loom-ckpt-signal reach the tasks; the directory is made' '
	d="$TEST_TMP/ck/a/b" &&
	srun -N2 -n2 --loom-ckpt="$d" --loom-ckpt-signal=USR2@90 sh -c "echo \$LOOM_CKPT_DIR \$LOOM_CKPT_SIGNAL \$LOOM_CKPT_SIGNAL_SECONDS" >"$TEST_TMP/ck.out" &&
	cat "$TEST_TMP/ck.out" && test $(grep -cx "$d USR2 90" "$TEST_TMP/ck.out") -eq 2 && test -d "$d"
'
# LOOM_CKPT_CACHE: %j is the job id (Slurm's, read by the task), %n stays
# for libloom to make each node's name; the plugin makes no cache directory
unset LOOM_CKPT_CACHE
test_expect_success '--loom-ckpt-cache reaches every task with %j expanded and %n kept; nothing is made' '
	srun -N2 -n2 --loom-ckpt="$TEST_TMP/ck2" --loom-ckpt-cache="$TEST_TMP/x-%n-%j" \
		sh -c "echo \$SLURMD_NODENAME \$SLURM_JOB_ID \$LOOM_CKPT_CACHE" >"$TEST_TMP/cache.out" &&
	cat "$TEST_TMP/cache.out" &&
	test $(wc -l <"$TEST_TMP/cache.out") -eq 2 &&
	grep -q "^n1 " "$TEST_TMP/cache.out" && grep -q "^n2 " "$TEST_TMP/cache.out" &&
	while read node job cache; do
		test -n "$job" && test "$cache" = "$TEST_TMP/x-%n-$job" ||
			{ echo "$node: LOOM_CKPT_CACHE=$cache, want $TEST_TMP/x-%n-$job"; exit 1; }
	done <"$TEST_TMP/cache.out" &&
	! ls -d "$TEST_TMP"/x-* 2>/dev/null
'
test_expect_success '--loom-ckpt-cache without --loom-ckpt: warned, and LOOM_CKPT_CACHE is not set' '
	srun -N2 -n2 --loom-ckpt-cache="$TEST_TMP/x-%n-%j" sh -c "echo \${LOOM_CKPT_CACHE:-unset} \${LOOM_CKPT_DIR:-unset}" \
		>"$TEST_TMP/nocache.out" 2>"$TEST_TMP/nocache.err" &&
	cat "$TEST_TMP/nocache.out" "$TEST_TMP/nocache.err" &&
	test $(grep -cx "unset unset" "$TEST_TMP/nocache.out") -eq 2 &&
	grep -q "^loom: warning: --loom-ckpt-cache does nothing without --loom-ckpt=DIR: .*(add --loom-ckpt=DIR)$" "$TEST_TMP/nocache.err"
'
# "srun: error: loom:": refused by srun itself, before the job is queued
test_expect_success 'a bad --loom-ckpt-cache fails srun, naming the option and what is allowed' '
	test_must_fail_with "srun: error: loom: --loom-ckpt-cache=/tmp/c-%u: .%u. is not understood: only %n \(the node name\), %j \(the job id\) and %% are expanded" \
		srun -N1 -n1 --loom-ckpt="$TEST_TMP/ck3" --loom-ckpt-cache=/tmp/c-%u true &&
	test_must_fail_with "srun: error: loom: --loom-ckpt-cache=.cache. is not an absolute path: give /path/to/dir" \
		srun -N1 -n1 --loom-ckpt="$TEST_TMP/ck3" --loom-ckpt-cache=cache true
'
test_expect_success '#SBATCH --loom-ckpt-cache reaches the batch job'"'"'s steps' '
	cat >"$TEST_TMP/cjob.sh" <<-EOF &&
	#!/bin/sh
	#SBATCH --loom-ckpt=$TEST_TMP/ck4
	#SBATCH --loom-ckpt-cache=$TEST_TMP/b-%n-%j
	#SBATCH -N1 -n1
	srun printenv SLURM_JOB_ID LOOM_CKPT_CACHE
	EOF
	sbatch -W -o "$TEST_TMP/cjob.out" "$TEST_TMP/cjob.sh" && cat "$TEST_TMP/cjob.out" &&
	{ read job; read cache; } <"$TEST_TMP/cjob.out" &&
	test -n "$job" && test "$cache" = "$TEST_TMP/b-%n-$job"
'
test_expect_success '#SBATCH --loom-env=mpi is honoured by the batch job'"'"'s steps' '
	printf "#!/bin/sh\n#SBATCH --loom-env=mpi\n#SBATCH -N1 -n1\nsrun printenv LOOM_ENV_MODE\n" >"$TEST_TMP/job.sh" &&
	sbatch -W -o "$TEST_TMP/job.out" "$TEST_TMP/job.sh" && cat "$TEST_TMP/job.out" &&
	grep -qx mpi "$TEST_TMP/job.out"
'
test_done
