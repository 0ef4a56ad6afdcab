# runtime/core/: the native backend's execution: one operation at a time,
# the non-blocking queue, requests, native split/dup/free/abort/revoke,
# agree, shrink and grow, the fence around an agreement
runtime_libloom_core_la_SOURCES += runtime/core/core.h runtime/core/op.c \
	runtime/core/progress.c runtime/core/comm_native.c \
	runtime/core/comm_ft.c runtime/core/comm_fence.c runtime/core/grow.h \
	runtime/core/comm_grow.c runtime/core/world_grow.c
