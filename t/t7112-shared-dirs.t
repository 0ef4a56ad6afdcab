#!/bin/sh
# Per-job directories at predictable names in directories every user can
# write (mode 1777, as /var/tmp and /tmp are; docs/security.md): user
# nobody plants a directory, a symbolic link (to a root-only directory or
# root's 0600 file) or a FIFO at the name a job of root's will use, before
# it starts (the job is held, its id known, as squeue shows it to all).
# The flight directory (flight_local_base/loom-flight.UID.JOB): loom.so
# removes the squatter and makes it for the job, whose records are then
# written there. The node cache (--loom-ckpt-cache=DIR/ckpt-cache-%j) and
# the checkpoint directory (--loom-ckpt=DIR/ckpt-%j): refused at once,
# naming the squatter; loom-hello says the checkpoint failed (not "saved
# and restored", not a wrong allreduce). Nothing followed, nothing hangs.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
[ "$(id -u)" = 0 ] || skip_all "needs root to act as user nobody"
id nobody >/dev/null 2>&1 || skip_all "no user nobody"
command -v runuser >/dev/null || skip_all "runuser not installed"
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"
B=$LOOM_BUILD_DIR/bench/loom-bench
HELLO=$LOOM_BUILD_DIR/examples/loom-hello
S=$TEST_TMP/shared
mkdir -p "$S" "$TEST_TMP/ck" "$TEST_TMP/root-only" && chmod 1777 "$S" && chmod 700 "$TEST_TMP/root-only"
printf 'root secret\n' >"$TEST_TMP/victim" && chmod 600 "$TEST_TMP/victim"
echo keep >"$TEST_TMP/root-only/keep"
cluster_plugstack "flight_local_base=$S"
as_nobody() { runuser -u nobody -- "$@"; }
NOBODY_UID=$(id -u nobody)
untouched() {
	test "$(cat "$TEST_TMP/victim")" = "root secret" && test "$(stat -c %a "$TEST_TMP/victim")" = 600 &&
	test "$(ls "$TEST_TMP/root-only")" = keep && test "$(cat "$TEST_TMP/root-only/keep")" = keep
}
# plant KIND PATH: as nobody, a directory, a link or a FIFO at PATH
plant() {
	case $1 in
	dir) as_nobody mkdir -m 777 "$2" ;;
	link) as_nobody ln -s "$TEST_TMP/root-only" "$2" ;;
	filelink) as_nobody ln -s "$TEST_TMP/victim" "$2" ;;
	fifo) as_nobody mkfifo -m 666 "$2" ;;
	esac
}
# held OUT WRAP: submit WRAP held (its id in $j), OUT its output
held() {
	j=$(sbatch --parsable --hold -N1 -n2 -o "$TEST_TMP/$1" --wrap "$2")
}
# run_held: release job $j, wait for its end (it must not hang)
run_held() {
	scontrol release "$j" && wait_state "$j" 120 COMPLETED FAILED CANCELLED TIMEOUT &&
	cat "$TEST_TMP/$1"
}

# flight_job_ok OUT: job $j completed, both tasks saw the directory as the
# job's own (root's here, 0700) with their records in it; else says which
flight_job_ok() {
	local st
	st=$(job_field $j JobState)
	[ "$st" = COMPLETED ] || { echo "job $j ended $st, not COMPLETED"; return 1; }
	[ $(grep -c "^root 700 directory$" "$TEST_TMP/$1") = 2 ] ||
		{ echo "not two lines \"root 700 directory\" in $1"; return 1; }
	grep -q "^step0-rank0.flight$" "$TEST_TMP/$1" && grep -q "^step0-rank1.flight$" "$TEST_TMP/$1" ||
		{ echo "no records of both ranks in the listing"; return 1; }
	! grep -q "flight recorder off" "$TEST_TMP/$1" || { echo "the recorder was off"; return 1; }
}

for kind in dir link fifo; do
	test_expect_success "flight directory: a $kind of nobody at its name is replaced; the records are written there" '
		held f-$kind.out "srun --mpi=none sh -c \"$B allreduce -b 8 -e 8 -n 2 -w 1 >/dev/null && stat -c \\\"%U %a %F\\\" \\\$LOOM_FLIGHT_DIR && ls \\\$LOOM_FLIGHT_DIR\"" &&
		F=$S/loom-flight.0.$j && plant $kind "$F" &&
		run_held f-$kind.out &&
		flight_job_ok f-$kind.out &&
		wait_stepd_log "loom: job $j: flight directory $F: .* of uid $NOBODY_UID" 60 &&
		untouched
	'
done

for kind in dir filelink fifo; do
	test_expect_success "node cache: a $kind of nobody at ckpt-cache-JOB is refused at once, naming nobody; loom-hello says the checkpoint failed" '
		held c-$kind.out "srun --mpi=pmix --loom-ckpt=$TEST_TMP/ck --loom-ckpt-cache=$S/ckpt-cache-%j $HELLO" &&
		plant $kind "$S/ckpt-cache-$j" &&
		run_held c-$kind.out &&
		test "$(job_field $j JobState)" = FAILED &&
		grep -q "node cache $S/ckpt-cache-$j .*: refusing it (.* of uid $NOBODY_UID" "$TEST_TMP/c-$kind.out" &&
		grep -q "^allreduce: .*: every element as expected$" "$TEST_TMP/c-$kind.out" &&
		grep -q "^checkpoint: FAILED" "$TEST_TMP/c-$kind.out" &&
		! grep -q "saved and restored\|WRONG\|^PASS" "$TEST_TMP/c-$kind.out" &&
		grep -q "^FAIL: loom-hello" "$TEST_TMP/c-$kind.out" &&
		untouched
	'
done

for kind in dir link fifo; do
	test_expect_success "checkpoint directory: a $kind of nobody at ckpt-JOB is refused before the tasks start, naming nobody" '
		held d-$kind.out "srun --mpi=pmix --loom-ckpt=$S/ckpt-%j $HELLO" &&
		plant $kind "$S/ckpt-$j" &&
		run_held d-$kind.out &&
		test "$(job_field $j JobState)" = FAILED &&
		grep -q -- "--loom-ckpt=$S/ckpt-$j is a .* of uid $NOBODY_UID in the shared directory $S" "$TEST_TMP/d-$kind.out" &&
		! grep -q "saved and restored\|^PASS" "$TEST_TMP/d-$kind.out" &&
		test -z "$(ls -A "$TEST_TMP/root-only" | grep -v "^keep$")" &&
		untouched
	'
done
test_done
