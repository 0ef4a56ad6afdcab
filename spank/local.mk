# spank/: the Slurm SPANK plugin loom.so. Never links libloom.
if BUILD_SPANK
plugindir = $(slurm_plugindir)
plugin_LTLIBRARIES = spank/loom.la
spank_loom_la_SOURCES = \
	spank/loom.c \
	spank/plugstack_config.c spank/plugstack_config.h
spank_loom_la_CPPFLAGS = $(AM_CPPFLAGS) $(SLURM_CPPFLAGS)
spank_loom_la_LDFLAGS = -module -avoid-version -shared
endif

# unit tests (do not need Slurm running, only its headers)
if BUILD_SPANK
check_PROGRAMS += spank/test/plugstack_config
spank_test_plugstack_config_SOURCES = spank/test/plugstack_config.c spank/plugstack_config.c
TESTS += spank/test/plugstack_config
endif
