#!/bin/sh
# An MPI program adopts loom (loom_comm_from_mpi) on a communicator of its
# own, and an MPI program that initialized MPI itself runs loom_init with
# LOOM_BACKEND=mpi: loom uses the program's MPI and never finalizes it.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/backend/lib.sh"
have_config HAVE_MPI || skip_all "built without MPI (configure --with-mpi)"
have_config HAVE_PMIX || skip_all "built without PMIx: srun --mpi=pmix cannot start MPI here"
test_need_cluster
cluster_plugstack none
mpi_env

test_expect_success 'loom_comm_from_mpi on a split of MPI_COMM_WORLD (-N2 -n4): agrees with MPI_Allreduce, MPI stays the program'"'"'s' '
	timeout 120 srun --mpi=pmix -N2 -n4 "$ADOPT" >"$TEST_TMP/a.out" 2>"$TEST_TMP/a.err" && rc=0 || rc=$?
	cat "$TEST_TMP/a.err"
	test $rc = 0 && test $(grep -c "mpi_adopt: rank [0-9]*: ok" "$TEST_TMP/a.err") = 4
'
test_expect_success 'a singleton MPI process (no srun): the unit test of statuses runs on one rank' '
	"$LOOM_BUILD_DIR/runtime/test/backend_mpi_status" >"$TEST_TMP/s.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/s.out"
	test $rc = 0 && ! grep -q "^not ok" "$TEST_TMP/s.out"
'
test_done
