# runtime/metrics/: per-communicator counters for Prometheus
# (LOOM_METRICS_FILE)
runtime_libloom_core_la_SOURCES += runtime/metrics/metrics.h runtime/metrics/metrics.c
check_PROGRAMS += runtime/metrics/test/metrics
runtime_metrics_test_metrics_SOURCES = runtime/metrics/test/metrics.c
runtime_metrics_test_metrics_LDADD = runtime/libloom_core.la
TESTS += runtime/metrics/test/metrics
dist_check_SCRIPTS += t/t0004-metrics.t
EXTRA_DIST += t/lib/prom.sh
check_PROGRAMS += t/metrics/count_ops
t_metrics_count_ops_SOURCES = t/metrics/count_ops.c
t_metrics_count_ops_LDADD = runtime/libloom.la
dist_check_SCRIPTS += t/t0006-metrics-cluster.t
dist_check_SCRIPTS += t/t0011-prometheus.t
EXTRA_DIST += t/lib/grafana-queries.py
