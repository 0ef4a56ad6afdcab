# runtime/transport/: bytes between processes: the TCP engine and the
# shared-memory rings
runtime_libloom_core_la_SOURCES += runtime/transport/transport.h \
	runtime/transport/transport_tcp.c runtime/transport/transport_handshake.c \
	runtime/transport/transport_shm.c
