# runtime/metrics.mk: Prometheus counters (LOOM_METRICS_FILE)
runtime_libloom_la_SOURCES += runtime/metrics.c runtime/metrics.h
check_PROGRAMS += runtime/test/metrics
runtime_test_metrics_SOURCES = runtime/test/metrics.c runtime/metrics.c
# own flags: its objects then differ from the library's libtool ones
runtime_test_metrics_CFLAGS = $(AM_CFLAGS)
TESTS += runtime/test/metrics
dist_check_SCRIPTS += t/t0004-metrics.t
EXTRA_DIST += t/lib/promtext.py
check_PROGRAMS += t/metrics/count_ops
t_metrics_count_ops_SOURCES = t/metrics/count_ops.c
t_metrics_count_ops_LDADD = runtime/libloom.la
dist_check_SCRIPTS += t/t0006-metrics-cluster.t
