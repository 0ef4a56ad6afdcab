#!/bin/sh
# libloom collectives under srun with the RANK/WORLD_SIZE/MASTER_* (env)
# bootstrap: every collective x dtype x op x size (0, 1, 7, 1000, 70001,
# and a few MiB) x in-place/out-of-place, checked against a serial
# reference, over shm only, TCP only and hierarchical (auto).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
test_need_cluster
cluster_plugstack none

for tr in auto tcp shm; do
	test_expect_success "srun -N2 -n4, LOOM_TRANSPORT=$tr: every collective right" "
		LOOM_TRANSPORT=$tr ranks_pass 4 'all checks passed (4 ranks)' env_srun -N2 -n4 -- \$COLL coll 1048579
	"
done
for tr in shm tcp; do
	test_expect_success "srun -N1 -n2 (one node), LOOM_TRANSPORT=$tr: every collective right" "
		LOOM_TRANSPORT=$tr ranks_pass 2 'all checks passed (2 ranks)' env_srun -N1 -n2 -- \$COLL coll 1048579
	"
done
test_expect_success 'srun -N2 -n2 (one rank per node): every collective right' '
	ranks_pass 2 "all checks passed (2 ranks)" env_srun -N2 -n2 -- $COLL coll 1048579
'
test_expect_success 'srun -N2 -n3 (non-power-of-two, uneven nodes): every collective right' '
	ranks_pass 3 "all checks passed (3 ranks)" env_srun -N2 -n3 -- $COLL coll 300007
'
test_expect_success 'LOOM_CHECK=1 lets matching calls through' '
	LOOM_CHECK=1 ranks_pass 4 "all checks passed (4 ranks)" env_srun -N2 -n4 -- $COLL coll
'
test_done
