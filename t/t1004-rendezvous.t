#!/bin/sh
# A torchrun-style program (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT only)
# rendezvous over TCP, unchanged, under srun --loom-env=torch.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test -f "$LOOM_BUILD_DIR/spank/.libs/loom.so" || skip_all "plugin not built"
prog=$LOOM_BUILD_DIR/spank/test/rendezvous
test_need_plugin
test_need_cluster
cluster_plugstack "env=none"

test_expect_success 'without loom the program has nothing to go by' '
	test_must_fail_with "rendezvous: RANK is not set" srun -N1 -n1 "$prog"
'
test_expect_success 'srun -N2 -n4 --loom-env=torch: all four ranks meet' '
	srun -N2 -n4 --loom-env=torch "$prog" >"$TEST_TMP/o4" && cat "$TEST_TMP/o4" &&
	test $(grep -c "of 4: rendezvous ok sum=6\$" "$TEST_TMP/o4") -eq 4
'
test_expect_success 'srun -N2 -n3: three ranks meet' '
	srun -N2 -n3 --loom-env=torch "$prog" >"$TEST_TMP/out3" && cat "$TEST_TMP/out3" &&
	test $(grep -c "of 3: rendezvous ok sum=3\$" "$TEST_TMP/out3") -eq 3
'
test_done
