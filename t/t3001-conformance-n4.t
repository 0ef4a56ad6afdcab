#!/bin/sh
# The conformance suite on 4 ranks over 2 nodes (srun --mpi=pmix -N2 -n4):
# TCP between the nodes, shm or TCP inside each, every check passing.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/conformance/lib.sh"
test_need_cluster

conf_expect 'full matrix, -N2 -n4, LOOM_TRANSPORT=auto' auto "-N2 -n4" 4 2
conf_expect 'quick matrix, -N2 -n4, LOOM_TRANSPORT=tcp' tcp "-N2 -n4" 4 2 --quick
conf_expect 'quick matrix, -N2 -n4, LOOM_TRANSPORT=shm (shm inside a node, TCP between)' shm "-N2 -n4" 4 2 --quick
test_done
