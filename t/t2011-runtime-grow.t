#!/bin/sh
# Growing a communicator on the live cluster (docs/fault-tolerance.md,
# "Grow"): a job of three nodes runs its world on two (step 0); the
# newcomers come on the third with the one srun line
#   srun --jobid=$SLURM_JOB_ID --overlap -N1 -n K -w n3 --loom-join PROG
# and loom_init gives them the grown communicator, the members' ranks
# first: sums on it, a vector allreduce (shared memory and TCP) and a
# split of it are right on every process. Once with nobody lost; once
# after both ranks of n2 died by SIGKILL at a random iteration and the
# survivors shrank (then grow by 2). loom-dp-train --heal
# --spare-wait takes two spares after a node died, or goes on with fewer
# ranks when none comes, bit-identical either way. Without a readable munge key a
# --loom-join step fails at once, naming the file, and the other steps
# keep srun's random secret. LOOM_TIMEOUT=60 bounds every wait
# and timeout each srun and the job: a hang fails, it never passes.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
. "$LOOM_SRC_DIR/t/runtime/lib.sh"
LOOM_TEST_NODES=3
export LOOM_TEST_NODES
test_need_plugin
test_need_cluster
. "$LOOM_SRC_DIR/t/lib/jobs.sh"
GROW=$LOOM_BUILD_DIR/t/runtime/grow-check

# the job: its world on n1 and n2 (step 0), n3 kept for the newcomers
cat >"$TEST_TMP/job.sh" <<EOF
#!/bin/sh
timeout -k 10 240 srun \${GROW_MPI:+--mpi=\$GROW_MPI} -N2 -n4 --ntasks-per-node=2 -w n1,n2 -K0 --no-kill $GROW "\$@"
EOF
chmod +x "$TEST_TMP/job.sh"

# grow_run NAME NNEW ARGS...: the job with the world's ARGS; once rank 0
# runs, the NNEW newcomers' srun line; then the job's end
grow_run() {
	local name=$1 nnew=$2 job; shift 2
	job=$(LOOM_TIMEOUT=60 sbatch --parsable -N3 --ntasks-per-node=2 --no-kill \
		-o "$TEST_TMP/$name.out" "$TEST_TMP/job.sh" "$@") && echo "job $job" &&
	wait_for "$TEST_TMP/$name.out" "rank 0: master port" 120 &&
	{ LOOM_TIMEOUT=60 srun --jobid="$job" --overlap -N1 -n"$nnew" -w n3 --loom-join $GROW join \
		>"$TEST_TMP/$name.join" 2>&1 || echo "the newcomers' srun exited $?"; } &&
	wait_state "$job" 240 COMPLETED FAILED CANCELLED TIMEOUT &&
	cat "$TEST_TMP/$name.out" "$TEST_TMP/$name.join"
}

# grown NAME M N SUM: M members and N - M newcomers (ranks M..N-1)
# passed every check on the grown communicator of N, whose sum is SUM
grown() {
	test "$(grep -Ec "^rank [0-9]+: grown: rank [0-9]+ of $3 sum $4 want $4 ok\$" "$TEST_TMP/$1.out")" -eq "$2" &&
	test "$(grep -Ec "^new [0-9]+: grown: rank [0-9]+ of $3 sum $4 want $4 ok\$" "$TEST_TMP/$1.join")" -eq $(($3 - $2)) &&
	for r in $(seq "$2" $(($3 - 1))); do grep -q "^new $r: grown: rank $r of $3 " "$TEST_TMP/$1.join" || return 1; done &&
	test "$(cat "$TEST_TMP/$1.out" "$TEST_TMP/$1.join" | grep -Ec ': grown-vec: .* ok$')" -eq "$3" &&
	test "$(cat "$TEST_TMP/$1.out" "$TEST_TMP/$1.join" | grep -Ec ': grown-split: .* ok$')" -eq "$3" &&
	test "$(grep -Ec '^rank [0-9]+: done$' "$TEST_TMP/$1.out")" -eq "$2" &&
	test "$(grep -Ec '^new [0-9]+: done$' "$TEST_TMP/$1.join")" -eq $(($3 - $2)) &&
	! cat "$TEST_TMP/$1.out" "$TEST_TMP/$1.join" | grep -E 'FAIL|WRONG'
}

test_expect_success '4 ranks on n1,n2 grow by 2 newcomers on n3: 6 ranks, right sums' '
	grow_run plain 2 grow 2 &&
	grown plain 4 6 21
