# runtime/: libloom, the library training programs link. Knows nothing of SPANK.
lib_LTLIBRARIES += runtime/libloom.la
include_HEADERS += runtime/loom.h
pkgconfig_DATA += runtime/loom.pc
noinst_HEADERS += runtime/loom_internal.h
runtime_libloom_la_SOURCES = \
	runtime/error.c \
	runtime/log.c \
	runtime/sync.c \
	runtime/reduce_ops.c \
	runtime/transport_tcp.c \
	runtime/transport_shm.c \
	runtime/comm_core.c \
	runtime/xfer.c \
	runtime/plan.c \
	runtime/coll_allreduce.c \
	runtime/coll_reduce.c \
	runtime/coll_bcast.c \
	runtime/coll_ring.c \
	runtime/coll_misc.c \
	runtime/op.c \
	runtime/coll.c \
	runtime/progress.c \
	runtime/comm.c \
	runtime/comm_native.c \
	runtime/mesh.c \
	runtime/bootstrap.c \
	runtime/bootstrap_env.c \
	runtime/world.c \
	runtime/init.c
runtime_libloom_la_CFLAGS = $(AM_CFLAGS) -pthread
runtime_libloom_la_LIBADD =
if HAVE_PMIX
runtime_libloom_la_SOURCES += runtime/bootstrap_pmix.c
runtime_libloom_la_CFLAGS += $(PMIX_CFLAGS)
runtime_libloom_la_LIBADD += $(PMIX_LIBS)
endif
runtime_libloom_la_LDFLAGS = -version-info 0:0:0 -pthread

check_PROGRAMS += runtime/test/strerror
runtime_test_strerror_SOURCES = runtime/test/strerror.c
runtime_test_strerror_LDADD = runtime/libloom.la
TESTS += runtime/test/strerror

# C unit tests of the runtime (TAP, t/tap.h)
check_PROGRAMS += runtime/test/single
runtime_test_single_SOURCES = runtime/test/single.c
runtime_test_single_LDADD = runtime/libloom.la
TESTS += runtime/test/single

# multi-rank test program for the cluster tests t/t2*.t (not installed)
check_PROGRAMS += t/runtime/coll-check
t_runtime_coll_check_SOURCES = t/runtime/coll-check.c
t_runtime_coll_check_LDADD = runtime/libloom.la -lm -lpthread
EXTRA_DIST += t/runtime/lib.sh
dist_check_SCRIPTS += \
	t/t2000-runtime-local.t \
	t/t2001-runtime-coll-env.t \
	t/t2002-runtime-coll-pmix.t \
	t/t2003-runtime-comm.t \
	t/t2004-runtime-failures.t

check_PROGRAMS += runtime/test/reduce_ops runtime/test/plan
runtime_test_reduce_ops_SOURCES = runtime/test/reduce_ops.c
runtime_test_reduce_ops_LDADD = runtime/libloom.la -lm
runtime_test_plan_SOURCES = runtime/test/plan.c
runtime_test_plan_LDADD = runtime/libloom.la
TESTS += runtime/test/reduce_ops runtime/test/plan
