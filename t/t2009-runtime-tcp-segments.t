#!/bin/sh
# A transfer over TCP goes as messages of up to 4 MiB (runtime/coll/xfer.c
# SEG), all posted at once, each announced and answered on its own, and a
# receive-reduce reduces each one where it belongs as it lands. Across
# nodes, allreduce, allgather and alltoall blocks of 4.5 to 9 MiB and odd
# lengths take two or three of them with a short last one; every result
# must be right and the allreduce bit-identical on every rank.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
test_need_cluster
cluster_plugstack none

BYTES=$((9 * 1024 * 1024 + 3))

test_expect_success 'srun -N2 -n2 (tcp): blocks of several segments, right and bit-identical' '
	LOOM_TRANSPORT=tcp ranks_pass 2 "all checks passed (2 ranks)" env_srun -N2 -n2 -- $COLL large $BYTES
'
test_expect_success 'srun -N2 -n4 (auto): the same beside shared memory in each node' '
	ranks_pass 4 "all checks passed (4 ranks)" env_srun -N2 -n4 -- $COLL large $BYTES
'
test_done
