# runtime/api/: the public layer: argument checks, one descriptor per
# call, metrics, dispatch to the communicator's backend; loom_init and
# loom_finalize; communicators, meshes, the backend queries of loom.h
runtime_libloom_core_la_SOURCES += runtime/api/coll.c runtime/api/comm.c \
	runtime/api/init.c runtime/api/backend.c runtime/api/mesh.c
