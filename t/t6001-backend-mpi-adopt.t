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
	mpi_srun 120 --mpi=pmix -N2 -n4 "$ADOPT" >"$TEST_TMP/a.out" 2>"$TEST_TMP/a.err" && rc=0 || rc=$?
	cat "$TEST_TMP/a.err"
	test $rc = 0 && test $(grep -c "mpi_adopt: rank [0-9]*: ok" "$TEST_TMP/a.err") = 4
'
test_expect_success 'a singleton MPI process (no srun): the unit test of statuses runs on one rank' '
	"$LOOM_BUILD_DIR/runtime/backend/test/backend_mpi_status" >"$TEST_TMP/s.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/s.out"
	test $rc = 0 && ! grep -q "^not ok" "$TEST_TMP/s.out"
'
test_expect_success 'mpi_srun runs a step once more only after Open MPI'"'"'s start-up crash (SIGSEGV at 0, no frame past the trampoline), and only once' '
	cat >"$TEST_TMP/race.err" <<-\EOF &&
	[vm:1355] *** Process received signal ***
	[vm:1355] Signal: Segmentation fault (11)
	[vm:1355] Signal code: Address not mapped (1)
	[vm:1355] Failing at address: (nil)
	[vm:1355] [ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x3c050)[0x7fdcfdcec050]
	[vm:1355] *** End of error message ***
	srun: error: n1: task 0: Segmentation fault
	EOF
	sed "/\[ 0\]/a [vm:1355] [ 1] /usr/local/lib/libloom.so.0(+0x1234)[0x7fdcfdcec060]" "$TEST_TMP/race.err" >"$TEST_TMP/bug.err" &&
	sed "s/(nil)/0x18/" "$TEST_TMP/race.err" >"$TEST_TMP/bug2.err" &&
	ompi_init_race "$TEST_TMP/race.err" &&
	! ompi_init_race "$TEST_TMP/bug.err" &&
	! ompi_init_race "$TEST_TMP/bug2.err" &&
	mkdir -p "$TEST_TMP/bin" &&
	cat >"$TEST_TMP/bin/srun" <<-\EOF &&
	#!/bin/sh
	n=$(cat "$FAKE_SRUN_DIR/calls" 2>/dev/null || echo 0)
	echo $((n + 1)) >"$FAKE_SRUN_DIR/calls"
	echo "run $((n + 1)) of $*"
	[ $n -lt "$FAKE_SRUN_FAILS" ] || exit 0
	cat "$FAKE_SRUN_DIR/$FAKE_SRUN_REPORT" >&2
	exit 139
	EOF
	chmod +x "$TEST_TMP/bin/srun" &&
	PATH=$TEST_TMP/bin:$PATH FAKE_SRUN_DIR=$TEST_TMP FAKE_SRUN_FAILS=1 FAKE_SRUN_REPORT=race.err \
		mpi_srun 30 -N2 prog >"$TEST_TMP/r.out" 2>"$TEST_TMP/r.err" &&
	test "$(cat "$TEST_TMP/r.out")" = "run 2 of -N2 prog" && grep -q "once more" "$TEST_TMP/r.err" &&
	rm "$TEST_TMP/calls" &&
	! PATH=$TEST_TMP/bin:$PATH FAKE_SRUN_DIR=$TEST_TMP FAKE_SRUN_FAILS=1 FAKE_SRUN_REPORT=bug.err \
		mpi_srun 30 -N2 prog >"$TEST_TMP/r.out" 2>"$TEST_TMP/r.err" &&
	test "$(cat "$TEST_TMP/calls")" = 1 && grep -q "libloom" "$TEST_TMP/r.err" && rm "$TEST_TMP/calls" &&
	! PATH=$TEST_TMP/bin:$PATH FAKE_SRUN_DIR=$TEST_TMP FAKE_SRUN_FAILS=2 FAKE_SRUN_REPORT=race.err \
		mpi_srun 30 -N2 prog >"$TEST_TMP/r.out" 2>"$TEST_TMP/r.err" &&
	test "$(cat "$TEST_TMP/calls")" = 2
'
test_done
