#!/bin/sh
# libloom failure behaviour on the live cluster: a rank that skips a
# collective makes the others time out (LOOM_TIMEOUT) with one line naming
# it; a rank killed with SIGKILL makes the others fail with PEER_LOST, not
# with TIMEOUT (LOOM_TIMEOUT=600 is far beyond srun's outer limit, 180 s,
# so only the loss can end their wait); LOOM_CHECK=1 turns different
# counts into LOOM_ERR_MISMATCH naming the rank; loom_comm_abort from one
# rank fails everyone's pending and later operations; a peer that sends
# more than LOOM_UNEXPECTED_MAX ahead of the receives is dropped.
# Statuses are the verdict, never a measured duration: a run that does not
# end by itself is killed by t_srun's timeout and lacks the status lines.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
test_need_cluster
cluster_plugstack none

# the skipper (rank R) waits, without loom calls, for the others' markers
# (left once their allreduce returned) instead of sleeping
for tr in auto tcp; do
	test_expect_success "timeout ($tr): one rank skips an allreduce, the others get LOOM_ERR_TIMEOUT naming it" "
		d=\$(marker_dir) &&
		rc=0 && LOOM_TRANSPORT=$tr LOOM_TIMEOUT=2 env_srun -N2 -n4 -- \$COLL skip 2 \$d >\$TEST_TMP/o 2>&1 || rc=\$? &&
		cat \$TEST_TMP/o && echo \"srun exit \$rc\" && test \$rc = 0 &&
		test \$(grep -c 'status -4 ' \$TEST_TMP/o) -eq 3 &&
		grep -q '^rank 2: skipped; 3 of 3 others got a status\$' \$TEST_TMP/o &&
		grep -E 'timeout: comm world op allreduce seq 2.* rank 2 never arrived' \$TEST_TMP/o &&
		test \$(grep -c 'error: timeout:' \$TEST_TMP/o) -eq 3
	"
done
if grep -q '^#define HAVE_PMIX 1' "$LOOM_BUILD_DIR/config.h"; then
test_expect_success 'timeout under PMIx, 2 ranks on 2 nodes' '
	d=$(marker_dir) &&
	LOOM_TIMEOUT=2 t_srun --mpi=pmix -N2 -n2 $COLL skip 0 $d >$TEST_TMP/o 2>&1 &&
	cat $TEST_TMP/o &&
	test $(grep -c "status -4 " $TEST_TMP/o) -eq 1 &&
	grep -q "^rank 0: skipped; 1 of 1 others got a status\$" $TEST_TMP/o &&
	grep -E "timeout: comm world op allreduce seq 2 .*rank 0 never arrived" $TEST_TMP/o
'
else
	test_skip 'timeout under PMIx, 2 ranks on 2 nodes' 'libloom built without PMIx'
fi
# srun exits non-zero: the victim died of SIGKILL. Who names it: a rank
# connected to it over TCP ('rank 1 lost') or sharing its node ('rank 1 is
# gone'); under auto only rank 0 is either (connections are made on first
# use, and the hierarchical allreduce keeps rank 1 inside its node)
for tr in auto tcp shm; do
	test_expect_success "peer lost ($tr): kill -9 of one rank, the others fail with PEER_LOST, not TIMEOUT" "
		! LOOM_TRANSPORT=$tr LOOM_TIMEOUT=600 env_srun -N2 -n4 -- \$COLL die 1 >\$TEST_TMP/o 2>&1 &&
		cat \$TEST_TMP/o &&
		test \$(grep -c 'status -5 .* after' \$TEST_TMP/o) -eq 3 &&
		test \$(grep -c 'later op: status -5' \$TEST_TMP/o) -eq 3 &&
		! grep 'status -4 ' \$TEST_TMP/o &&
		grep -Eq 'rank 1 (lost|is gone)' \$TEST_TMP/o
	"
