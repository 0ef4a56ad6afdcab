#!/bin/sh
# loom's metrics through a real Prometheus: node_exporter's textfile
# collector reads the files a 4-rank job (2 nodes) wrote, Prometheus
# scrapes it every second, and its HTTP API finds loom's series with the
# labels the dashboard uses; every query of
# contrib/monitoring/grafana-loom.json returns data. Both servers run on
# loopback, on free ports, under the test's directory, and are stopped at
# the end (trap). Every wait is bounded.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
for b in prometheus prometheus-node-exporter curl python3; do
	command -v $b >/dev/null ||
		skip_all "$b not installed (Debian: prometheus prometheus-node-exporter; contrib/install-deps)"
done
if grep -q '^#define HAVE_PMIX 1' "$LOOM_BUILD_DIR/config.h"; then
	launch="srun --mpi=pmix"
else
	test_need_plugin
	launch="srun --mpi=none"
fi
test_need_cluster
prog="$LOOM_BUILD_DIR/t/metrics/count_ops"
D=$TEST_TMP/textfile
mkdir "$D"

# ports: two free ones on loopback, away from the cluster's
base=$(_cluster_pick_ports 2) || { say_tap "1..1"; say_tap "not ok 1 - no free ports"; exit 1; }
NE=127.0.0.1:$base
PROM=http://127.0.0.1:$((base + 1))

