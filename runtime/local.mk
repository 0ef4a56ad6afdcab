# runtime/: libloom, the library training programs link. Knows nothing of SPANK.
lib_LTLIBRARIES += runtime/libloom.la
include_HEADERS += runtime/loom.h
pkgconfig_DATA += runtime/loom.pc
runtime_libloom_la_SOURCES = \
	runtime/error.c
runtime_libloom_la_LDFLAGS = -version-info 0:0:0

check_PROGRAMS += runtime/test/strerror
runtime_test_strerror_SOURCES = runtime/test/strerror.c
runtime_test_strerror_LDADD = runtime/libloom.la
TESTS += runtime/test/strerror
