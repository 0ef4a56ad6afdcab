# t/: the test suite. `make check` runs C unit tests (beside the code they
# test, e.g. spank/test/, runtime/test/) and shell tests t/tNNNN-topic.t,
# all producing TAP, through Automake's tap-driver.sh.
TEST_EXTENSIONS = .t
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/config/tap-driver.sh
T_LOG_DRIVER = $(LOG_DRIVER)
T_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	LOOM_SRC_DIR='$(abs_top_srcdir)'; LOOM_BUILD_DIR='$(abs_top_builddir)'; \
	PATH='$(abs_top_builddir)/examples:$(abs_top_builddir)/t:'"$$PATH"; \
	export LOOM_SRC_DIR LOOM_BUILD_DIR PATH;

noinst_HEADERS += t/tap.h
EXTRA_DIST += t/lib/cluster.sh t/lib/test-lib.sh t/run-on-test-cluster t/lib/k8s-schema.py

# shell tests against the live cluster (they start it themselves)
dist_check_SCRIPTS += \
	t/t0000-harness.t \
	t/t0001-cluster.t \
	t/t0002-plugin-chain.t \
	t/t0003-contrib.t \
	t/t0005-man.t
TESTS += $(dist_check_SCRIPTS)
