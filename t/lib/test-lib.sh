# t/lib/test-lib.sh: sharness-style TAP for loom's shell tests.
#
#   . "$LOOM_SRC_DIR/t/lib/test-lib.sh"
#   test_expect_success 'what it shows' 'commands'
#   test_skip 'what' 'why'          (decided from the build, never a failure)
#   test_done
# Inside a body: test_must_fail_with PATTERN CMD... (CMD fails, its output
# matches PATTERN).
# Each body runs in a subshell under `set -e`: any command that fails
# outside a condition (if, while, &&, ||, !) fails the test, not only the
# last one. Output of failing tests is echoed as TAP diagnostics.
# The scripts are POSIX sh (make check runs them with /bin/sh, dash on
# Debian); `local` is the one extension they use.

: "${LOOM_SRC_DIR:?run through make check (LOOM_SRC_DIR unset)}"
: "${LOOM_BUILD_DIR:?run through make check (LOOM_BUILD_DIR unset)}"

test_count=0
test_failures=0
TEST_TMP=$(mktemp -d /tmp/loom-test.XXXXXX)
chmod 755 "$TEST_TMP"
export TEST_TMP

say_tap() { printf '%s\n' "$*"; }

skip_all() {
	say_tap "1..0 # SKIP $*"
	rm -rf "$TEST_TMP"
	exit 0
}

# stdout and stderr of the test body land in $TEST_TMP/out. The call must
# stay a plain command: in a condition, the shell would ignore set -e in
# the whole subshell.
_test_run() {
	( set -e; eval "$1" ) >"$TEST_TMP/out" 2>&1
}

test_expect_success() {
	local desc=$1 body=$2 rc
	test_count=$((test_count + 1))
	_test_run "$body"
	rc=$?
	if [ $rc -eq 0 ]; then
		say_tap "ok $test_count - $desc"
	else
		test_failures=$((test_failures + 1))
		say_tap "not ok $test_count - $desc"
		sed -e 's/^/#   /' "$TEST_TMP/out" | head -60
	fi
}

test_skip() {
	test_count=$((test_count + 1))
	say_tap "ok $test_count # SKIP $1 ($2)"
}

test_done() {
	say_tap "1..$test_count"
	[ -n "${LOOM_TEST_KEEP:-}" ] || rm -rf "$TEST_TMP"
	[ $test_failures -eq 0 ]
	exit $?
}

# test_must_fail_with PATTERN CMD...: CMD exits non-zero and its combined
# output matches the extended regex PATTERN.
test_must_fail_with() {
	local pat=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	printf '%s\n' "$out"
	if [ $rc -eq 0 ]; then echo "expected failure, got exit 0"; return 1; fi
	printf '%s\n' "$out" | grep -Eq -- "$pat" || { echo "output lacks /$pat/"; return 1; }
}

# Skip the whole script when this host cannot run a test cluster, unless
# CI demands it (LOOM_REQUIRE_CLUSTER=1 turns a skip into a failure).
# For a script that starts its clusters itself (bench/compare).
test_need_cluster_host() {
	. "$LOOM_SRC_DIR/t/lib/cluster.sh"
	local why
	if why=$(cluster_why_not); then
		if [ -n "${LOOM_REQUIRE_CLUSTER:-}" ]; then
			say_tap "1..1"
			say_tap "not ok 1 - cluster required (LOOM_REQUIRE_CLUSTER) but: $why"
			exit 1
		fi
		skip_all "live Slurm cluster: $why"
	fi
}

# Run a cluster: as test_need_cluster_host, then start one for the script.
test_need_cluster() {
	test_need_cluster_host
	trap 'cluster_cleanup; rm -rf "$TEST_TMP"' EXIT
	if ! cluster_start; then
		cluster_dump_logs
		say_tap "1..1"
		say_tap "not ok 1 - start the test cluster"
		exit 1
	fi
	# a batch job without -o writes its output under the test's directory,
	# not where make check runs (make distcheck checks that)
	SBATCH_OUTPUT=$TEST_TMP/slurm-%j.out
	export SBATCH_OUTPUT
	# every srun of a test is bounded: a dead cluster or a hung step fails
	# that test instead of hanging the suite (LOOM_SRUN_TIMEOUT seconds)
	srun() { timeout -k 10 "${LOOM_SRUN_TIMEOUT:-600}" srun "$@"; }
}

# Scripts about loom.so itself: skip when it was not built (configure
# --disable-spank), unless CI demands every cluster test
# (LOOM_REQUIRE_CLUSTER=1 turns the skip into a failure).
# test_need_python: the package loom was built (configure found Python 3)
test_need_python() {
	[ -n "${LOOM_PYTHON:-}" ] || skip_all "the Python package is not built (configure found no Python 3)"
}

# test_need_torch: that, and torch.distributed imports in its Python
test_need_torch() {
	test_need_python
	"$LOOM_PYTHON" -c "import torch.distributed" 2>/dev/null ||
		skip_all "python3-torch is not installed for $LOOM_PYTHON (contrib/install-deps installs it)"
}

# test_need_torch_extension: that, and the process group "loom" (loom._c10d) was built
test_need_torch_extension() {
	test_need_python
	[ -n "${LOOM_TORCH_EXTENSION:-}" ] ||
		skip_all "loom._c10d is not built (configure found no PyTorch C++ headers: apt-get install python3-torch libtorch-dev pybind11-dev)"
}

test_need_plugin() {
	local plugin=${LOOM_TEST_PLUGIN:-$LOOM_BUILD_DIR/spank/.libs/loom.so}
	[ -f "$plugin" ] && return 0
	if [ -n "${LOOM_REQUIRE_CLUSTER:-}" ]; then
		say_tap "1..1"
		say_tap "not ok 1 - loom.so required (LOOM_REQUIRE_CLUSTER) but $plugin is missing"
		exit 1
	fi
	skip_all "loom.so not built ($plugin missing; configure without --disable-spank)"
}