'
# a world formed over PMIx holds the key PMIx gave it: rank 0 publishes
# the one of loom.so's LOOM_JOB_SECRET, which the newcomers prove; its
# engine may listen elsewhere than its node's name leads (here: it does)
if grep -q "^#define HAVE_PMIX 1" "$LOOM_BUILD_DIR/config.h"; then
test_expect_success 'a world formed over PMIx (srun --mpi=pmix) grows by 2 newcomers on n3' '
	( GROW_MPI=pmix LOOM_DEBUG=info && export GROW_MPI LOOM_DEBUG && grow_run pmix 2 grow 2 ) &&
	test "$(grep -c "bootstrap pmix: PMIx_Init" "$TEST_TMP/pmix.out")" -eq 4 &&
	grown pmix 4 6 21
'
else
	test_skip 'a world formed over PMIx grows' 'libloom built without PMIx'
fi
test_expect_success 'both ranks of n2 killed: the 2 survivors shrink, then grow by 2 on n3' '
	it=$(( $(loom_rand 39) + 1 )) && echo "iteration $it" &&
	grow_run healed 2 kill 2,3 $it 2 &&
	test "$(grep -Ec "^rank [01]: shrunk: rank [01] of 2 sum 3 want 3 ok\$" "$TEST_TMP/healed.out")" -eq 2 &&
	grown healed 2 4 10
'
# loom-dp-train --heal --spare-wait: both ranks of n3 die at a random
# step; the survivors shrink and wait for 2 spares, which the test starts
# on n3 with the one srun line; the 6 ranks finish with the parameters of
# one process (the rank count does not change them)
DP=$LOOM_BUILD_DIR/examples/loom-dp-train
ARGS="--heal --steps 40 --hidden 32 --ckpt-every 5 --log-every 10 --step-ms 20"
digest() {
	sed -n 's/.*final parameters: fnv1a64 \([0-9a-f]*\) .*/\1/p' "$1"
}
cat >"$TEST_TMP/heal.sh" <<EOF
#!/bin/sh
timeout -k 10 300 srun -N3 -n6 --ntasks-per-node=2 -K0 --no-kill $DP "\$@"
EOF
chmod +x "$TEST_TMP/heal.sh"
test_expect_success 'loom-dp-train --heal takes 2 spares after n3 dies: 6 ranks end bit-identical' '
	$DP $ARGS --step-ms 0 >"$TEST_TMP/one.out" 2>&1 && test -n "$(digest "$TEST_TMP/one.out")" &&
	st=$(( 3 + $(loom_rand 32) )) && echo "kill 4,5 at step $((st + 1))" && mkdir -p "$TEST_TMP/ck" &&
	job=$(LOOM_TIMEOUT=60 sbatch --parsable -N3 --ntasks-per-node=2 --no-kill -o "$TEST_TMP/heal.out" \
		"$TEST_TMP/heal.sh" $ARGS --ckpt "$TEST_TMP/ck" --kill-at $st:4,5 --spare-wait 120) &&
	wait_for "$TEST_TMP/heal.out" "heal: ranks 4,5 lost; waiting up to 120 s for 2 spare" 240 &&
	{ LOOM_TIMEOUT=60 srun --jobid="$job" --overlap -N1 -n2 -w n3 --loom-join $DP $ARGS --ckpt "$TEST_TMP/ck" \
		>"$TEST_TMP/spare.out" 2>&1 || echo "the spares srun exited $?"; } &&
	wait_state "$job" 240 COMPLETED FAILED CANCELLED TIMEOUT &&
	cat "$TEST_TMP/heal.out" "$TEST_TMP/spare.out" &&
	grep -q "heal: .* at step [0-9]*; ranks 4,5 of 6 lost; 2 spare(s) joined; 6 ranks go on" "$TEST_TMP/heal.out" &&
	grep -q "heal: restored step [0-9]* on the 6 ranks, spares included," "$TEST_TMP/heal.out" &&
	grep -q "rank 4: joined as a spare: 6 ranks" "$TEST_TMP/spare.out" &&
	grep -q "rank 5: joined as a spare: 6 ranks" "$TEST_TMP/spare.out" &&
	grep -q "PASS: loss curve and final parameters bit-identical" "$TEST_TMP/heal.out" &&
	grep -q "after 40 steps on 6 ranks (1 heals)" "$TEST_TMP/heal.out" &&
	test "$(digest "$TEST_TMP/heal.out")" = "$(digest "$TEST_TMP/one.out")"
