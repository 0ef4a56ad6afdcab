#!/bin/sh
# The env rendezvous by node (docs/scale.md) on the live two-node cluster,
# loom.so in the plugstack (it sets LOCAL_RANK / LOCAL_WORLD_SIZE), srun
# without --mpi=pmix: each node's ranks meet their LOCAL_RANK 0 on an
# abstract Unix socket and rank 0 takes one connection per other node
# (its LOOM_DEBUG=info line says how many, of which kind); the flat hello
# still works (LOOM_BOOTSTRAP_TREE=0, no LOCAL_RANK) and mixes with the
# groups; rank 0 sends the table over 4 connections only, the rest take
# it down a 4-ary tree of its connections (three levels at 63); a local rank with another LOOM_JOB_SECRET, and a process of
# another user on the node's socket name, make the step fail at once,
# named, instead of at LOOM_BOOTSTRAP_TIMEOUT (100 s here; "at once" is
# under 40 s, however loaded the host).
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
test_need_plugin
test_need_cluster
SC=$LOOM_BUILD_DIR/t/runtime/scale-check
NAME=$LOOM_BUILD_DIR/t/runtime/node-socket-name
SQUAT=$LOOM_SRC_DIR/t/security/squat.py
export LOOM_BOOTSTRAP_TIMEOUT=100

# took N CONNS LEADERS SINGLES: rank 0's line about what it accepted
took() {
	grep "rank 0 took $1 ranks over $2 connections ($3 node leaders, $4 single ranks)" "$TEST_TMP/o" ||
		{ grep "rank 0 took" "$TEST_TMP/o"; echo "expected: $1 ranks over $2 connections ($3, $4)"; return 1; }
}

# fails_fast CMD...: CMD fails within 40 s; its output in $TEST_TMP/o
fails_fast() {
	local t0 rc=0
	t0=$(date +%s)
	"$@" >"$TEST_TMP/o" 2>&1 || rc=$?
	head -30 "$TEST_TMP/o"
	test $rc != 0 || { echo "it succeeded"; return 1; }
	test $(( $(date +%s) - t0 )) -lt 40 || { echo "it took $(( $(date +%s) - t0 )) s: not fast"; return 1; }
	! grep -q "scale-check init passed" "$TEST_TMP/o"
}

for n in 16 64; do
	test_expect_success "srun -O -N2 -n$n (env bootstrap): init and an allreduce; rank 0 took 1 node leader's connection" "
		LOOM_DEBUG=info ranks_pass $n 'scale-check init passed' t_srun -O -N2 -n$n \$SC init &&
		took $((n / 2)) 1 1 0 &&
		test \$(grep -c 'LOCAL_RANK 0 listens on @loom-node-' \$TEST_TMP/o) = 2
	"
done

# fanned N DIRECT CONNS: rank 0 sent the N-entry table itself over DIRECT
# of its CONNS connections, the others took it down the tree
fanned() {
	grep "rank 0 sent the $1-entry table over $2 of its $3 connections; the others take it down a tree of fan-out 4" "$TEST_TMP/o" ||
		{ grep "rank 0 sent" "$TEST_TMP/o"; echo "expected: $1-entry table over $2 of $3"; return 1; }
}

test_expect_success 'LOOM_BOOTSTRAP_TREE=0: every rank says hello to rank 0 itself (flat); rank 0 sends the table 4 times, not 15' '
	LOOM_BOOTSTRAP_TREE=0 LOOM_DEBUG=info ranks_pass 16 "scale-check init passed" t_srun -O -N2 -n16 $SC init &&
	took 15 15 0 15 && fanned 16 4 15 && ! grep -q "listens on @loom-node-" "$TEST_TMP/o"
'

# 63 connections in a 4-ary tree: depth 3 (4 + 16 + 43); every rank must
# get the same right table for the allreduce across both nodes to pass
test_expect_success 'flat at 64 ranks: the table goes down three levels of the fan-out, every rank gets it' '
	LOOM_BOOTSTRAP_TREE=0 LOOM_DEBUG=info ranks_pass 64 "scale-check init passed" t_srun -O -N2 -n64 $SC init &&
	took 63 63 0 63 && fanned 64 4 63 && ! grep -E "error|does not match" "$TEST_TMP/o"
