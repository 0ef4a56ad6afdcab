# runtime/dp/: the data-parallel gradient helper (loom_dp_*), on the
# public API
runtime_libloom_core_la_SOURCES += runtime/dp/dp.c

check_PROGRAMS += runtime/dp/test/dp_plan runtime/dp/test/dp_step
runtime_dp_test_dp_plan_SOURCES = runtime/dp/test/dp_plan.c
runtime_dp_test_dp_plan_LDADD = runtime/libloom.la
runtime_dp_test_dp_step_SOURCES = runtime/dp/test/dp_step.c
runtime_dp_test_dp_step_LDADD = runtime/libloom.la -lm
TESTS += runtime/dp/test/dp_plan runtime/dp/test/dp_step
