#!/bin/sh
# loom.so loads from plugstack.conf, shows its option, reaches every task,
# and a bad plugstack argument fails the step with a clear loom: error.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test -f "$LOOM_BUILD_DIR/spank/.libs/loom.so" || skip_all "plugin not built (--disable-spank or no slurm/spank.h)"
test_need_plugin
test_need_cluster

cluster_plugstack "env=torch"

test_expect_success 'srun --help shows --loom-env' '
	srun --help 2>&1 | grep -E -- "--loom-env=torch\|mpi\|none"
'
test_expect_success 'srun -N2 -n4 runs with loom.so loaded on every task' '
	srun -N2 -n4 -l printenv LOOM_PLUGIN_VERSION | sort >"$TEST_TMP/v" &&
	cat "$TEST_TMP/v" &&
	test $(grep -c ": [0-9][0-9.]*\$" "$TEST_TMP/v") -eq 4
'
test_expect_success '--loom-env=mpi reaches the tasks' '
	srun -N2 -n2 --loom-env=mpi printenv LOOM_ENV_MODE | sort -u | grep -qx mpi
'
test_expect_success 'a bad --loom-env value fails with a loom: error naming it' '
	test_must_fail_with "loom: --loom-env=.bogus. is not one of torch, mpi, none" \
		srun -N1 -n1 --loom-env=bogus true
'
test_expect_success 'a bad plugstack argument fails the step with a loom: error' '
	cluster_plugstack "colour=blue" &&
	test_must_fail_with "loom: unknown plugstack argument .colour." srun -N2 -n2 true
'
test_expect_success 'the step runs again once plugstack.conf is fixed' '
	cluster_plugstack "env=none" &&
	srun -N2 -n2 printenv LOOM_ENV_MODE | sort -u | grep -qx none
'
test_done