'

test_expect_success 'without LOCAL_RANK (env -u): flat' '
	LOOM_DEBUG=info ranks_pass 16 "scale-check init passed" \
		t_srun -O -N2 -n16 env -u LOCAL_RANK $SC init &&
	took 15 15 0 15
'

test_expect_success 'mixed: n1 by node, n2 without LOCAL_RANK: one group and 8 single hellos' '
	LOOM_DEBUG=info ranks_pass 16 "scale-check init passed" \
		t_srun -O -N2 -n16 sh -c "[ \$SLURMD_NODENAME = n2 ] && unset LOCAL_RANK; exec \"\$@\"" sh $SC init &&
	took 8 8 0 8 &&
	LOOM_DEBUG=info ranks_pass 16 "scale-check init passed" \
		t_srun -O -N2 -n16 sh -c "[ \$SLURMD_NODENAME = n1 ] && unset LOCAL_RANK; exec \"\$@\"" sh $SC init &&
	took 15 8 1 7
'

test_expect_success 'a local rank with another LOOM_JOB_SECRET: its LOCAL_RANK 0 refuses it, naming the node and socket; the step fails at once' '
	fails_fast t_srun -O -N2 -n16 sh -c \
		"[ \$SLURM_PROCID = 13 ] && export LOOM_JOB_SECRET=00112233445566778899aabbccddeeff; exec \"\$@\"" sh $SC init &&
	grep "node n2 rendezvous @loom-node-[0-9a-f]*: local process [0-9]*: it does not hold this job.s secret" "$TEST_TMP/o" &&
	grep "node n2: LOCAL_RANK 0 on @loom-node-[0-9a-f]* refused us" "$TEST_TMP/o" &&
	grep "node n2: its LOCAL_RANK 0 (rank 8) gave up" "$TEST_TMP/o"
'

test_expect_success 'LOCAL_WORLD_SIZE that differs within a node: named, the step fails at once' '
	fails_fast t_srun -O -N2 -n16 sh -c \
		"[ \$SLURM_PROCID = 10 ] && export LOCAL_WORLD_SIZE=9; exec \"\$@\"" sh $SC init &&
	grep "node n2: LOCAL_WORLD_SIZE differs between the ranks of this node: rank 10 (LOCAL_RANK 2) says 9, LOCAL_RANK 0 (rank 8) says 8" "$TEST_TMP/o"
'

# squat NAME: user nobody holds the abstract socket NAME; SQPID its pid,
# fd 7 its stdin (closing it ends it)
squat() {
	FIFO=$TEST_TMP/squat.in
	rm -f "$FIFO" && mkfifo "$FIFO" || return 1
	runuser -u nobody -- python3 "$SQUAT" "$1" <"$FIFO" >"$TEST_TMP/squat.out" 2>&1 &
	exec 7>"$FIFO"
	timeout 30 sh -c "until grep -q ^ready $TEST_TMP/squat.out; do sleep 0.1; done" ||
		{ cat "$TEST_TMP/squat.out"; return 1; }
	SQPID=$(awk '/^ready/ {print $2}' "$TEST_TMP/squat.out")
}

unsquat() {
	exec 7>&-
	wait
	cat "$TEST_TMP/squat.out"
}

test_expect_success 'another user (nobody) holds node n2s socket name: the step fails at once, naming it, and sends it nothing' '
	port=$(free_port) && name=$($NAME n1 $port n2) && echo "$name" && squat "$name" &&
	{ fails_fast t_srun -O -N2 -n16 sh -c "MASTER_ADDR=n1 MASTER_PORT=$port exec \"\$@\"" sh $SC init; rc=$?; } &&
	unsquat && test $rc = 0 &&
	grep "node n2: LOCAL_RANK 0 cannot listen on the node rendezvous @$name: process $SQPID of uid 65534 holds the name" "$TEST_TMP/o" &&
	grep "node n2: the node rendezvous @$name is held by process $SQPID of uid 65534, not by this job.s LOCAL_RANK 0: another process holds the name" "$TEST_TMP/o" &&
	grep "^squatter: [0-9]* connections, 0 bytes" "$TEST_TMP/squat.out"
'
test_done
