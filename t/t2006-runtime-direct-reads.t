#!/bin/sh
# Large collectives inside a node read the peers' buffers directly
# (process_vm_readv); LOOM_DIRECT_READS=0, or a kernel that refuses the
# reads, keeps the shared-memory rings. Both paths give every collective
# right, allreduce bit-identical on every rank, in one node (fast boxes,
# direct reads) and across nodes (lanes, whose node halves use them).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
test_need_cluster
cluster_plugstack none

RINGS="no direct reads of the peers' memory"

test_expect_success 'srun -N1 -n2: direct reads work here (no fallback line), every collective right' '
	LOOM_DEBUG=info ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- $COLL coll 1048579 &&
	! grep -q "$RINGS" "$TEST_TMP/o"
'
test_expect_success 'srun -N1 -n2, LOOM_DIRECT_READS=0: every rank says it keeps the rings, every collective right' '
	LOOM_DIRECT_READS=0 LOOM_DEBUG=info ranks_pass 2 "all checks passed (2 ranks)" \
		env_srun -N1 -n2 -- $COLL coll 1048579 &&
	all_ranks_passed "$TEST_TMP/o" 2 "comm world: $RINGS"
'
test_expect_success 'srun -N2 -n4, LOOM_DIRECT_READS=0: lanes with ring halves, every collective right' '
	LOOM_DIRECT_READS=0 ranks_pass 4 "all checks passed (4 ranks)" env_srun -N2 -n4 -- $COLL coll 1048579
'
# regression: a node whose ranks cannot read each other (here LOOM_DIRECT_READS=0
# on the second node only) reduce-scattered by ring and left local rank j
# block j+1, where the first node left block j: lane j carried different
# blocks on the two nodes and large allreduces came out wrong
test_expect_success 'srun -N2 -n4, direct reads on one node only: the lanes carry the same blocks, every collective right' '
	LOOM_DEBUG=info ranks_pass 4 "all checks passed (4 ranks)" env_srun -N2 -n4 --ntasks-per-node=2 -- \
		sh -c "[ \$SLURM_NODEID = 1 ] && export LOOM_DIRECT_READS=0; exec \"\$@\"" sh $COLL coll 1048579 &&
	test $(grep -c "comm world/node: $RINGS" "$TEST_TMP/o") = 2
'
test_expect_success 'the reads are refused when only one rank turns them off: all keep the rings' '
	LOOM_DEBUG=info ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- \
		sh -c "[ \$SLURM_PROCID = 1 ] && export LOOM_DIRECT_READS=0; exec \"\$@\"" sh $COLL coll 1048579 &&
	all_ranks_passed "$TEST_TMP/o" 2 "comm world: $RINGS"
'
test_done
