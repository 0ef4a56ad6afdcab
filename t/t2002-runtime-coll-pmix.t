#!/bin/sh
# libloom under t_srun --mpi=pmix: bootstrap from PMIx (rank, size, address
# exchange by Put/Commit/Fence), then the collective matrix.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
grep -q '^#define HAVE_PMIX 1' "$LOOM_BUILD_DIR/config.h" || skip_all "built without PMIx"
test_need_cluster
cluster_plugstack none

test_expect_success 'srun --mpi=pmix -N2 -n4 (auto): every collective right' '
	LOOM_DEBUG=info t_srun --mpi=pmix -N2 -n4 $COLL coll 1048579 >$TEST_TMP/o 2>&1;
	all_ranks_passed $TEST_TMP/o 4 "all checks passed (4 ranks)" &&
	grep -q "bootstrap pmix" $TEST_TMP/o &&
	grep -q "world of 4 ranks on 2 node(s)" $TEST_TMP/o
'
test_expect_success 'srun --mpi=pmix -N1 -n2, LOOM_TRANSPORT=shm' '
	LOOM_TRANSPORT=shm t_srun --mpi=pmix -N1 -n2 $COLL coll 1048579 >$TEST_TMP/o 2>&1;
	all_ranks_passed $TEST_TMP/o 2 "all checks passed (2 ranks)"
'
test_expect_success 'srun --mpi=pmix -N2 -n2, LOOM_TRANSPORT=tcp' '
	LOOM_TRANSPORT=tcp t_srun --mpi=pmix -N2 -n2 $COLL coll 1048579 >$TEST_TMP/o 2>&1;
	all_ranks_passed $TEST_TMP/o 2 "all checks passed (2 ranks)"
'
test_expect_success 'srun --mpi=pmix -N2 -n3 (non-power-of-two)' '
	t_srun --mpi=pmix -N2 -n3 $COLL coll >$TEST_TMP/o 2>&1;
	all_ranks_passed $TEST_TMP/o 3 "all checks passed (3 ranks)"
'
test_expect_success 'srun --mpi=pmix -N2 -n4: split, dup and mesh membership' '
	t_srun --mpi=pmix -N2 -n4 $COLL split >$TEST_TMP/o 2>&1;
	all_ranks_passed $TEST_TMP/o 4 "split/mesh checks passed"
'
test_done
