#!/bin/sh
# Bad values and locked options are rejected with one clear loom: line.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test -f "$LOOM_BUILD_DIR/spank/.libs/loom.so" || skip_all "plugin not built"
test_need_plugin
test_need_cluster
cluster_plugstack "env=torch"

test_expect_success 'srun --help lists every loom option' '
	srun --help >"$TEST_TMP/help" 2>&1;
	for o in loom-env loom-affinity loom-gpus-per-task loom-ckpt loom-ckpt-signal loom-ckpt-cache; do
		grep -q -- "--$o" "$TEST_TMP/help" || { echo "missing --$o"; exit 1; }
	done
'
test_expect_success 'bad --loom-affinity: message names it and the allowed values' '
	test_must_fail_with "loom: --loom-affinity=.nearest.: .nearest. is not one of closest, none" \
		srun -N1 -n1 --loom-affinity=nearest true
'
test_expect_success 'bad --loom-gpus-per-task' '
	test_must_fail_with "loom: --loom-gpus-per-task=.0. is not a whole number from 1 to 64" \
		srun -N1 -n1 --loom-gpus-per-task=0 true
'
test_expect_success 'bad --loom-ckpt-signal' '
	test_must_fail_with "loom: --loom-ckpt-signal=.KILL@10. is not SIG\[@SECONDS\|@auto\]" \
		srun -N1 -n1 --loom-ckpt-signal=KILL@10 true
'
test_expect_success 'relative --loom-ckpt' '
	test_must_fail_with "loom: --loom-ckpt=.ckpt. is not an absolute path" srun -N1 -n1 --loom-ckpt=ckpt true
'
test_expect_success 'a bad value through SLURM_SPANK_LOOM_AFFINITY is rejected too' '
	SLURM_SPANK_LOOM_AFFINITY=sideways test_must_fail_with "loom: SLURM_SPANK_LOOM_AFFINITY=.sideways.: .sideways. is not one of closest" srun -N1 -n1 true
'
test_expect_success 'a locked option is rejected, naming the lock' '
	cluster_plugstack "env=torch lock=env,affinity" &&
	test_must_fail_with "loom: --loom-env is locked by the site \(plugstack.conf lock=env\)" \
		srun -N1 -n1 --loom-env=mpi true
'
test_expect_success 'a locked option set through SLURM_SPANK_LOOM_ENV is rejected too' '
	SLURM_SPANK_LOOM_ENV=mpi test_must_fail_with "loom: SLURM_SPANK_LOOM_ENV: --loom-env is locked by the site" srun -N1 -n1 true
'
test_expect_success 'the locked default still applies without the option' '
	srun -N1 -n1 printenv LOOM_ENV_MODE | grep -qx torch
'
test_expect_success 'the site'"'"'s ckpt_cache= is the default, and lock=ckpt_cache keeps users off it' '
	cluster_plugstack "env=torch ckpt_cache=/tmp/site-%n-%j lock=ckpt_cache" &&
	srun -N1 -n1 --loom-ckpt="$TEST_TMP/ck" sh -c "echo \$SLURM_JOB_ID \$LOOM_CKPT_CACHE" >"$TEST_TMP/site" &&
	cat "$TEST_TMP/site" && read job cache <"$TEST_TMP/site" && test "$cache" = "/tmp/site-%n-$job" &&
	test_must_fail_with "loom: --loom-ckpt-cache is locked by the site \(plugstack.conf lock=ckpt_cache\): remove it" \
		srun -N1 -n1 --loom-ckpt="$TEST_TMP/ck" --loom-ckpt-cache=/tmp/mine true
'
test_expect_success 'a bad plugstack value fails every step, naming the argument' '
	cluster_plugstack "master_port_base=80" &&
	test_must_fail_with "loom: plugstack argument master_port_base=.80. is not a port number from 1024 to 65535" \
		srun -N1 -n1 true
'
test_expect_success 'an unknown lock name in plugstack.conf' '
	cluster_plugstack "lock=colour" &&
	test_must_fail_with "loom: plugstack argument lock=.colour.: .colour. is not one of env" srun -N1 -n1 true
'
test_done
