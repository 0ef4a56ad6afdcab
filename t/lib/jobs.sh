# t/lib/jobs.sh: waiting for batch jobs and for loom.so's lines in the
# slurmd logs of the test cluster (t/lib/cluster.sh). Source it after
# test_need_cluster.

# job_field JOB FIELD: a field of `scontrol show job`
job_field() {
	scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
# wait_state JOB SECONDS STATE...: until the job is in one of the states
wait_state() {
	local j=$1 n=$2 s; shift 2
	for i in $(seq "$n"); do
		s=$(job_field "$j" JobState)
		for w in "$@"; do [ "$s" = "$w" ] && return 0; done
		sleep 1
	done
	echo "job $j is $s after $n s, not $*"; scontrol show job "$j"; return 1
}
# wait_for FILE PATTERN SECONDS: until FILE (a job's output) has a line
# matching PATTERN
wait_for() {
	for i in $(seq $(($3 * 4))); do grep -q -- "$2" "$1" 2>/dev/null && return 0; sleep 0.25; done
	echo "$1 lacks /$2/ after $3 s"; cat "$1"; return 1
}
# stepd_log: every slurmd log of the cluster
stepd_log() { cat "$LOOM_CLUSTER_DIR"/log/slurmd-n*.log; }
# wait_stepd_log PATTERN SECONDS: until a slurmd log has a line matching
# PATTERN (loom.so's decision about a job), at most SECONDS; on failure
# the loom lines that are there
wait_stepd_log() {
	timeout "$2" sh -c 'until cat "$1"/log/slurmd-n*.log | grep -q -- "$2"; do sleep 0.2; done' \
		sh "$LOOM_CLUSTER_DIR" "$1" && return 0
	echo "no slurmd log line /$1/ after $2 s"; cat "$LOOM_CLUSTER_DIR"/log/slurmd-n*.log | grep "loom:"
	return 1
}
