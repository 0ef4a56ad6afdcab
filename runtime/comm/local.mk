# runtime/comm/: the world and communicator objects, the operation
# descriptor and the backend interface
runtime_libloom_core_la_SOURCES += runtime/comm/comm.h runtime/comm/comm_core.c
runtime_libloom_core_la_SOURCES += runtime/comm/comm_query.h runtime/comm/comm_query.c
# the rank maps (util/rankmap.c) and the tables a communicator builds of them
check_PROGRAMS += runtime/comm/test/rankmap
runtime_comm_test_rankmap_SOURCES = runtime/comm/test/rankmap.c
runtime_comm_test_rankmap_LDADD = runtime/libloom_core.la
TESTS += runtime/comm/test/rankmap
