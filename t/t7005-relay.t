#!/bin/sh
# A relay without the secret (issue 43 item 1; docs/security.md): another
# user (nobody) binds MASTER_ADDR:MASTER_PORT before rank 0, takes the
# first rank that dials, dials the real rank 0 from 127.0.0.2 and passes
# the challenge and the signed hello both ways (t/security/relay.py). The
# hello is bound to the connection the rank made, so rank 0 refuses it and
# logs a relay; the relay never gets rank 0's answer (the table) and never
# stands on the mesh; no rank computes a wrong result and nothing hangs.
# Flat (LOOM_BOOTSTRAP_TREE=0) and by node (-N2 -n4: a node leader's group
# hello is relayed); rank 0 starts late, as a wrapper holds it back. Under
# PMIx there is no MASTER_PORT: the relay crosses two connections to rank
# 0's mesh listener, each one's challenge as the other's hello.
#
# The relayed rank loses that connection: rank 0 closes a relayed hello
# without a word, the relay passes the close on, and the rank dials rank
# 0 again (as after a flood), now straight: the job forms and is right.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_plugin
test_need_cluster
VICTIM=$LOOM_BUILD_DIR/t/security/victim
RELAY=$LOOM_SRC_DIR/t/security/relay.py
as_nobody() { runuser -u nobody -- "$@"; }

# the wrapper each task runs: the first writes MASTER_ADDR's address and
# MASTER_PORT for the relay; every task waits for the relay to listen,
# rank 0 three seconds more, then runs the victim
cat >"$TEST_TMP/wrap.sh" <<EOF
#!/bin/sh
D=\$1; shift
ip=\$(getent ahostsv4 "\$MASTER_ADDR" | awk 'NR == 1 {print \$1}')
[ -f "\$D/env" ] || { echo "\${ip:-127.0.0.1} \$MASTER_PORT" >"\$D/env.\$\$" && mv "\$D/env.\$\$" "\$D/env"; }
i=0; while [ ! -f "\$D/ready" ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i + 1)); done
[ "\$RANK" = 0 ] && sleep 3
exec "\$@"
EOF
chmod 755 "$TEST_TMP/wrap.sh"

# relay_job ARGS...: the job under the relay; RC, $TEST_TMP/job.{out,err}, relay.out
relay_job() {
	D=$TEST_TMP/relay.$$
	rm -rf "$D" && mkdir -p "$D" && chmod 777 "$D"
	as_nobody timeout 100 python3 "$RELAY" env "$D" >"$TEST_TMP/relay.out" 2>&1 &
	RPID=$!
	LOOM_BOOTSTRAP_TIMEOUT=25 timeout 90 srun "$@" "$TEST_TMP/wrap.sh" "$D" "$VICTIM" \
		>"$TEST_TMP/job.out" 2>"$TEST_TMP/job.err" && RC=0 || RC=$?
	wait $RPID || true
	echo "--- relay"; cat "$TEST_TMP/relay.out"
	echo "--- job (exit $RC)"; cat "$TEST_TMP/job.out"; grep -v "^srun: " "$TEST_TMP/job.err" | head -30
	test $RC != 124 || { echo "the job did not end within 90 s"; return 1; }
}

# the relay was refused as one, got nothing past the hello, never reached the mesh
relay_refused() {
	grep -q "refused a connection from 127.0.0.2:[0-9]*: the peer (rank $1) saw the connection as .*, this side as 127.0.0.2:.*: a relay? refused" "$TEST_TMP/job.err" &&
	grep -q "^relay: refused" "$TEST_TMP/relay.out" &&
	! grep -q "answered\|on the mesh" "$TEST_TMP/relay.out"
}

# every rank right: the relayed rank, whose connection rank 0 closed
# without a word, dialed rank 0 again; no rank with a wrong result
outcome() {
	! grep -q "WRONG" "$TEST_TMP/job.out" &&
	test $RC = 0 &&
	test $(grep -c "^rank [0-9]*: allreduce right ($1 ranks)\$" "$TEST_TMP/job.out") = $1
}

test_expect_success 'flat (LOOM_BOOTSTRAP_TREE=0), rank 0 late: the relayed hello is refused as a relay, the relay never gets the table nor the mesh' '
	LOOM_BOOTSTRAP_TREE=0 relay_job --loom-env=torch -N2 -n2 && relay_refused 1 && outcome 2
'

test_expect_success 'by node (-N2 -n4), rank 0 late: the relayed group hello of node 2s leader is refused as a relay' '
	relay_job --loom-env=torch -N2 -n4 && relay_refused 2 && outcome 4
'

if grep -q "^#define HAVE_PMIX 1" "$LOOM_BUILD_DIR/config.h"; then
test_expect_success 'PMIx: two connections to rank 0s mesh listener, each ones challenge passed to the other: both refused, the job is right' '
	H=$TEST_TMP/hold.$$
	rm -rf "$H" && mkdir -p "$H" &&
	{ LOOM_BOOTSTRAP_TIMEOUT=60 timeout 90 srun --mpi=pmix -N2 -n2 "$VICTIM" --hold "$H" --linger "$H" \
		>"$TEST_TMP/job.out" 2>"$TEST_TMP/job.err" & } &&
	JOB=$! &&
	timeout 60 sh -c "while [ ! -f $H/rank0 ]; do sleep 0.1; done" &&
	PID0=$(awk "{print \$2}" "$H/rank0") &&
	mesh_port() { ss -Htlnp | grep "pid=$PID0," | awk "{print \$4}" | grep -v "^0.0.0.0:\|^\*:\|^\[" | head -1; } &&
	i=0; while [ -z "$(mesh_port)" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done &&
	L=$(mesh_port) && test -n "$L" &&
	echo "rank 0 mesh listener: $L" &&
	{ as_nobody timeout 60 python3 "$RELAY" mesh "$L" >"$TEST_TMP/relay.out" 2>&1 & } &&
	RPID=$! && sleep 1 &&
	touch "$H/go" &&
	# the ranks stay (after their allreduce) until the relay has its
	# verdict: a close it sees is rank 0 refusing, not rank 0 gone
	timeout 60 sh -c "until grep -q \"^relay: \(refused\|crossed\)\" $TEST_TMP/relay.out; do sleep 0.1; done" ||
		echo "the relay gave no verdict within 60 s"
	touch "$H/end" && wait $JOB && RC=0 || RC=$?
	wait $RPID || true
	cat "$TEST_TMP/relay.out" "$TEST_TMP/job.out"; grep -v "^srun: " "$TEST_TMP/job.err" | head -20
	test $RC = 0 && grep -q "^relay: refused: 2 of 2" "$TEST_TMP/relay.out" &&
	test $(grep -c "^rank [01]: allreduce right (2 ranks)\$" "$TEST_TMP/job.out") = 2 &&
	test $(grep -c "refused a connection from 127.0.0.2:" "$TEST_TMP/job.err") -ge 2
'
else
	test_skip 'PMIx: a relay on the mesh listeners' 'libloom built without PMIx'
fi
test_done
