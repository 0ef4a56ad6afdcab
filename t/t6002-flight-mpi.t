#!/bin/sh
# The flight recorder under the MPI backend (LOOM_BACKEND=mpi, srun
# --mpi=pmix): the public layer records for every backend, so loom-doctor
# names the rank that stopped before its 7th allreduce, and a hang inside
# one tp group names that group (the MPI communicators carry their world
# ranks, which tell the two tp groups apart). Events, not times: markers
# and loom-doctor's own output, under an outer timeout.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
. "$LOOM_SRC_DIR/t/backend/lib.sh"
have_config HAVE_MPI || skip_all "built without MPI (configure --with-mpi)"
have_config HAVE_PMIX || skip_all "built without PMIx: srun --mpi=pmix cannot start MPI here"
test_need_cluster
cluster_plugstack none
mpi_env
. "$LOOM_SRC_DIR/t/runtime/flight.sh"
LOOM_BACKEND=mpi FLIGHT_MPI=1
export LOOM_BACKEND

test_expect_success 'mpi: rank 2 stops before its 7th allreduce: loom-doctor names it, also after kill -9' '
	d=$(marker_dir) && f=$(marker_dir) &&
	start_step flm-hang hang 2 "$d" "$f" &&
	wait_file "$d/asleep.2" &&
	doctor_until "$f" "^verdict: world: ranks 0,1,3 wait in allreduce #7 " &&
	cat "$TEST_TMP/doc" &&
	grep -Eq "$HANG" "$TEST_TMP/doc" &&
	kill_step flm-hang &&
	"$DOC" "$f" >"$TEST_TMP/doc2" 2>&1 || test $? -eq 1 &&
	cat "$TEST_TMP/doc2" &&
	grep -Eq "$GONE" "$TEST_TMP/doc2"
'

test_expect_success 'mpi: a hang in one tp group names that communicator, not the world' '
	tp_hang flm-tp
'
test_done
