#!/bin/sh
# An allreduce or reduce of 256 KiB or more a rank inside one node, and
# an allgather or alltoall of 4 MiB or more of result, go through the
# shared-memory ring slots chunk by chunk, the results written with
# streaming stores (runtime/coll/coll_staged.c; the plan unit test checks
# that these sizes take it). Element sizes, in place and out of place,
# blocks and chunks that do not divide evenly, 2 and 3 ranks (3: each
# reduced chunk also copied to a second peer), just above the thresholds
# and far above, allreduce bit-identical everywhere; and it does not need
# the peers' memory readable (LOOM_DIRECT_READS=0).
#
# Where the ranks' cores hand a cache line over slowly (no shared cache)
# the slots are written with streaming stores instead: the ranks time a
# few fast-box allreduces together and agree (runtime/coll/near.c); ranks
# that share a CPU keep cached stores. LOOM_STAGED=1 keeps cached stores,
# stream streaming ones, 0 takes direct reads; all must give the same
# bytes, since the choice may change during a run.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
test_need_cluster
cluster_plugstack none

BYTES=$((32 * 1024 * 1024))

# the digest rank 0 printed, from $TEST_TMP/o
digest() {
	sed -n 's/^rank 0: allreduce digest \([0-9a-f]*\)$/\1/p' "$TEST_TMP/o"
}

test_expect_success 'srun -N1 -n2, LOOM_STAGED=1: 32 MiB allreduce and reduce, 64 MiB allgather and alltoall through the slots, right and bit-identical' '
	LOOM_STAGED=1 ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- $COLL large $BYTES
'
test_expect_success 'srun -N1 -n2, LOOM_STAGED=1: 2 MiB allreduce and reduce, 4 MiB allgather and alltoall (just past the thresholds)' '
	LOOM_STAGED=1 ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- $COLL large $((2 * 1024 * 1024 + 3))
'
test_expect_success 'srun -N1 -n3 (one core short), LOOM_STAGED=1: right and bit-identical' '
	LOOM_STAGED=1 ranks_pass 3 "all checks passed (3 ranks)" env_srun -N1 -n3 --overcommit -- $COLL large $BYTES &&
	digest >"$TEST_TMP/slots" && test -s "$TEST_TMP/slots"
'
test_expect_success 'srun -N1 -n3, LOOM_STAGED=0: direct reads, the same bytes as the slots (3 ranks: the order of the sums shows)' '
	LOOM_STAGED=0 ranks_pass 3 "all checks passed (3 ranks)" env_srun -N1 -n3 --overcommit -- $COLL large $BYTES &&
	digest >"$TEST_TMP/reads" && test -s "$TEST_TMP/reads" &&
	cmp "$TEST_TMP/slots" "$TEST_TMP/reads"
'
test_expect_success 'srun -N1 -n3, LOOM_STAGED=stream: streamed slots, the same bytes as cached ones' '
	LOOM_STAGED=stream ranks_pass 3 "all checks passed (3 ranks)" env_srun -N1 -n3 --overcommit -- $COLL large $BYTES &&
	digest >"$TEST_TMP/streamed" && test -s "$TEST_TMP/streamed" &&
	cmp "$TEST_TMP/slots" "$TEST_TMP/streamed"
'
test_expect_success 'srun -N1 -n2, LOOM_STAGED=stream: far above and just past the thresholds, right and bit-identical' '
	LOOM_STAGED=stream LOOM_DEBUG=info ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- $COLL large $BYTES &&
	test "$(grep -c "comm world: LOOM_STAGED=stream: large collectives in the node by streamed slots" "$TEST_TMP/o")" -eq 2 &&
	LOOM_STAGED=stream ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- $COLL large $((2 * 1024 * 1024 + 3))
'
test_expect_success 'srun -N1 -n2, LOOM_STAGED=0 and LOOM_DIRECT_READS=0: direct reads asked for and refused, so the slots, right' '
	LOOM_STAGED=0 LOOM_DIRECT_READS=0 LOOM_DEBUG=info ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- $COLL large $BYTES &&
	test "$(grep -c "no direct reads of the peers'"'"' memory (LOOM_DIRECT_READS=0" "$TEST_TMP/o")" -eq 2
