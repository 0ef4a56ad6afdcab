# runtime/api/: the public layer: argument checks, one descriptor per
# call, metrics, dispatch to the communicator's backend; loom_init and
# loom_finalize; communicators, meshes, the backend queries of loom.h
runtime_libloom_core_la_SOURCES += runtime/api/coll.c runtime/api/comm.c \
	runtime/api/init.c runtime/api/backend.c runtime/api/mesh.c

# unit tests (TAP, t/tap.h) of the public layer, through libloom.la
check_PROGRAMS += runtime/api/test/strerror runtime/api/test/single
runtime_api_test_strerror_SOURCES = runtime/api/test/strerror.c
runtime_api_test_strerror_LDADD = runtime/libloom.la
runtime_api_test_single_SOURCES = runtime/api/test/single.c
runtime_api_test_single_LDADD = runtime/libloom.la
TESTS += runtime/api/test/strerror runtime/api/test/single
