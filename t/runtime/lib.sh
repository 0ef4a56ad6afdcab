# t/runtime/lib.sh: helpers for the runtime's cluster tests (t/t2*.t).
#   COLL               the multi-rank test program
#   free_port          a TCP port nobody listens on
#   t_srun ARGS...     srun that gives up after T2_SRUN_TIMEOUT s
#                      (LOOM_T2_SRUN_TIMEOUT, 180): a cluster that died
#                      must fail the test, not hang it
#   env_srun ARGS -- PROG ARGS...
#                      srun with the torch variables set by hand (RANK,
#                      WORLD_SIZE, MASTER_ADDR=first node, MASTER_PORT free),
#                      and a fresh LOOM_JOB_SECRET, i.e. the env bootstrap,
#                      independent of the plugin
#   ranks_pass N PATTERN CMD...
#                      CMD (an srun, or ranks started by hand) exits 0 AND
#                      its output, kept in $TEST_TMP/o, holds PATTERN once
#                      for each of N ranks: a failure after the pass line
#                      (loom_finalize, a crash at exit) fails the test
#   all_ranks_passed FILE N PATTERN
#                      FILE holds PATTERN once for each of N ranks (only
#                      the lines; ranks_pass also checks the exit status)
#   marker_dir         a fresh, empty directory under $TEST_TMP for the
#                      ranks' marker files (LOOM_T_MARKERS of coll-check)
#   survived FILE S FAILED [SAW]
#                      ft-check's output FILE: SAW ranks (default S) saw the
#                      loss (PEER_LOST or REVOKED), S survivors printed one
#                      agree line, FAILED ("none" or ranks), and passed every
#                      sum of the shrunk world, a split, a dup and the mesh
#                      group (t2010, t2013)
COLL=$LOOM_BUILD_DIR/t/runtime/coll-check
export COLL
T2_SRUN_TIMEOUT=${LOOM_T2_SRUN_TIMEOUT:-180}

# loom_rand lives in cluster.sh; t2000 runs without a cluster
command -v loom_rand >/dev/null 2>&1 || . "$LOOM_SRC_DIR/t/lib/cluster.sh"

t_srun() {
	timeout -k 10 "$T2_SRUN_TIMEOUT" srun "$@"
}

free_port() {
	local p room
	room=$(loom_port_room 1)
	for _ in $(seq 1 100); do
		p=$(( 20000 + $(loom_rand "$room") ))
		if _cluster_port_free $p; then
			echo $p
			return 0
		fi
	done
	return 1
}

env_srun() {
	local args="" port
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do args="$args $1"; shift; done
	shift
	port=$(free_port) || return 1
	# shellcheck disable=SC2086
	# a fresh job secret, as a launcher gives one to all its ranks
	LOOM_JOB_SECRET=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n') \
	MASTER_PORT_T=$port t_srun $args sh -c 'RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS MASTER_ADDR=n1 MASTER_PORT=$MASTER_PORT_T exec "$@"' sh "$@"
}

all_ranks_passed() {
	local n
	n=$(grep -c -- "$3" "$1") || n=0
	[ "$n" -eq "$2" ] || { echo "expected $2 ranks with /$3/, got $n"; cat "$1"; return 1; }
}

ranks_pass() {
	local n=$1 pat=$2 rc=0
	shift 2
	"$@" >"$TEST_TMP/o" 2>&1 || rc=$?
	all_ranks_passed "$TEST_TMP/o" "$n" "$pat" || { echo "(exit status $rc)"; return 1; }
	[ "$rc" -eq 0 ] || {
		echo "every rank printed /$pat/ but the exit status is $rc, not 0:"
		cat "$TEST_TMP/o"
		return 1
	}
}

marker_dir() {
	local d
	d=$(mktemp -d "$TEST_TMP/markers.XXXXXX") || return 1
	chmod 777 "$d"
	echo "$d"
}

survived() {
	cat "$1" &&
	test "$(grep -Ec ': iter [0-9]+: status -(5|13)$' "$1")" -eq "${4:-$2}" &&
	test "$(grep -c ': agree: ' "$1")" -eq "$2" &&
	test "$(grep ': agree: ' "$1" | sed 's/^rank [0-9]*: //' | sort -u)" = "agree: flag 1 failed $3" &&
	test "$(grep -Ec ": shrunk: rank [0-9]+ of $2 sum [0-9]+ want [0-9]+ ok$" "$1")" -eq "$2" &&
	test "$(grep -Ec ': split: .* ok$' "$1")" -eq "$2" &&
	test "$(grep -Ec ": dup: rank [0-9]+ of $2 sum .* ok$" "$1")" -eq "$2" &&
	test "$(grep -Ec ': mesh-dp: .* ok$' "$1")" -eq "$2" &&
	test "$(grep -c ': done$' "$1")" -eq "$2" &&
	! grep -E 'FAIL|WRONG' "$1"
}
