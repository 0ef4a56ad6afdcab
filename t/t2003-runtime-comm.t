#!/bin/sh
# libloom communicators and non-blocking operations on the live cluster:
# split (color/key, LOOM_UNDEFINED), dup, mesh membership (tensor-parallel
# pairs inside a node), and an iallreduce that completes while the caller
# computes; two threads on two communicators at once.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
test_need_cluster
cluster_plugstack none

for tr in auto tcp; do
	test_expect_success "srun -N2 -n4 ($tr): split, dup and mesh membership" "
		LOOM_TRANSPORT=$tr env_srun -N2 -n4 -- \$COLL split >\$TEST_TMP/o 2>&1;
		all_ranks_passed \$TEST_TMP/o 4 'split/mesh checks passed'
	"
done
test_expect_success 'srun -N1 -n2: split and mesh inside one node' '
	env_srun -N1 -n2 -- $COLL split >$TEST_TMP/o 2>&1;
	all_ranks_passed $TEST_TMP/o 2 "split/mesh checks passed"
'
for tr in auto tcp shm; do
	test_expect_success "srun -N2 -n4 ($tr): iallreduce progresses while ranks compute" "
		LOOM_TRANSPORT=$tr env_srun -N2 -n4 -- \$COLL overlap >\$TEST_TMP/o 2>&1;
		all_ranks_passed \$TEST_TMP/o 4 'overlap: result after' &&
		! grep FAIL \$TEST_TMP/o
	"
done
for tr in auto tcp; do
	test_expect_success "srun -N2 -n4 ($tr): two threads, one communicator each, at the same time" "
		LOOM_TRANSPORT=$tr env_srun -N2 -n4 -- \$COLL threads >\$TEST_TMP/o 2>&1;
		all_ranks_passed \$TEST_TMP/o 4 'threads checks passed'
	"
done
test_done
