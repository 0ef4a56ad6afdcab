# runtime/util/: logging, time and environment, futex bells, reduction
# kernels, status texts
runtime_libloom_core_la_SOURCES += runtime/util/util.h runtime/util/error.c \
	runtime/util/log.c runtime/util/sync.c runtime/util/reduce_ops.c runtime/util/copy_stream.c \
	runtime/util/secret.c runtime/util/files.c runtime/util/intmap.h runtime/util/intmap.c \
	runtime/util/rankmap.h runtime/util/rankmap.c runtime/util/resolve.c
runtime_libloom_core_la_CFLAGS += $(CRYPTO_CFLAGS)
runtime_libloom_core_la_LIBADD += $(CRYPTO_LIBS)
check_PROGRAMS += runtime/util/test/reduce_ops
runtime_util_test_reduce_ops_SOURCES = runtime/util/test/reduce_ops.c
runtime_util_test_reduce_ops_LDADD = runtime/libloom_core.la -lm
TESTS += runtime/util/test/reduce_ops
check_PROGRAMS += runtime/util/test/copy_stream
runtime_util_test_copy_stream_SOURCES = runtime/util/test/copy_stream.c
runtime_util_test_copy_stream_LDADD = runtime/libloom_core.la
TESTS += runtime/util/test/copy_stream