# stop_pid FILE: end the server whose pid FILE holds, at most 10 s
stop_pid() {
	local pid i=0
	pid=$(cat "$1" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null || return 0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	kill -9 "$pid" 2>/dev/null
	rm -f "$1"
}
servers_stop() {
	stop_pid "$TEST_TMP/prometheus.pid"
	stop_pid "$TEST_TMP/node-exporter.pid"
}
trap 'servers_stop; cluster_cleanup; rm -rf "$TEST_TMP"' EXIT

# get PATH: its body, from loopback (no proxy), bounded
get() { curl -sf --noproxy '*' --max-time 10 "$@"; }
# query EXPR: Prometheus's instant query, its JSON
query() { get -G "$PROM/api/v1/query" --data-urlencode "query=$1"; }
# wait_for SECONDS CMD...: CMD until it succeeds, at most SECONDS
wait_for() {
	local n=$(($1 * 2))
	shift
	while ! "$@" >/dev/null 2>&1; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.5
	done
}
# series EXPR: one line per series, its labels (sorted) and value
series() {
	query "$1" | python3 -c '
import json, sys
for s in json.load(sys.stdin)["data"]["result"]:
    m = s["metric"]
    print(" ".join("%s=%s" % (k, m[k]) for k in sorted(m)), s["value"][1])'
}
has_series() { test -n "$(series "$1")"; }
no_series() { test -z "$(series "$1")"; }
# series_is EXPR TEXT: what series EXPR prints is TEXT
series_is() { test "$(series "$1")" = "$2"; }

test_expect_success 'node_exporter (textfile collector only) starts on loopback' '
	prometheus-node-exporter --collector.disable-defaults --collector.textfile \
		--collector.textfile.directory="$D" --web.listen-address="$NE" \
		>"$TEST_TMP/node-exporter.log" 2>&1 &
	echo $! >"$TEST_TMP/node-exporter.pid" &&
	wait_for 30 get "http://$NE/metrics" ||
		{ tail -20 "$TEST_TMP/node-exporter.log"; exit 1; }
'
test_expect_success 'Prometheus starts on loopback, scraping it every second' '
	# (a command of its own: "cat && prometheus &" would put both in one
	# background shell, and $! would be that shell, not Prometheus)
	cat >"$TEST_TMP/prometheus.yml" <<-EOF
	global:
	  scrape_interval: 1s
	  evaluation_interval: 1s
	scrape_configs:
	  - job_name: loom-textfile
	    static_configs:
	      - targets: ["$NE"]
	EOF
	prometheus --config.file="$TEST_TMP/prometheus.yml" \
		--storage.tsdb.path="$TEST_TMP/tsdb" --web.listen-address="${PROM#http://}" \
		>"$TEST_TMP/prometheus.log" 2>&1 &
	echo $! >"$TEST_TMP/prometheus.pid" &&
	wait_for 60 get "$PROM/-/ready" &&
	wait_for 30 has_series "up{job=\"loom-textfile\"} == 1" ||
		{ tail -20 "$TEST_TMP/prometheus.log"; exit 1; }
'
test_expect_success '4 ranks on 2 nodes write their metrics into the textfile directory' '
	LOOM_METRICS_KEEP=1 LOOM_METRICS_FILE="$D/loom-%j-%r.prom" $launch -N2 -n4 "$prog" &&
	ls "$D" && test $(ls "$D" | grep -c "^loom-[0-9]*-[0-3]\.prom$") = 4 &&
	ls "$D" | sed -n "s/^loom-\([0-9]*\)-0\.prom$/\1/p" >"$TEST_TMP/jobid" &&
	test -s "$TEST_TMP/jobid"
'
J=$(cat "$TEST_TMP/jobid" 2>/dev/null)
test_expect_success 'Prometheus has every rank'"'"'s allreduce count, by slurm_job_id, rank, host, comm' '
	sel="loom_operations_total{slurm_job_id=\"$J\",comm=\"world\",op=\"allreduce\"}" &&
	wait_for 30 series_is "count($sel)" " 4" &&
	series "$sel" | tee "$TEST_TMP/ar" &&
	for r in 0 1 2 3; do
		test $(grep -c " rank=$r .* 10$" "$TEST_TMP/ar") = 1 || exit 1
	done &&
	test $(grep -c " host=n1 " "$TEST_TMP/ar") = 2 && test $(grep -c " host=n2 " "$TEST_TMP/ar") = 2 &&
	test $(grep -c " slurm_step_id=[0-9][0-9]* " "$TEST_TMP/ar") = 4
'
test_expect_success 'the job label is Prometheus'"'"'s scrape job: no exported_job' '
	series "count by (job) ({__name__=~\"loom_.*\",slurm_job_id=\"$J\"})" >"$TEST_TMP/jobs" &&
	cat "$TEST_TMP/jobs" && test $(wc -l <"$TEST_TMP/jobs") = 1 &&
	grep -q "^job=loom-textfile [1-9][0-9]*$" "$TEST_TMP/jobs" &&
	no_series "{__name__=~\"loom_.*\",exported_job!=\"\"}" &&
	no_series "{__name__=~\"loom_.*\",exported_step!=\"\"}"
'
# 4 KiB allreduces: even slow ones move more than 10 kB/s; in GB/s the
# value would be below 100
test_expect_success 'bus bandwidth in bytes per second' '
	series "loom_busbw_mean_bytes_per_second{slurm_job_id=\"$J\",op=\"allreduce\"}" | tee "$TEST_TMP/bw" &&
	test $(wc -l <"$TEST_TMP/bw") = 4 &&
	series_is "count(loom_busbw_mean_bytes_per_second{slurm_job_id=\"$J\",op=\"allreduce\"} > 10000)" " 4"
'
test_expect_success 'every query of the Grafana dashboard returns data' '
	python3 "$LOOM_SRC_DIR/t/lib/grafana-queries.py" "$PROM" \
		"$LOOM_SRC_DIR/contrib/monitoring/grafana-loom.json" slurm_job_id="$J" host=n2
'
test_expect_success 'a removed file'"'"'s series leave Prometheus at the next scrapes' '
	rm "$D"/loom-"$J"-*.prom &&
	wait_for 30 no_series "loom_operations_total{slurm_job_id=\"$J\"}"
'
test_expect_success 'both servers stop' '
	pn=$(cat "$TEST_TMP/prometheus.pid") && pe=$(cat "$TEST_TMP/node-exporter.pid") &&
	servers_stop && ! kill -0 "$pn" 2>/dev/null && ! kill -0 "$pe" 2>/dev/null &&
	! pgrep -f -- "--config.file=$TEST_TMP/prometheus.yml" &&
	! pgrep -f -- "--collector.textfile.directory=$D"
'
test_done
