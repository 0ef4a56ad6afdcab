#!/bin/sh
# loom-bench on the live cluster: for each collective, -c 1 with small
# sizes on 4 ranks over 2 nodes and on 2 ranks of one node reports 0 wrong
# elements and prints one well-formed row per size (timings not asserted);
# --peer mpi runs Open MPI's matching call in the same step, same buffers.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_cluster
B=$LOOM_BUILD_DIR/bench/loom-bench
# Open MPI across the two fake nodes of one host: TCP on loopback only
# (see /work/shared/notes: the vader BTL segfaulted across them)
. "$LOOM_SRC_DIR/t/backend/lib.sh"
mpi_env

# size count type redop root time best algbw busbw #wrong
row='^ +[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z]+ +-?[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+'
# -b 8 -e 1M -f 2: 18 sizes
for sargs in "-N2 -n4" "-N1 -n2"; do
	for op in allreduce allgather reduce_scatter broadcast alltoall reduce; do
		test_expect_success "loom-bench $op -c 1 -b 8 -e 1M ($sargs): 18 rows, 0 wrong" '
			timeout 300 srun --mpi=pmix '"$sargs"' "$B" '$op' -b 8 -e 1M -f 2 -n 3 -w 1 -c 1 \
				>"$TEST_TMP/b.out" 2>"$TEST_TMP/b.err" && rc=0 || rc=$?
			cat "$TEST_TMP/b.out" "$TEST_TMP/b.err"
			test $rc = 0 &&
			test $(grep -Ec "$row\$" "$TEST_TMP/b.out") = 18 &&
			test $(grep -Ec "$row\$" "$TEST_TMP/b.out" | head -1) = $(grep -vc "^#" "$TEST_TMP/b.out") &&
			! grep -Ev "^#" "$TEST_TMP/b.out" | grep -Evq " 0\$" &&
			grep -q "^# loom-bench .*: '$op', '"${sargs#*-n}"' ranks" "$TEST_TMP/b.out" &&
			grep -q "^# Wrong elements *: 0 OK" "$TEST_TMP/b.out" &&
			grep -q "^# Avg bus bandwidth *: [0-9.]* GB/s" "$TEST_TMP/b.out" &&
			test $(grep -c "^# loom-bench" "$TEST_TMP/b.out") = 1
		'
	done
done

test_expect_success 'loom-bench -c 1 -d float16 -o avg and -d int64 -o prod on 3 ranks (odd size)' '
	timeout 300 srun --mpi=pmix -N2 -n3 "$B" allreduce -d float16 -o avg -b 8 -e 256K -n 2 -w 1 -c 1 >"$TEST_TMP/h.out" 2>&1 &&
	timeout 300 srun --mpi=pmix -N2 -n3 "$B" reduce_scatter -d int64 -o prod -b 8 -e 256K -n 2 -w 1 -c 1 >>"$TEST_TMP/h.out" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/h.out"; test $rc = 0 && test $(grep -c "^# Wrong elements *: 0 OK" "$TEST_TMP/h.out") = 2
'

mrow="$row +[0-9.]+ +[0-9.]+ +[0-9]+"
if grep -q '^#define HAVE_MPI 1' "$LOOM_BUILD_DIR/config.h"; then
test_expect_success 'loom-bench --peer mpi under srun --mpi=pmix (-N2 -n4): libloom and Open MPI share the step, both correct' '
	mpi_srun 300 --mpi=pmix -N2 -n4 "$B" allreduce -b 8 -e 1M -f 4 -n 3 -w 1 -c 1 --peer mpi --memcpy \
		>"$TEST_TMP/p.out" 2>"$TEST_TMP/p.err" && rc=0 || rc=$?
	cat "$TEST_TMP/p.out" "$TEST_TMP/p.err"
	test $rc = 0 && test $(grep -Ec "$mrow +[0-9.]+ +[0-9.]+\$" "$TEST_TMP/p.out") = 10 &&
	grep -q "mpi_busbw" "$TEST_TMP/p.out" &&
	grep -q "^# Wrong elements (mpi) : 0 OK" "$TEST_TMP/p.out" &&
	grep -q "^# Avg bus bandwidth (mpi): [0-9.]* GB/s" "$TEST_TMP/p.out"
'
test_expect_success 'loom-bench --peer mpi for every collective (-N1 -n2)' '
	for op in allgather reduce_scatter broadcast alltoall reduce; do
		mpi_srun 300 --mpi=pmix -N1 -n2 "$B" $op -b 8 -e 64K -f 8 -n 2 -w 1 -c 1 --peer mpi \
			>"$TEST_TMP/p.out" 2>&1 || { cat "$TEST_TMP/p.out"; exit 1; }
		grep -q "^# Wrong elements (mpi) : 0 OK" "$TEST_TMP/p.out" || { cat "$TEST_TMP/p.out"; exit 1; }
	done
'
else
	test_skip 'loom-bench --peer mpi (-N2 -n4, -N1 -n2)' 'built without MPI'
fi
test_expect_success 'loom-bench -r names a root outside the world' '
	test_must_fail_with "^loom-bench: -r .5.: not a rank of the 2-rank world" \
		timeout 60 srun --mpi=pmix -N1 -n2 "$B" broadcast -r 5 -e 1K
'
test_done
