# t/runtime/flight.sh: helpers for the flight recorder's cluster tests
# (t2100, t6002); source after t/runtime/lib.sh and test_need_cluster.
#   start_step NAME MODE WHO MARKERS FLIGHTDIR
#                      flight-hang MODE on 4 ranks of 2 nodes, in the
#                      background, job name NAME, output $TEST_TMP/o.NAME,
#                      LOOM_FLIGHT_DIR=FLIGHTDIR (LOOM_TIMEOUT 600 unless set);
#                      FLIGHT_MPI=1: srun --mpi=pmix (for LOOM_BACKEND=mpi)
#   kill_step NAME     SIGKILL to the step's tasks, then wait for its srun
#   wait_file FILE     until FILE exists (120 s at most)
#   doctor_until DIR PATTERN
#                      rerun loom-doctor DIR until its output ($TEST_TMP/doc)
#                      has a line matching PATTERN (120 s at most)
#   tp_hang NAME       the tp-group hang (flight-hang tp 2): the verdict names
#                      tp (world ranks 2,3), no line names the world
#   HANG, GONE         the verdicts (grep -E) of flight-hang hang 2 while it
#                      hangs and after kill -9
DOC=$LOOM_BUILD_DIR/runtime/tools/loom-doctor
FH=$LOOM_BUILD_DIR/t/runtime/flight-hang

start_step() {
	local name=$1 mode=$2 who=$3 d=$4 f=$5
	if [ -n "$FLIGHT_MPI" ]; then
		LOOM_FLIGHT_DIR=$f LOOM_TIMEOUT=${LOOM_TIMEOUT:-600} \
			mpi_srun "$T2_SRUN_TIMEOUT" --mpi=pmix -N2 -n4 -J "$name" "$FH" "$mode" "$who" "$d" \
			>"$TEST_TMP/o.$name" 2>&1 &
	else
		LOOM_FLIGHT_DIR=$f LOOM_TIMEOUT=${LOOM_TIMEOUT:-600} \
			env_srun -N2 -n4 -J "$name" -- "$FH" "$mode" "$who" "$d" >"$TEST_TMP/o.$name" 2>&1 &
	fi
	echo $! >"$TEST_TMP/pid.$name"
}

kill_step() {
	local j
	j=$(squeue -h -o %i -n "$1") && [ -n "$j" ] || { echo "no job named $1"; return 1; }
	scancel -s KILL "$j"
	wait "$(cat "$TEST_TMP/pid.$1")" 2>/dev/null || true
	timeout 60 sh -c 'while [ -n "$(squeue -h -o %i -n "$1")" ]; do sleep 0.2; done' sh "$1"
}

wait_file() {
	timeout 120 sh -c 'until [ -e "$1" ]; do sleep 0.2; done' sh "$1" && return 0
	echo "no $1 after 120 s"
	return 1
}

doctor_until() {
	timeout 120 sh -c 'until "$0" "$1" >"$3" 2>&1; grep -q -- "$2" "$3"; do sleep 0.2; done' \
		"$DOC" "$1" "$2" "$TEST_TMP/doc" && return 0
	echo "loom-doctor $1 never said /$2/:"
	cat "$TEST_TMP/doc"
	return 1
}

HANG='^verdict: world: ranks 0,1,3 wait in allreduce #7 \([0-9.]+ s\); rank 2 \(n2, pid [0-9]+\) last finished allreduce #6 and is in no collective$'
GONE='^verdict: world: ranks 0,1,3 wait in allreduce #7 \([0-9.]+ s\); 3 of them gone; rank 2 \(n2, pid [0-9]+\) last finished allreduce #6 and is in no collective; its process is gone$'

tp_hang() {
	local d f
	d=$(marker_dir) && f=$(marker_dir) &&
	start_step "$1" tp 2 "$d" "$f" &&
	wait_file "$d/asleep.2" &&
	doctor_until "$f" "^verdict: tp (world ranks 2,3): rank 1 waits in allreduce #7" &&
	kill_step "$1" &&
	cat "$TEST_TMP/doc" &&
	grep -Eq "^verdict: tp \(world ranks 2,3\): rank 1 waits in allreduce #7 \([0-9.]+ s\); rank 0 \(world rank 2, n2, pid [0-9]+\) last finished allreduce #6 and is in no collective\$" "$TEST_TMP/doc" &&
	! grep -q "^world:" "$TEST_TMP/doc" &&
	! grep -q "^tp (world ranks 0,1)" "$TEST_TMP/doc"
}
