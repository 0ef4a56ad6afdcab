#!/bin/sh
# The container image, built and run: contrib/container/build makes the
# Debian 12 CPU image (layers cached by the engine, the Debian base made
# once), two containers on one container network are two "nodes" of a
# 2-rank loom job started with the environment loom.so writes (allreduce,
# checkpoint into a volume both mount), then the launcher command of
# contrib/kubernetes/mpijob.yaml runs in one container against the other
# over the image's ssh set-up with loom's MPI backend.
# Skipped when no container engine runs here, unless LOOM_REQUIRE_CONTAINER=1
# (CI) turns the skip into a failure.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
engine=$LOOM_SRC_DIR/contrib/container/engine

if ! eng=$("$engine" --which 2>"$TEST_TMP/why"); then
	why=$(sed 's/^contrib\/container\/engine: //' "$TEST_TMP/why")
	if [ -n "${LOOM_REQUIRE_CONTAINER:-}" ]; then
		say_tap "1..1"
		say_tap "not ok 1 - container engine required (LOOM_REQUIRE_CONTAINER) but: $why"
		rm -rf "$TEST_TMP"
		exit 1
	fi
	skip_all "$why"
fi

version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$LOOM_BUILD_DIR/config.h")
image=localhost/loom-t8000:latest
id=loom-t8000-$$
net=$id vol=$id n1=$id-n1 n2=$id-n2

cleanup() {
	"$engine" rm -f "$n1" "$n2" >/dev/null 2>&1 || true
	"$engine" network rm "$net" >/dev/null 2>&1 || true
	"$engine" volume rm "$vol" >/dev/null 2>&1 || true
	[ -n "${LOOM_TEST_KEEP:-}" ] || rm -rf "$TEST_TMP"
}
trap cleanup EXIT

# ip CONTAINER: its address on the test's network
ip() {
	"$engine" inspect -f "{{(index .NetworkSettings.Networks \"$net\").IPAddress}}" "$1"
}

test_expect_success "contrib/container/build makes the Debian 12 image with $eng" '
	timeout 1800 "$LOOM_SRC_DIR/contrib/container/build" --tag "$image" >"$TEST_TMP/build.log" 2>&1 ||
		{ tail -n 40 "$TEST_TMP/build.log"; exit 1; }
	tail -n 1 "$TEST_TMP/build.log" | grep "^contrib/container/build: $image built in [0-9]* s, [0-9]* MB$" &&
	"$engine" run --rm "$image" sh -c ". /etc/os-release && echo \$VERSION_CODENAME" >"$TEST_TMP/os" &&
	test "$(cat "$TEST_TMP/os")" = bookworm &&
	"$engine" run --rm "$image" sh -c "cd /usr/local/bin && ls loom-*" >"$TEST_TMP/bins" &&
	printf "%s\n" loom-bench loom-ckpt-bench loom-doctor loom-dp-train loom-hello loom-matmul-io \
		loom-mesh loom-pipeline loom-tp-linear >"$TEST_TMP/want" &&
	diff "$TEST_TMP/want" "$TEST_TMP/bins"
'
[ -r "$TEST_TMP/build.log" ] && say_tap "# $(tail -n 1 "$TEST_TMP/build.log")"

# Two "nodes": sshd as their main process (the MPIJob worker command),
# one ssh key pair for both (the operator's Secret, mounted at /root/.ssh),
# the hostfile the operator writes for the launcher, a shared volume.
test_expect_success 'two containers on one network, each resolving the other by name' '
	mkdir -m 700 "$TEST_TMP/ssh" && mkdir "$TEST_TMP/mpi" &&
	"$engine" run --rm -v "$TEST_TMP/ssh:/k" "$image" \
		ssh-keygen -q -t ed25519 -N "" -C t8000 -f /k/id_ed25519 &&
	cp "$TEST_TMP/ssh/id_ed25519.pub" "$TEST_TMP/ssh/authorized_keys" &&
	printf "n1 slots=1\nn2 slots=1\n" >"$TEST_TMP/mpi/hostfile" &&
	"$engine" network create "$net" >/dev/null &&
	"$engine" volume create "$vol" >/dev/null &&
	"$engine" run -d --name "$n1" --hostname n1 --network "$net" -v "$vol:/ckpt" \
		-v "$TEST_TMP/ssh:/root/.ssh:ro" -v "$TEST_TMP/mpi:/etc/mpi:ro" "$image" loom-sshd >/dev/null &&
	ip1=$(ip "$n1") &&
	"$engine" run -d --name "$n2" --hostname n2 --network "$net" -v "$vol:/ckpt" \
		-v "$TEST_TMP/ssh:/root/.ssh:ro" --add-host "n1:$ip1" "$image" loom-sshd >/dev/null &&
	ip2=$(ip "$n2") &&
	"$engine" exec "$n1" sh -c "echo \"$ip2 n2\" >>/etc/hosts" &&
	"$engine" exec "$n1" getent hosts n2 | grep "^$ip2 " &&
	"$engine" exec "$n2" getent hosts n1 | grep "^$ip1 "
'

# rank R in container C, with the torch-mode environment of
# docs/environment.md (one task per node) and the job's secret, which a
# launcher other than srun makes itself: 32 hex digits, the same on both
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d " \n")
rank() {
	timeout 300 "$engine" exec -e RANK="$1" -e WORLD_SIZE=2 -e LOCAL_RANK=0 -e LOCAL_WORLD_SIZE=1 \
		-e NODE_RANK="$1" -e GROUP_RANK="$1" -e MASTER_ADDR=n1 -e MASTER_PORT=29500 \
		-e LOOM_PLUGIN_VERSION="$version" -e LOOM_ENV_MODE=torch -e LOOM_CKPT_DIR=/ckpt \
		-e LOOM_JOB_SECRET="$secret" "$2" loom-hello
}

