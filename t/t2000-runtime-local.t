#!/bin/sh
# libloom without Slurm: bootstrap errors are clear, and a few ranks
# started by hand on this host (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT)
# form a world and get every collective right.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"

# local_run N CMD...: start N ranks of CMD here; NODES fake node names via SLURMD_NODENAME;
# each gives up after LOOM_T2_SRUN_TIMEOUT s (180), like t_srun. The ranks
# share a fresh LOOM_JOB_SECRET, as a launcher gives them (NOSECRET=1: none).
local_run() {
	local n=$1 port r pids="" rc=0 secret
	shift
	port=$(free_port) || return 1
	secret=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	[ "${NOSECRET:-0}" = 1 ] && secret=
	for r in $(seq 0 $((n - 1))); do
		LOOM_JOB_SECRET=$secret RANK=$r WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
			SLURMD_NODENAME=node$((r % ${NODES:-1})) \
			timeout -k 10 "$T2_SRUN_TIMEOUT" "$@" &
		pids="$pids $!"
	done
	for p in $pids; do wait $p || rc=1; done
	return $rc
}

test_expect_success 'RANK without MASTER_ADDR: LOOM_ERR_BOOTSTRAP, "MASTER_ADDR unset"' '
	unset MASTER_ADDR PMIX_RANK;
	test_must_fail_with "MASTER_ADDR unset" env RANK=1 WORLD_SIZE=2 MASTER_PORT=1 $COLL coll &&
	test_must_fail_with "bootstrap failed" env RANK=1 WORLD_SIZE=2 MASTER_PORT=1 $COLL coll
'
test_expect_success 'a MASTER_ADDR that does not resolve: LOOM_ERR_BOOTSTRAP naming it' '
	test_must_fail_with "MASTER_ADDR=no-such-host.invalid does not resolve" \
		timeout -k 5 60 env RANK=1 WORLD_SIZE=2 MASTER_ADDR=no-such-host.invalid MASTER_PORT=1 $COLL coll
'
test_expect_success 'RANK not below WORLD_SIZE is refused' '
	test_must_fail_with "RANK=5 is not a number in 0..1" env RANK=5 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 $COLL coll
'
# LOOM_BOOTSTRAP_TIMEOUT=2 is honoured: the rank gives up by itself with
# that line, long before the outer timeout (30 s, a quarter of the 120 s
# default) would kill it (exit 124, no line)
test_expect_success 'unreachable MASTER_ADDR:MASTER_PORT fails after LOOM_BOOTSTRAP_TIMEOUT' '
	port=$(free_port) &&
	test_must_fail_with "cannot reach MASTER_ADDR:MASTER_PORT 127.0.0.1:$port after 2 s" \
		timeout -k 5 30 env LOOM_BOOTSTRAP_TIMEOUT=2 RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port $COLL coll
'
test_expect_success 'rank 0 names the ranks that never came' '
	port=$(free_port) &&
	test_must_fail_with "ranks 1,2 never connected" \
		timeout -k 5 30 env LOOM_BOOTSTRAP_TIMEOUT=1 RANK=0 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port $COLL coll
'
if grep -q '^#define HAVE_MPI 1' "$LOOM_BUILD_DIR/config.h"; then
	test_skip 'LOOM_BACKEND=mpi is reported as unsupported' 'built with MPI: t/t6000-backend-mpi.t tests it'
else
test_expect_success 'LOOM_BACKEND=mpi is reported as unsupported' '
	test_must_fail_with "mpi backend is not built" env LOOM_BACKEND=mpi $COLL coll
'
fi
test_expect_success 'LOOM_TRANSPORT=bogus is refused with the choices' '
	test_must_fail_with "LOOM_TRANSPORT=bogus: expected shm, tcp or auto" env LOOM_TRANSPORT=bogus $COLL coll
'
test_expect_success '3 ranks by hand on one node (shm): every collective right' '
	ranks_pass 3 "all checks passed (3 ranks)" local_run 3 $COLL coll 200003
'
test_expect_success '4 ranks by hand on two fake nodes (hierarchical): every collective right' '
	NODES=2 ranks_pass 4 "all checks passed (4 ranks)" local_run 4 $COLL coll 200003
'
test_expect_success 'without LOOM_JOB_SECRET the ranks still form a world, and rank 0 alone warns that anyone could join' '
	NOSECRET=1 ranks_pass 2 "all checks passed (2 ranks)" local_run 2 $COLL coll 1000 &&
	test $(grep -c "LOOM_JOB_SECRET is unset, so any process that reaches MASTER_PORT can join" $TEST_TMP/o) = 1
'
test_expect_success 'a LOOM_JOB_SECRET that is not 32+ hex digits is refused, naming the variable and the form' '
	test_must_fail_with "LOOM_JOB_SECRET has 5 characters: it must be 32 to 128 hex digits" \
		env LOOM_JOB_SECRET=abcde RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 $COLL coll &&
	test_must_fail_with "LOOM_JOB_SECRET: character 2 is not a hex digit" \
		env LOOM_JOB_SECRET=0g112233445566778899aabbccddeeff RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 $COLL coll
'
test_done
