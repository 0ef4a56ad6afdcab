# runtime/coll/: transfers inside one operation, the algorithms, and the
# choice among them
runtime_libloom_core_la_SOURCES += runtime/coll/coll.h runtime/coll/xfer.c \
	runtime/coll/plan.c runtime/coll/coll_allreduce.c runtime/coll/coll_reduce.c \
	runtime/coll/coll_bcast.c runtime/coll/coll_ring.c runtime/coll/coll_misc.c \
	runtime/coll/coll_fbox.c runtime/coll/coll_direct.c \
	runtime/coll/coll_staged.c runtime/coll/near.c runtime/coll/coll_hier.c \
	runtime/coll/coll_state.h runtime/coll/coll_state.c
check_PROGRAMS += runtime/coll/test/plan
runtime_coll_test_plan_SOURCES = runtime/coll/test/plan.c
runtime_coll_test_plan_LDADD = runtime/libloom_core.la
TESTS += runtime/coll/test/plan
check_PROGRAMS += runtime/coll/test/backoff
runtime_coll_test_backoff_SOURCES = runtime/coll/test/backoff.c
runtime_coll_test_backoff_LDADD = runtime/libloom_core.la
TESTS += runtime/coll/test/backoff
