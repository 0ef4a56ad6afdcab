#!/bin/sh
# Checkpoint files against links and another user, on the live cluster
# (runtime/ckpt/test/ckpt-drive, 2 ranks on 2 nodes, keep 2): in a shared,
# world-writable checkpoint directory, a real second user (nobody) plants
# step-1 and a .tmp-step-* linked to archives of the job's user, and a
# step-9 of its own; the job's user itself links step-0 to an archive.
# Pruning and the cleanup of a failed save never delete through a link:
# every archive keeps its contents, the links stay, each skipped with a
# warning; nobody's step is never loaded.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
DRIVE="$LOOM_BUILD_DIR/runtime/ckpt/test/ckpt-drive"
test_need_cluster

D=$TEST_TMP/shared
mkdir -p "$D"
chmod 777 "$D"  # a scratch directory every user may write (no sticky bit)
for a in u n t f; do
	mkdir -p "$TEST_TMP/archive-$a"
	echo "archive $a" >"$TEST_TMP/archive-$a/MANIFEST"
	echo "precious $a" >"$TEST_TMP/archive-$a/t0.bin"
done
as_nobody() { runuser -u nobody -- "$@"; }
whole() { test "$(cat "$TEST_TMP/archive-$1/t0.bin")" = "precious $1" && test -f "$TEST_TMP/archive-$1/MANIFEST"; }
save() { LOOM_CKPT_KEEP=2 srun --mpi=pmix -N2 -n2 "$DRIVE" save "$D" "$1" rows; }

test_expect_success 'the job saves steps 2 and 3; nobody plants links and a step of its own, the user a link of its own' '
	save 2 && save 3 &&
	as_nobody ln -s "$TEST_TMP/archive-n" "$D/step-1" &&
	as_nobody ln -s "$TEST_TMP/archive-t" "$D/.tmp-step-0-77" &&
	mkdir "$TEST_TMP/nob" && chown nobody "$TEST_TMP/nob" &&
	as_nobody "$DRIVE" save "$TEST_TMP/nob" 9 rows && as_nobody mv "$TEST_TMP/nob/step-9" "$D/step-9" &&
	ln -s "$TEST_TMP/archive-u" "$D/step-0" &&
	test "$(stat -c %U "$D/step-1")" = nobody && test "$(stat -c %U "$D/step-9")" = nobody
'

test_expect_success 'saves of steps 4 and 5 prune steps 2 and 3, never through a link: every archive whole, the links kept, warnings' '
	save 4 >"$TEST_TMP/s4.out" 2>&1 && save 5 >"$TEST_TMP/s5.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/s5.out"; test $rc = 0 &&
	test ! -e "$D/step-2" && test ! -e "$D/step-3" && test -f "$D/step-4/MANIFEST" && test -f "$D/step-5/MANIFEST" &&
	whole u && whole n && whole t &&
	test -L "$D/step-0" && test -L "$D/step-1" && test -L "$D/.tmp-step-0-77" &&
	grep -q "ckpt: $D/step-1 is a symbolic link: skipped" "$TEST_TMP/s5.out" &&
	grep -q "ckpt: $D/step-0 is a symbolic link: skipped" "$TEST_TMP/s5.out" &&
	grep -q "ckpt: $D/.tmp-step-0-77 is a symbolic link: skipped" "$TEST_TMP/s5.out" &&
	grep -q "ckpt: $D/step-9 belongs to uid $(id -u nobody), not to this job.s user (uid 0): skipped" "$TEST_TMP/s5.out" &&
	test -f "$D/step-9/MANIFEST"
'

test_expect_success 'a restore loads step 5 (nobody.s newer, valid step-9 is not taken)' '
	srun --mpi=pmix -N2 -n2 "$DRIVE" restore "$D" rows >"$TEST_TMP/r.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/r.out"; test $rc = 0 &&
	grep -q "restore ranks 2: success step 5 wrong 0" "$TEST_TMP/r.out"
'

test_expect_success 'a failed save whose .tmp-step-* nobody linked to an archive: the save fails clearly, the archive stays whole' '
	j=$(sbatch --parsable --hold -N2 -n2 -o "$TEST_TMP/f.out" --wrap "LOOM_CKPT_KEEP=2 srun --mpi=pmix $DRIVE save $D 6 rows") &&
	as_nobody ln -s "$TEST_TMP/archive-f" "$D/.tmp-step-6-$j" &&
	scontrol release "$j" &&
	timeout 120 sh -c "while squeue -h -j $j 2>/dev/null | grep -q .; do sleep 0.5; done" &&
	cat "$TEST_TMP/f.out" && whole f && test -L "$D/.tmp-step-6-$j" && test ! -e "$D/step-6" &&
	grep -q "ckpt: $D/.tmp-step-6-$j is a symbolic link: not removed" "$TEST_TMP/f.out" &&
	grep -q "ckpt: mkdir $D/.tmp-step-6-$j: File exists" "$TEST_TMP/f.out"
'
test_done
