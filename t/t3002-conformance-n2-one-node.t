#!/bin/sh
# The conformance suite on 2 ranks of one node (srun --mpi=pmix -N1 -n2)
# over each transport.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/conformance/lib.sh"
test_need_cluster

conf_expect 'full matrix, -N1 -n2, LOOM_TRANSPORT=shm' shm "-N1 -n2" 2 1
conf_expect 'quick matrix, -N1 -n2, LOOM_TRANSPORT=tcp' tcp "-N1 -n2" 2 1 --quick
conf_expect 'quick matrix, -N1 -n2, LOOM_TRANSPORT=auto' auto "-N1 -n2" 2 1 --quick
test_done
