#!/bin/sh
# libloom under t_srun --mpi=pmix: bootstrap from PMIx (rank, size, address
# exchange by Put/Commit/Fence; the node map from PMIx and each peer's
# address read only when it is first dialled), then the collective matrix.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
grep -q '^#define HAVE_PMIX 1' "$LOOM_BUILD_DIR/config.h" || skip_all "built without PMIx"
test_need_cluster
cluster_plugstack none

test_expect_success 'srun --mpi=pmix -N2 -n4 (auto): every collective right' '
	LOOM_DEBUG=info ranks_pass 4 "all checks passed (4 ranks)" t_srun --mpi=pmix -N2 -n4 $COLL coll 1048579 &&
	grep -q "bootstrap pmix" $TEST_TMP/o &&
	grep -q "world of 4 ranks on 2 node(s)" $TEST_TMP/o &&
	test $(grep -c "bootstrap pmix: .*, the node map [0-9.]* s$" $TEST_TMP/o) = 4 &&
	test $(grep -c "^loom\[[0-3]/4 n1\]: world of 4 ranks" $TEST_TMP/o) = 2 &&
	test $(grep -c "^loom\[[0-3]/4 n2\]: world of 4 ranks" $TEST_TMP/o) = 2
'
test_expect_success 'srun --mpi=pmix -N1 -n2, LOOM_TRANSPORT=shm' '
	LOOM_TRANSPORT=shm ranks_pass 2 "all checks passed (2 ranks)" t_srun --mpi=pmix -N1 -n2 $COLL coll 1048579
'
test_expect_success 'srun --mpi=pmix -N2 -n2, LOOM_TRANSPORT=tcp' '
	LOOM_TRANSPORT=tcp ranks_pass 2 "all checks passed (2 ranks)" t_srun --mpi=pmix -N2 -n2 $COLL coll 1048579
'
test_expect_success 'srun --mpi=pmix -N2 -n3 (non-power-of-two)' '
	ranks_pass 3 "all checks passed (3 ranks)" t_srun --mpi=pmix -N2 -n3 $COLL coll
'
test_expect_success 'srun --mpi=pmix -N2 -n4: split, dup and mesh membership' '
	ranks_pass 4 "split/mesh checks passed" t_srun --mpi=pmix -N2 -n4 $COLL split
'
test_done
