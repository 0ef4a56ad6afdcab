# spank/: the Slurm SPANK plugin loom.so. Never links libloom (nor
# libslurm: Slurm's symbols come from srun / slurmstepd that load it).
SPANK_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS) $(HWLOC_CFLAGS) $(CRYPTO_CFLAGS)
SPANK_TEST_LIBS = $(HWLOC_LIBS) $(CRYPTO_LIBS)

if BUILD_SPANK
# the plugin's core: everything but the SPANK entry points (loom.c) and
# the contexts that need srun or slurmstepd (ctx_*.c). Linked whole into
# loom.so, and into each unit test, which takes only the objects it uses.
# Slurm's symbols stay undefined here: srun / slurmstepd provide them to
# loom.so, -lslurm (or a test's own stub) to a test.
noinst_LTLIBRARIES += spank/libloomspank.la
spank_libloomspank_la_SOURCES = \
	spank/options.c spank/options.h \
	spank/settings.c spank/settings.h \
	spank/plugstack_config.c spank/plugstack_config.h \
	spank/user_options.c spank/user_options.h \
	spank/hostlist.c spank/hostlist.h \
	spank/master_addr.c spank/master_addr.h \
	spank/port.c spank/port.h \
	spank/launch_env.c spank/launch_env.h \
	spank/ckpt_dir.c spank/ckpt_dir.h \
	spank/flight_dir.c spank/flight_dir.h \
	spank/ckpt_timer.c spank/ckpt_timer.h \
	spank/save_times.c spank/save_times.h \
	spank/requeue.c spank/requeue.h \
	spank/job_log.c spank/job_log.h \
	spank/topology.c spank/topology.h \
	spank/topo_cache.c spank/topo_cache.h \
	spank/affinity.c spank/affinity.h \
	spank/job_secret.c spank/job_secret.h \
	spank/job_key.c spank/job_key.h \
	spank/strbuf.c spank/strbuf.h \
	spank/loom_spank.h
spank_libloomspank_la_CPPFLAGS = $(SPANK_CPPFLAGS)
SPANK_LIB = spank/libloomspank.la

plugindir = $(slurm_plugindir)
plugin_LTLIBRARIES = spank/loom.la
spank_loom_la_SOURCES = spank/loom.c spank/ctx_local.c spank/ctx_remote.c
spank_loom_la_CPPFLAGS = $(SPANK_CPPFLAGS)
# Slurm looks up only these (slurm/spank.h): nothing else is exported
spank_loom_la_LDFLAGS = -module -avoid-version -shared \
	-export-symbols-regex '^(slurm_spank_[a-z_]+|plugin_name|plugin_type|plugin_version|spank_plugin_version|spank_options)$$'
spank_loom_la_LIBADD = $(SPANK_LIB) $(HWLOC_LIBS) $(CRYPTO_LIBS)

# unit tests (do not need Slurm running, only its headers; hostlist tests
# link libslurm, which loom.so itself never does)
SPANK_UNIT_TESTS = \
	spank/test/plugstack_config \
	spank/test/options \
	spank/test/user_options \
	spank/test/hostlist \
	spank/test/port \
	spank/test/launch_env \
	spank/test/ckpt \
	spank/test/requeue \
	spank/test/affinity \
	spank/test/fuzz \
	spank/test/master_addr \
	spank/test/option_noops \
	spank/test/strbuf \
	spank/test/settings \
	spank/test/job_key