'
test_expect_success 'srun -N1 -n2, both ranks on one CPU: they see it and keep the slots (each hand-off stays in that cache)' '
	LOOM_DEBUG=info ranks_pass 2 "all checks passed (2 ranks)" \
		env_srun -N1 -n2 -- taskset -c 0 $COLL large $((2 * 1024 * 1024 + 3)) &&
	test "$(grep -c "ranks share a CPU: large collectives in the node by the ring slots" "$TEST_TMP/o")" -eq 2 &&
	! grep "large collectives in the node by streamed slots" "$TEST_TMP/o"
'
# what rank $1 concluded at each look, one a line, in order: the slowest
# rank's time and the way, or a look set aside (the same on every rank)
ways() {
	grep "^loom\[$1/2 [^]]*\]: comm world: a fast-box allreduce takes" "$TEST_TMP/o" |
		sed "s/^loom\[[^]]*\]: //"
}
# LOOM_TEST_NEAR_NS stands for what a rank measured; each rank is bound
# to its own CPU, as ranks that share one keep the slots whatever it says
test_expect_success 'srun -N1 -n2, one rank finds the hand-off slow (400 ns), the other fast: both stream the slots, right' '
	LOOM_TIMEOUT=60 LOOM_DEBUG=info ranks_pass 2 "all checks passed (2 ranks)" \
		env_srun -N1 -n2 -- sh -c "LOOM_TEST_NEAR_NS=\$((RANK ? 400 : 50)) exec taskset -c \$RANK \"\$@\"" sh $COLL large $((2 * 1024 * 1024 + 3)) &&
	test "$(grep -c "takes 400 ns (limit [0-9]*): large collectives in the node by streamed slots" "$TEST_TMP/o")" -eq 2
'
test_expect_success 'srun -N1 -n2, a rank kept off its CPU (5 us): both look again at the next 3 calls, then stream the slots, right' '
	LOOM_TIMEOUT=60 LOOM_DEBUG=info ranks_pass 2 "all checks passed (2 ranks)" \
		env_srun -N1 -n2 -- sh -c "LOOM_TEST_NEAR_NS=\$((RANK ? 5000 : 50)) exec taskset -c \$RANK \"\$@\"" sh $COLL large $((2 * 1024 * 1024 + 3)) &&
	for r in 0 1; do
		ways $r >"$TEST_TMP/looks$r" &&
		printf "comm world: a fast-box allreduce takes %s\n" \
			"5000 ns, a rank kept off its CPU: looking again at the next call" \
			"5000 ns, a rank kept off its CPU: looking again at the next call" \
			"5000 ns, a rank kept off its CPU: looking again at the next call" \
			"5000 ns (limit 240): large collectives in the node by streamed slots" >"$TEST_TMP/want" &&
		head -n 4 "$TEST_TMP/looks$r" | cmp - "$TEST_TMP/want" || exit 1
	done
'
test_expect_success 'srun -N1 -n2, both find it fast (50 ns): both keep the slots' '
	LOOM_DEBUG=info LOOM_TEST_NEAR_NS=50 ranks_pass 2 "all checks passed (2 ranks)" \
		env_srun -N1 -n2 -- sh -c "exec taskset -c \$RANK \"\$@\"" sh $COLL large $((2 * 1024 * 1024 + 3)) &&
	test "$(grep -c "takes 50 ns (limit [0-9]*): large collectives in the node by the ring slots" "$TEST_TMP/o")" -eq 2
'
test_expect_success 'srun -N1 -n2, two CPUs: both ranks take the same way at every look (whichever the host allows), right' '
	LOOM_TIMEOUT=60 LOOM_DEBUG=info ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- $COLL large $BYTES &&
	ways 0 >"$TEST_TMP/w0" && ways 1 >"$TEST_TMP/w1" &&
	test -s "$TEST_TMP/w0" && cmp "$TEST_TMP/w0" "$TEST_TMP/w1"
'
test_expect_success 'LOOM_STAGED=maybe: a warning that names it, and the collectives still right' '
	LOOM_STAGED=maybe ranks_pass 2 "all checks passed (2 ranks)" env_srun -N1 -n2 -- $COLL large $((2 * 1024 * 1024 + 3)) &&
	grep "LOOM_STAGED=maybe: not auto, 1, stream or 0" "$TEST_TMP/o"
'
test_done
