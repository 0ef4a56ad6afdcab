#!/bin/sh
# libloom communicators and non-blocking operations on the live cluster:
# split (color/key, LOOM_UNDEFINED), dup, mesh membership (tensor-parallel
# pairs inside a node), an iallreduce that completes while its caller
# makes no loom call (background progress), two threads on two
# communicators at once; every srun must also exit 0.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
test_need_cluster
cluster_plugstack none

for tr in auto tcp; do
	test_expect_success "srun -N2 -n4 ($tr): split, dup and mesh membership" "
		LOOM_TRANSPORT=$tr ranks_pass 4 'split/mesh checks passed' env_srun -N2 -n4 -- \$COLL split
	"
done
test_expect_success 'srun -N1 -n2: split and mesh inside one node' '
	ranks_pass 2 "split/mesh checks passed" env_srun -N1 -n2 -- $COLL split
'
# background progress without timing: rank 0 makes no loom call until the
# other three left markers saying that they finished the iallreduce and an
# ibarrier queued behind it (which needs rank 0's engine to have finished
# the iallreduce); then its first and only loom_test must say done
for tr in auto tcp shm; do
	test_expect_success "srun -N2 -n4 ($tr): iallreduce completes while rank 0 makes no loom call" "
		d=\$(marker_dir) &&
		LOOM_TRANSPORT=$tr ranks_pass 4 'overlap checks passed' env_srun -N2 -n4 -- \$COLL overlap \$d &&
		grep -q '^rank 0: overlap: 3 of 3 other ranks done before its first loom call; one loom_test: done=1\$' \$TEST_TMP/o &&
		test \"\$(ls \$d | tr '\\n' ' ')\" = 'done.1 done.2 done.3 '
	"
done
# regression: a root that broadcast through the shared-memory rings and
# freed its communicator before the others called the broadcast took the
# ring with it ("the node's first rank did not create it in time")
test_expect_success 'srun -N1 -n2 (shm): a broadcast still arrives after its root freed the communicator' '
	d=$(marker_dir) &&
	LOOM_TRANSPORT=shm ranks_pass 2 "early-free checks passed" env_srun -N1 -n2 -- $COLL early-free $d &&
	test "$(ls $d)" = freed.0
'
# ranks that only post (a reduce's other ranks, a broadcast's root) run
# hundreds of operations ahead of their readers, through full fast-box
# rings: they wait for room, never overwrite a box still to be read
test_expect_success 'srun -N1 -n2: reduces and broadcasts with the posters far ahead, every result right' '
	d=$(marker_dir) &&
	ranks_pass 2 "runahead checks passed (400 reduces, 400 broadcasts)" env_srun -N1 -n2 -- $COLL runahead $d &&
	test "$(ls $d | tr "\n" " ")" = "bcast-ahead.1 reduce-ahead.1 "
'
# the same with both ranks on one CPU, where each waits asleep for the
# other at times (it runs the sleeping paths; it did not reproduce on
# demand the hang 4f79d0b fixed, a poster missing room made while its
# reader slept)
test_expect_success 'srun -N1 -n2, both ranks on one CPU: the posters far ahead, every result right' '
	d=$(marker_dir) &&
	LOOM_TIMEOUT=60 ranks_pass 2 "runahead checks passed (400 reduces, 400 broadcasts)" \
		env_srun -N1 -n2 -- taskset -c 0 $COLL runahead $d
'
# the same 800 operations back to back across nodes (the node parts)
test_expect_success 'srun -N2 -n4: 400 reduces and 400 broadcasts back to back, every result right' '
	ranks_pass 4 "runahead checks passed (400 reduces, 400 broadcasts)" env_srun -N2 -n4 -- $COLL runahead -
'
for tr in auto tcp; do
	test_expect_success "srun -N2 -n4 ($tr): two threads, one communicator each, at the same time" "
		LOOM_TRANSPORT=$tr ranks_pass 4 'threads checks passed' env_srun -N2 -n4 -- \$COLL threads
	"
done
# regression: point-to-point sends stay eager. With the TCP rendezvous
# for large messages (041382b) applied to them, a ring of blocking sends
# (each rank sends to its right, then receives from its left) waited for
# receives that come only after the sends
test_expect_success 'srun -N2 -n4: a ring of 4 MiB blocking sends, then receives, completes' '
	LOOM_TIMEOUT=60 ranks_pass 4 "p2p ring of 4194304-byte blocking sends passed" env_srun -N2 -n4 -- $COLL p2p-ring 1048576
'
test_done