done
# a peer that makes another hold more than LOOM_UNEXPECTED_MAX for
# receives not posted yet is dropped with a line naming it: messages sent
# at once are kept with their bytes; large ones by rendezvous
# (LOOM_P2P_RENDEZVOUS=1 here, the collectives' always) are only
# announced, and the announcements count against the same limit. Rank 0
# sees PEER_LOST; rank 1's announced sends do too
for bytes in 600 65536; do
	# (rank 1's own barrier may complete first: rank 0 sent its half
	# before it read the flood; the run ends by itself either way)
	test_expect_success "a peer sending ahead of the receives past LOOM_UNEXPECTED_MAX is dropped, named ($bytes-byte messages)" "
		{ LOOM_UNEXPECTED_MAX=2000 LOOM_TIMEOUT=600 env_srun -N2 -n2 -- \$COLL flood 1 $bytes >\$TEST_TMP/o 2>&1 || :; } &&
		cat \$TEST_TMP/o &&
		grep -q '^rank 0: barrier: status -5 ' \$TEST_TMP/o &&
		grep -q '^rank 1: barrier: status ' \$TEST_TMP/o &&
		grep -Eq 'rank 1 sent [0-9]* bytes nobody has asked for yet.*LOOM_UNEXPECTED_MAX' \$TEST_TMP/o
	"
done
test_expect_success 'a peer announcing large messages past LOOM_UNEXPECTED_MAX is dropped, named (LOOM_P2P_RENDEZVOUS=1)' '
	{ LOOM_P2P_RENDEZVOUS=1 LOOM_UNEXPECTED_MAX=2000 LOOM_TIMEOUT=600 env_srun -N2 -n2 -- $COLL flood 1 65536 >$TEST_TMP/o 2>&1 || :; } &&
	cat $TEST_TMP/o &&
	grep -q "^rank 0: barrier: status -5 " $TEST_TMP/o &&
	grep -q "^rank 1: sends: status -5 " $TEST_TMP/o &&
	grep -Eq "rank 1 announced more messages nobody has asked for yet.*LOOM_UNEXPECTED_MAX" $TEST_TMP/o
'

test_expect_success 'peer lost inside one node (shm), 600 s timeout' '
	! LOOM_TIMEOUT=600 env_srun -N1 -n2 -- $COLL die 0 >$TEST_TMP/o 2>&1 &&
	cat $TEST_TMP/o &&
	test $(grep -c "status -5 .* after" $TEST_TMP/o) -eq 1 &&
	test $(grep -c "later op: status -5" $TEST_TMP/o) -eq 1
'
# rank R aborts once the others left markers saying their iallreduce is
# posted (it cannot complete: R never joins), so it is truly pending
for tr in auto tcp; do
	test_expect_success "loom_comm_abort ($tr) from one rank: every rank's pending and later ops fail with ABORTED" "
		d=\$(marker_dir) &&
		LOOM_TRANSPORT=$tr LOOM_TIMEOUT=600 ranks_pass 4 'later op: status -9 ' env_srun -N2 -n4 -- \$COLL abort 3 \$d &&
		cat \$TEST_TMP/o &&
		test \$(grep -c 'pending op: status -9 ' \$TEST_TMP/o) -eq 3 &&
		grep -q 'communicator world aborted by rank 3' \$TEST_TMP/o
	"
done
test_expect_success 'LOOM_CHECK=1: a different count gives LOOM_ERR_MISMATCH naming the rank' '
	LOOM_CHECK=1 ranks_pass 4 "next: status 0" env_srun -N2 -n4 -- $COLL mismatch 3 &&
	cat $TEST_TMP/o &&
	test $(grep -c "status -6 " $TEST_TMP/o) -eq 4 &&
	grep -q "LOOM_CHECK: comm world seq 1: ranks 3 differ from rank 0: rank 0 called allreduce(count=10, int32, sum), rank 3 called allreduce(count=12" $TEST_TMP/o
'
# regression: posts of up to 8 bytes take fast-box entries, larger ones the
# boxes; ranks whose counts put them in different ones must each be told
test_expect_success 'one node: 8 B against 16 B in an allreduce gives LOOM_ERR_MISMATCH on both ranks, no wait' '
	LOOM_TIMEOUT=30 env_srun -N1 -n2 -- $COLL mismatch-small 1 >"$TEST_TMP/o" 2>&1;
	cat "$TEST_TMP/o" &&
	test $(grep -c "status -6 " "$TEST_TMP/o") -eq 2 &&
	grep -q "rank 1 posted 16 bytes of a kind-17 operation where 8 bytes" "$TEST_TMP/o" &&
	grep -q "rank 0 posted 8 bytes of a kind-17 operation where 16 bytes" "$TEST_TMP/o"
'
test_done
