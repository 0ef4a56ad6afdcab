#!/bin/sh
# The conformance suite on 2 ranks of one node (srun --mpi=pmix -N1 -n2)
# over each transport.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/conformance/lib.sh"
test_need_cluster

conf_expect 'full matrix, -N1 -n2, LOOM_TRANSPORT=shm' shm "-N1 -n2" 2 1
conf_expect 'quick matrix, -N1 -n2, LOOM_TRANSPORT=tcp' tcp "-N1 -n2" 2 1 --quick
conf_expect 'quick matrix, -N1 -n2, LOOM_TRANSPORT=auto' auto "-N1 -n2" 2 1 --quick

# both ranks on one CPU: a waiter whose peer last ran there yields to it
# at once instead of spinning (transport_shm.c, loom_shm_peer_beside);
# every result still right, nothing hangs
if command -v taskset >/dev/null 2>&1; then
	real=$CONF
	CONF=$TEST_TMP/one-cpu
	printf '#!/bin/sh\nexec taskset -c 0 "%s" "$@"\n' "$real" >"$CONF" && chmod +x "$CONF"
	conf_expect 'quick matrix, -N1 -n2, both ranks on CPU 0' auto "-N1 -n2" 2 1 --quick
	CONF=$real
fi
test_done
