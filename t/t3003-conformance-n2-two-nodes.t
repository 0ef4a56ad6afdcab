#!/bin/sh
# The conformance suite on 2 ranks on 2 nodes (srun --mpi=pmix -N2 -n2),
# and on 3 ranks (an odd size: rings, roots and splits off the even path).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/conformance/lib.sh"
test_need_cluster

conf_expect 'full matrix, -N2 -n2, LOOM_TRANSPORT=tcp' tcp "-N2 -n2" 2 2
conf_expect 'quick matrix, -N2 -n2, LOOM_TRANSPORT=auto' auto "-N2 -n2" 2 2 --quick
conf_expect 'quick matrix, -N2 -n3 (odd size), LOOM_TRANSPORT=auto' auto "-N2 -n3" 3 2 --quick
test_done
