# examples/: small programs that show how to use loom.
bin_PROGRAMS += examples/loom-hello
examples_loom_hello_SOURCES = examples/hello.c
examples_loom_hello_LDADD = runtime/libloom.la
