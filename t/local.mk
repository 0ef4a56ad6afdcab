# t/: the test suite. `make check` runs C unit tests (beside the code they
# test, e.g. spank/test/, runtime/util/test/) and shell tests t/tNNNN-topic.t,
# all producing TAP, through Automake's tap-driver.sh.
TEST_EXTENSIONS = .t
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/config/tap-driver.sh
T_LOG_DRIVER = $(LOG_DRIVER)
T_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	LOOM_SRC_DIR='$(abs_top_srcdir)'; LOOM_BUILD_DIR='$(abs_top_builddir)'; \
	PATH='$(abs_top_builddir)/examples:$(abs_top_builddir)/t:'"$$PATH"; \
	LOOM_TEST_LOGS='$(TEST_LOGS)'; \
	export LOOM_SRC_DIR LOOM_BUILD_DIR PATH LOOM_TEST_LOGS;

noinst_HEADERS += t/tap.h
EXTRA_DIST += t/lib/cluster.sh t/lib/jobs.sh t/lib/test-lib.sh t/run-on-test-cluster t/lib/k8s-schema.py t/README.md \
	t/python/ddp_gloo.py

# shell tests against the live cluster (they start it themselves)
dist_check_SCRIPTS += \
	t/t0000-harness.t \
	t/t0001-cluster.t \
	t/t0002-plugin-chain.t \
	t/t0003-contrib.t \
	t/t0005-man.t \
	t/t0007-runtime-layers.t \
	t/t0008-call-circles.t \
	t/t0009-global-names.t \
	t/t0010-long-functions.t
EXTRA_DIST += t/lib/call-circles.py t/lib/long-functions.py
TESTS += $(dist_check_SCRIPTS)

# the per-area summary comes last: its log waits for every other test's
# (a variable as target, so that automake keeps its own rule for it)
dist_check_SCRIPTS += t/t9999-summary.t
LOOM_SUMMARY_LOG = t/t9999-summary.log
$(LOOM_SUMMARY_LOG): $(filter-out $(LOOM_SUMMARY_LOG),$(TEST_LOGS))