check_PROGRAMS += $(SPANK_UNIT_TESTS)
TESTS += $(SPANK_UNIT_TESTS)
spank_test_job_key_SOURCES = spank/test/job_key.c
spank_test_job_key_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_job_key_LDADD = $(SPANK_LIB) $(CRYPTO_LIBS)
spank_test_plugstack_config_SOURCES = spank/test/plugstack_config.c
spank_test_plugstack_config_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_plugstack_config_LDADD = $(SPANK_LIB)
spank_test_options_SOURCES = spank/test/options.c
spank_test_options_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_options_LDADD = $(SPANK_LIB)
spank_test_user_options_SOURCES = spank/test/user_options.c
spank_test_user_options_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_user_options_LDADD = $(SPANK_LIB)
spank_test_hostlist_SOURCES = spank/test/hostlist.c
spank_test_hostlist_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_hostlist_LDADD = $(SPANK_LIB) -lslurm
spank_test_master_addr_SOURCES = spank/test/master_addr.c
spank_test_master_addr_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_master_addr_LDADD = $(SPANK_LIB) -lslurm
spank_test_option_noops_SOURCES = spank/test/option_noops.c
spank_test_option_noops_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_option_noops_LDADD = $(SPANK_LIB)
spank_test_settings_SOURCES = spank/test/settings.c
spank_test_settings_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_settings_LDADD = $(SPANK_LIB)
spank_test_strbuf_SOURCES = spank/test/strbuf.c
spank_test_strbuf_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_strbuf_LDADD = $(SPANK_LIB) -lslurm $(SPANK_TEST_LIBS)
spank_test_port_SOURCES = spank/test/port.c
spank_test_port_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_port_LDADD = $(SPANK_LIB)
spank_test_launch_env_SOURCES = spank/test/launch_env.c
spank_test_launch_env_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_launch_env_LDADD = $(SPANK_LIB)
spank_test_ckpt_SOURCES = spank/test/ckpt.c
spank_test_ckpt_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_ckpt_LDADD = $(SPANK_LIB)
spank_test_requeue_SOURCES = spank/test/requeue.c
spank_test_requeue_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_requeue_LDADD = $(SPANK_LIB) -lslurm -lpthread
spank_test_affinity_SOURCES = spank/test/affinity.c
spank_test_affinity_CPPFLAGS = $(SPANK_CPPFLAGS) -DLOOM_FIXTURES='"$(abs_top_srcdir)/t/fixtures"' \
	-DLOOM_FAKE_NVML_PATH='"$(abs_top_builddir)/spank/test/.libs/libfakenvml.so"'
spank_test_affinity_LDADD = $(SPANK_LIB) $(SPANK_TEST_LIBS)
spank_test_fuzz_SOURCES = spank/test/fuzz.c
spank_test_fuzz_CPPFLAGS = $(SPANK_CPPFLAGS)
spank_test_fuzz_LDADD = $(SPANK_LIB) -lslurm $(SPANK_TEST_LIBS)

# a fake NVML for the planner test: libnvidia-ml is dlopen()ed, never linked
check_LTLIBRARIES += spank/test/libfakenvml.la
spank_test_libfakenvml_la_SOURCES = spank/test/fakenvml.c
spank_test_libfakenvml_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
endif

EXTRA_DIST += t/fixtures/gen-topology.py t/fixtures/dgx-h100.xml t/fixtures/gpu4-1numa.xml \
	t/fixtures/nogpu-2numa.xml t/fixtures/numa40-1gpu.xml spank/test/libslurm.supp
dist_check_SCRIPTS += t/t1001-launch-env.t t/t1002-options.t t/t1003-affinity.t \
	t/t1004-rendezvous.t t/t1005-fuzz-valgrind.t t/t1006-master-addr.t \
	t/t1007-option-warnings.t t/t1009-plugin-exports.t t/t1010-topology-cache.t \
	t/t7101-requeue-as-user.t

if BUILD_SPANK
check_PROGRAMS += spank/test/rendezvous
spank_test_rendezvous_SOURCES = spank/test/rendezvous.c

# the parsers' fuzz test once more under valgrind (cheap: no ASan rebuild)
check-spank-valgrind: spank/test/fuzz
	$(LIBTOOL) --mode=execute valgrind -q --error-exitcode=1 --leak-check=full \
		--errors-for-leak-kinds=definite \
		--suppressions=$(top_srcdir)/spank/test/libslurm.supp spank/test/fuzz 3000
endif
EXTRA_DIST += spank/LAUNCH-OVERHEAD.md spank/measure-overhead.sh
# the table of settings against the docs and srun --help
dist_check_SCRIPTS += t/t0013-settings-agree.t
EXTRA_DIST += t/lib/settings-agree.py
