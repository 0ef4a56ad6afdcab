# runtime/dp/: the data-parallel gradient helper (loom_dp_*), on the
# public API
runtime_libloom_core_la_SOURCES += runtime/dp/dp.c

check_PROGRAMS += runtime/test/dp_plan runtime/test/dp_step
runtime_test_dp_plan_SOURCES = runtime/test/dp_plan.c
runtime_test_dp_plan_LDADD = runtime/libloom.la
runtime_test_dp_step_SOURCES = runtime/test/dp_step.c
runtime_test_dp_step_LDADD = runtime/libloom.la -lm
TESTS += runtime/test/dp_plan runtime/test/dp_step
