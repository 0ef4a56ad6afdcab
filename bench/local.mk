# bench/: loom-bench, nccl-tests style bandwidth of libloom's collectives
# (optionally beside Open MPI's, --peer mpi). See bench/README.md.
bin_PROGRAMS += bench/loom-bench
bench_loom_bench_SOURCES = bench/loom-bench.c bench/loomvals.h \
	bench/bench-print.c bench/bench-print.h bench/bench-json.c
# --json is built with jansson (the tool links it, libloom does not)
bench_loom_bench_CFLAGS = $(AM_CFLAGS) $(JANSSON_CFLAGS)
bench_loom_bench_LDADD = runtime/libloom.la $(JANSSON_LIBS) -lm
if HAVE_MPI
bench_loom_bench_CFLAGS += $(MPI_CFLAGS)
bench_loom_bench_LDADD += $(MPI_LIBS)
endif
EXTRA_DIST += bench/README.md bench/compare bench/compare-report.py bench/gloo-bench.py
EXTRA_DIST += bench/dcp-bench.py
EXTRA_DIST += bench/ddp-step.py bench/inplace.py
# a lost node: heal in place beside the requeue path (t/t5009)
EXTRA_DIST += bench/recovery
# how fast two CPUs hand cache lines over (runtime/coll/near.c); not installed
noinst_PROGRAMS += bench/handoff
bench_handoff_SOURCES = bench/handoff.c
