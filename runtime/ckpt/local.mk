# runtime/ckpt/: coordinated checkpoint/restart (loom_ckpt_*) on the
# public API, its tests and loom-ckpt-bench. Format:
# docs/checkpoint-format.md.
runtime_libloom_core_la_SOURCES += runtime/ckpt/ckpt_gate.c runtime/ckpt/ckpt_signal.c runtime/ckpt/ckpt_agree.c runtime/ckpt/ckpt_handle.c \
	runtime/ckpt/ckpt_plan.c runtime/ckpt/ckpt_exchange.c runtime/ckpt/ckpt_window.c \
	runtime/ckpt/ckpt_save.c runtime/ckpt/ckpt_async.c runtime/ckpt/ckpt_cache.c runtime/ckpt/ckpt_cache_restore.c runtime/ckpt/ckpt_load.c runtime/ckpt/ckpt_api.c runtime/ckpt/ckpt_format.c \
	runtime/ckpt/ckpt_dir.c runtime/ckpt/ckpt_times.c \
	runtime/ckpt/ckpt_layout.c runtime/ckpt/ckpt_nocomm.h runtime/ckpt/ckpt_internal.h
if HAVE_XXHASH
runtime_libloom_core_la_CFLAGS += $(XXHASH_CFLAGS)
runtime_libloom_core_la_LIBADD += $(XXHASH_LIBS)
endif
EXTRA_DIST += docs/checkpoint-format.md

check_PROGRAMS += runtime/ckpt/test/ckpt_format runtime/ckpt/test/ckpt_world
runtime_ckpt_test_ckpt_format_SOURCES = runtime/ckpt/test/ckpt_format.c
runtime_ckpt_test_ckpt_format_LDADD = runtime/libloom_core.la
runtime_ckpt_test_ckpt_world_SOURCES = runtime/ckpt/test/ckpt_world.c runtime/ckpt/test/capture.h
runtime_ckpt_test_ckpt_world_LDADD = runtime/libloom.la
TESTS += runtime/ckpt/test/ckpt_format runtime/ckpt/test/ckpt_world
# links, other users' entries and manifest bounds (docs/checkpoint-format.md)
check_PROGRAMS += runtime/ckpt/test/ckpt_files
runtime_ckpt_test_ckpt_files_SOURCES = runtime/ckpt/test/ckpt_files.c runtime/ckpt/test/capture.h
runtime_ckpt_test_ckpt_files_LDADD = runtime/libloom_core.la -lpthread
TESTS += runtime/ckpt/test/ckpt_files
# the plan as pure functions: hand-worked layouts, no communicator
check_PROGRAMS += runtime/ckpt/test/ckpt_plan
runtime_ckpt_test_ckpt_plan_SOURCES = runtime/ckpt/test/ckpt_plan.c
runtime_ckpt_test_ckpt_plan_LDADD = runtime/libloom_core.la
TESTS += runtime/ckpt/test/ckpt_plan

# drives the cluster tests t/t4*.t
check_PROGRAMS += runtime/ckpt/test/ckpt-drive
runtime_ckpt_test_ckpt_drive_SOURCES = runtime/ckpt/test/ckpt_drive.c
runtime_ckpt_test_ckpt_drive_CFLAGS = $(AM_CFLAGS) -pthread
runtime_ckpt_test_ckpt_drive_LDADD = runtime/libloom.la
dist_check_SCRIPTS += t/t4000-ckpt-valgrind.t t/t4001-ckpt.t t/t4002-requeue.t t/t4003-ckpt-async.t \
	t/t4004-ckpt-mode.t t/t4005-ckpt-async-requeue.t t/t4006-ckpt-signal-auto.t \
	t/t4007-ckpt-cache.t t/t4008-ckpt-restore-shrunk.t
# checkpoint files against links, other users and hostile manifests
dist_check_SCRIPTS += t/t7100-ckpt-links.t t/t7102-ckpt-manifest-bounds.t

# the benchmark (installed)
bin_PROGRAMS += runtime/tools/loom-ckpt-bench
runtime_tools_loom_ckpt_bench_SOURCES = runtime/tools/ckpt_bench.c
runtime_tools_loom_ckpt_bench_LDADD = runtime/libloom.la

# LD_PRELOAD shim for t/t4001-ckpt.t: SIGKILL at a chosen rename/fsync/close
# (LOOM_TEST_KILL_AT), to interrupt a commit at an exact step
check_LTLIBRARIES += runtime/ckpt/test/killpoint.la
runtime_ckpt_test_killpoint_la_SOURCES = runtime/ckpt/test/killpoint.c
runtime_ckpt_test_killpoint_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
runtime_ckpt_test_killpoint_la_LIBADD = -ldl
