#!/bin/sh
# An allreduce or reduce of 256 KiB or more a rank inside one node, and
# an allgather or alltoall of 4 MiB or more of result, go through the
# shared-memory ring slots chunk by chunk, the results written with
# streaming stores (runtime/coll/coll_staged.c; the plan unit test checks
# that these sizes take it). Element sizes, in place and out of place,
# blocks and chunks that do not divide evenly, 2 and 3 ranks (3: each
# reduced chunk also copied to a second peer), just above the thresholds
# and far above, allreduce bit-identical everywhere; and it does not need
# the peers' memory readable (LOOM_DIRECT_READS=0).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
test_need_cluster
cluster_plugstack none

BYTES=$((32 * 1024 * 1024))

test_expect_success 'srun -N1 -n2: 32 MiB allreduce and reduce, 64 MiB allgather and alltoall, right and bit-identical' '
	ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- $COLL large $BYTES
'
test_expect_success 'srun -N1 -n2: 2 MiB allreduce and reduce, 4 MiB allgather and alltoall (just past the thresholds)' '
	ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- $COLL large $((2 * 1024 * 1024 + 3))
'
test_expect_success 'srun -N1 -n3 (one core short): right and bit-identical' '
	ranks_pass 3 "all checks passed (3 ranks)" env_srun -N1 -n3 --overcommit -- $COLL large $BYTES
'
test_expect_success 'srun -N1 -n2, LOOM_DIRECT_READS=0: the same, without reading the peers'"'"' memory' '
	LOOM_DIRECT_READS=0 ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- $COLL large $BYTES
'
test_done
