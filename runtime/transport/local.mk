# runtime/transport/: bytes between processes: the TCP engine (a peer's
# state, sending, matching, connections, reading, entry points, its
# thread: transport_tcp_*.c, transport_tcp_internal.h), the hello of
# every connection, and the shared-memory rings
runtime_libloom_core_la_SOURCES += runtime/transport/transport.h \
	runtime/transport/transport_tcp_internal.h runtime/transport/transport_tcp_peer.c \
	runtime/transport/transport_tcp_wire.c runtime/transport/transport_tcp_match.c \
	runtime/transport/transport_tcp_conn.c runtime/transport/transport_tcp_heartbeat.c \
	runtime/transport/transport_tcp_read.c \
	runtime/transport/transport_tcp.c runtime/transport/transport_tcp_engine.c \
	runtime/transport/transport_handshake.c runtime/transport/transport_shm.c
