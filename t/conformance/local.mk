# t/conformance/: the backend-independent conformance suite. One program,
# run unchanged by every backend (LOOM_BACKEND), on one rank directly and
# on the live cluster by the t3NNN tests.
check_PROGRAMS += t/conformance/conformance
t_conformance_conformance_SOURCES = t/conformance/conformance.c t/conformance/devbuf.c \
	t/conformance/devbuf.h bench/loomvals.h
t_conformance_conformance_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/bench
t_conformance_conformance_LDADD = runtime/libloom.la -lm
if HAVE_CUDA
# --device: the collectives on cudaMalloc'd buffers (t/gpu/device-check.sh)
t_conformance_conformance_CPPFLAGS += $(CUDA_CFLAGS)
t_conformance_conformance_LDADD += $(CUDA_LIBS)
endif
EXTRA_DIST += t/conformance/lib.sh

# t3NNN: the suite and loom-bench, on one rank and on the live cluster
dist_check_SCRIPTS += \
	t/t3000-conformance-local.t \
	t/t3001-conformance-n4.t \
	t/t3002-conformance-n2-one-node.t \
	t/t3003-conformance-n2-two-nodes.t \
	t/t3004-conformance-errors.t \
	t/t3005-bench-cluster.t \
	t/t3007-bench-compare.t \
	t/t3008-compare-report.t \
	t/t3006-conformance-mpi-backend.t