'
test_expect_success 'loom-dp-train --heal --spare-wait 5 and no spare: 4 ranks go on, bit-identical' '
	st=$(( 3 + $(loom_rand 32) )) && echo "kill 4,5 at step $((st + 1))" && mkdir -p "$TEST_TMP/ck2" &&
	{ LOOM_TIMEOUT=60 srun -N3 -n6 --ntasks-per-node=2 -K0 --no-kill $DP $ARGS --ckpt "$TEST_TMP/ck2" \
		--kill-at $st:4,5 --spare-wait 5 >"$TEST_TMP/nospare.out" 2>&1 || :; } &&
	cat "$TEST_TMP/nospare.out" &&
	grep -q "heal: no spare joined (operation timed out" "$TEST_TMP/nospare.out" &&
	grep -q "heal: .* at step [0-9]*; ranks 4,5 of 6 lost; 4 ranks go on" "$TEST_TMP/nospare.out" &&
	grep -q "PASS: loss curve and final parameters bit-identical" "$TEST_TMP/nospare.out" &&
	grep -q "after 40 steps on 4 ranks (1 heals)" "$TEST_TMP/nospare.out" &&
	test "$(digest "$TEST_TMP/nospare.out")" = "$(digest "$TEST_TMP/one.out")"
'
test_expect_success 'examples/dp_train_heal.sbatch with LOOM_HEAL_SPARE=1: the spare node takes over, bit-identical' '
	st=$(( 3 + $(loom_rand 32) )) && echo "kill 2,3 at step $((st + 1))" &&
	mkdir -p "$TEST_TMP/sb" &&
	(cd "$TEST_TMP/sb" && PATH=$LOOM_BUILD_DIR/examples:$PATH LOOM_HEAL_SPARE=1 LOOM_TIMEOUT=60 \
		timeout -k 10 400 sbatch --wait -o "$TEST_TMP/sb/loom-dp-heal-%j.out" \
		"$LOOM_SRC_DIR/examples/dp_train_heal.sbatch" \
		$ARGS --kill-at $st:2,3 >sbatch.out 2>&1 || :) &&
	cat "$TEST_TMP"/sb/sbatch.out "$TEST_TMP"/sb/loom-dp-heal-*.out &&
	out=$(ls "$TEST_TMP"/sb/loom-dp-heal-*.out) &&
	grep -q "heal: .* at step [0-9]*; ranks 2,3 of 4 lost; 2 spare(s) joined; 4 ranks go on" $out &&
	grep -q "PASS: loss curve and final parameters bit-identical" $out &&
	grep -q "after 40 steps on 4 ranks (1 heals)" $out &&
	test "$(digest $out)" = "$(digest "$TEST_TMP/one.out")"
'
test_expect_success 'a step'"'"'s secret comes from the job key (LOOM_JOB_SECRET_BY=job-key)' '
	srun -N1 -n1 sh -c "echo \$LOOM_JOB_SECRET_BY" >"$TEST_TMP/by.out" 2>&1 &&
	cat "$TEST_TMP/by.out" && grep -qx "job-key" "$TEST_TMP/by.out"
'
test_expect_success 'an unreadable munge key: --loom-join fails naming the file; other steps keep srun'"'"'s secret' '
	cluster_plugstack "munge_key=/nonexistent/munge.key" &&
	{ srun -N1 -n1 --loom-join $GROW join >"$TEST_TMP/nokey.out" 2>&1 && rc=0 || rc=$?; } &&
	srun -N1 -n1 sh -c "echo \$LOOM_JOB_SECRET_BY" >"$TEST_TMP/nokey-by.out" 2>&1 &&
	cluster_plugstack "" &&
	cat "$TEST_TMP/nokey.out" "$TEST_TMP/nokey-by.out" && echo "exit $rc" &&
	test "$rc" != 0 &&
	grep -q "loom: --loom-join: cannot read the munge key /nonexistent/munge.key" "$TEST_TMP/nokey.out" &&
	grep -q "munge_key=PATH" "$TEST_TMP/nokey.out" &&
	! grep -q ": grown:" "$TEST_TMP/nokey.out" &&
	grep -qx srun "$TEST_TMP/nokey-by.out"
'
test_done
