# runtime/comm/: the world and communicator objects, the operation
# descriptor and the backend interface
runtime_libloom_core_la_SOURCES += runtime/comm/comm.h runtime/comm/comm_core.c