test_expect_success 'a 2-rank job across the containers: allreduce and checkpoint round trip' '
	rank 0 "$n1" >"$TEST_TMP/r0" 2>&1 & p0=$! &&
	rc1=0 && rank 1 "$n2" >"$TEST_TMP/r1" 2>&1 || rc1=$? &&
	rc0=0 && wait $p0 || rc0=$? &&
	cat "$TEST_TMP/r0" "$TEST_TMP/r1" &&
	test $rc0 = 0 && test $rc1 = 0 &&
	grep -qx "loom $version (plugin $version, env torch): 2 ranks" "$TEST_TMP/r0" &&
	grep "^  rank " "$TEST_TMP/r0" | sed "s/ cpus .* master / master /" >"$TEST_TMP/lines" &&
	printf "  rank %s master n1:29500 | world native via env, peers tcp:1\n" \
		"0/2 local 0/1 node ?" "1/2 local 0/1 node ?" >"$TEST_TMP/want" &&
	diff "$TEST_TMP/want" "$TEST_TMP/lines" &&
	grep -q "^allreduce: 1048576 float32 over 2 ranks in [0-9.]* ms: every element as expected$" "$TEST_TMP/r0" &&
	grep -q "^checkpoint: saved and restored step 1 in /ckpt in [0-9.]* s$" "$TEST_TMP/r0" &&
	test "$(tail -n 1 "$TEST_TMP/r0")" = "PASS: loom-hello, 2 ranks" &&
	! grep "LOOM_JOB_SECRET" "$TEST_TMP/r0" &&
	test ! -s "$TEST_TMP/r1"
'

# The checkpoint, read back from the volume in the other container: one
# file written by both nodes (an aggregator on each), holding 0..8191
test_expect_success 'the checkpoint in the shared volume holds both ranks'"'"' halves' '
	test "$("$engine" exec "$n2" cat /ckpt/latest)" = step-1 &&
	"$engine" exec "$n2" cat /ckpt/step-1/MANIFEST >"$TEST_TMP/manifest" &&
	cat "$TEST_TMP/manifest" &&
	grep -qx "step 1" "$TEST_TMP/manifest" &&
	grep -q "^writer job=.* ranks=2 aggregators=2 mode=two-phase$" "$TEST_TMP/manifest" &&
	grep -q "^tensor hello dtype float32 shape 8192 bytes 32768 file t0.bin sum [0-9a-f]*$" "$TEST_TMP/manifest" &&
	"$engine" exec "$n2" od -An -v -tf4 /ckpt/step-1/t0.bin |
		awk "{ for (i = 1; i <= NF; i++) print \$i + 0 }" >"$TEST_TMP/values" &&
	seq 0 8191 >"$TEST_TMP/want" &&
	cmp "$TEST_TMP/want" "$TEST_TMP/values"
'

# The MPIJob launcher's command, taken from the manifest: 16 ranks (2
# workers x 8 slots) become 2 (x 1), NCCL (no GPU here) becomes loom's MPI
# backend, sizes up to 1M instead of 1G, and --check.
test_expect_success 'the MPIJob launcher command runs across the containers with the MPI backend' '
	python3 - "$LOOM_SRC_DIR/contrib/kubernetes/mpijob.yaml" >"$TEST_TMP/cmd" <<-\EOF &&
	import sys, yaml
	job = yaml.safe_load(open(sys.argv[1]))
	spec = job["spec"]
	workers = spec["mpiReplicaSpecs"]["Worker"]["replicas"]
	cmd = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"]
	def swap(old, new):
	    i = cmd.index(old)
	    cmd[i] = new
	    return i
	assert cmd[0] == "mpirun", cmd
	np = cmd.index("-np") + 1
	assert int(cmd[np]) == workers * spec["slotsPerWorker"], cmd
	cmd[np] = str(workers)
	swap("LOOM_BACKEND=nccl", "LOOM_BACKEND=mpi")
	assert cmd[swap("1G", "1M") - 1] == "-e", cmd
	print("\n".join(cmd + ["-c", "1"]))
	EOF
	cat "$TEST_TMP/cmd" &&
	timeout 120 "$engine" exec "$n1" sh -c "until ssh -o BatchMode=yes n2 true; do sleep 1; done" &&
	timeout 120 "$engine" exec -e OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile "$n1" \
		mpirun --allow-run-as-root -np 2 hostname >"$TEST_TMP/hosts" &&
	test "$(sort "$TEST_TMP/hosts" | tr "\n" " ")" = "n1 n2 " &&
	set -- && while IFS= read -r a; do set -- "$@" "$a"; done <"$TEST_TMP/cmd" &&
	timeout 300 "$engine" exec -e OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile "$n1" \
		"$@" >"$TEST_TMP/bench" 2>&1 &&
	cat "$TEST_TMP/bench" &&
	grep -q "^# loom-bench $version: allreduce, 2 ranks, backend mpi, dtype float32" "$TEST_TMP/bench" &&
	test "$(grep -c "^ *[0-9]" "$TEST_TMP/bench")" = 18 &&
	grep -q "^ *1048576 *262144 *float32 *sum .* 0$" "$TEST_TMP/bench" &&
	grep -qx "# Wrong elements       : 0 OK" "$TEST_TMP/bench"
'
test_done
