# t/security/: attacks by another local user (t/t7NNN; docs/security.md).
# The unit programs link the convenience library: they drive internals.
check_PROGRAMS += t/security/victim t/security/shm_owner t/security/handshake_fuzz
t_security_victim_SOURCES = t/security/victim.c
t_security_victim_LDADD = runtime/libloom.la
t_security_shm_owner_SOURCES = t/security/shm_owner.c
t_security_shm_owner_CFLAGS = $(AM_CFLAGS) -pthread
t_security_shm_owner_LDADD = runtime/libloom_core.la
t_security_handshake_fuzz_SOURCES = t/security/handshake_fuzz.c
t_security_handshake_fuzz_CFLAGS = $(AM_CFLAGS) -pthread
t_security_handshake_fuzz_LDADD = runtime/libloom_core.la
EXTRA_DIST += t/security/flood.py t/security/squat.py
EXTRA_DIST += t/security/connect_flood.py
EXTRA_DIST += t/security/relay.py

dist_check_SCRIPTS += \
	t/t7000-rendezvous-attacks.t \
	t/t7001-shm-owner.t \
	t/t7003-handshake-fuzz.t
dist_check_SCRIPTS += t/t7004-rendezvous-flood.t
dist_check_SCRIPTS += t/t7110-metrics-file.t
dist_check_SCRIPTS += t/t7111-doctor-bounds.t
dist_check_SCRIPTS += t/t7113-flight-fuzz.t
dist_check_SCRIPTS += t/t7112-shared-dirs.t
dist_check_SCRIPTS += t/t7005-relay.t
dist_check_SCRIPTS += t/t7006-join-impostor.t
