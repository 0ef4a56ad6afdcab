# runtime/boot/: forming the native world (PMIx, the environment
# rendezvous, the TCP mesh) and its finalize
runtime_libloom_core_la_SOURCES += runtime/boot/boot.h runtime/boot/bootstrap.c \
	runtime/boot/bootstrap_env.h runtime/boot/bootstrap_env.c runtime/boot/bootstrap_node.c \
	runtime/boot/bootstrap_hello.c runtime/boot/bootstrap_rank0.c runtime/boot/bootstrap_job.c \
	runtime/boot/rendezvous.h \
	runtime/boot/rendezvous.c runtime/boot/world.c runtime/boot/bootstrap_join.c
if HAVE_PMIX
runtime_libloom_core_la_SOURCES += runtime/boot/bootstrap_pmix.c
runtime_libloom_core_la_CFLAGS += $(PMIX_CFLAGS)
runtime_libloom_core_la_LIBADD += $(PMIX_LIBS)
endif

# unit test of what the env rendezvous takes from the wire
check_PROGRAMS += runtime/boot/test/rendezvous
runtime_boot_test_rendezvous_SOURCES = runtime/boot/test/rendezvous.c
runtime_boot_test_rendezvous_LDADD = runtime/libloom_core.la
TESTS += runtime/boot/test/rendezvous
