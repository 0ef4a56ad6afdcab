# t/gpu/: the prepared GPU check (t/gpu/README). Its programs are built
# here too, wherever configure finds what they need, so that they cannot
# rot between GPU runs; t/gpu/make-build.sh builds them into the build it
# carries to a GPU machine.
EXTRA_DIST += t/gpu/README t/gpu/device-check.sh t/gpu/make-build.sh t/gpu/torch_cuda.py

if HAVE_NCCL
# stream ordering on a user stream, refused buffers, the NCCL timeout
GPU_CHECK_SOURCES = t/gpu/gpucheck.c t/gpu/gpucheck.h
check_PROGRAMS += t/gpu/stream_order t/gpu/bad_buffers t/gpu/nccl_timeout
t_gpu_stream_order_SOURCES = t/gpu/stream_order.c $(GPU_CHECK_SOURCES)
t_gpu_stream_order_CFLAGS = $(AM_CFLAGS) $(CUDA_CFLAGS)
t_gpu_stream_order_LDADD = runtime/libloom.la $(CUDA_LIBS)
t_gpu_bad_buffers_SOURCES = t/gpu/bad_buffers.c $(GPU_CHECK_SOURCES)
t_gpu_bad_buffers_CFLAGS = $(AM_CFLAGS) $(CUDA_CFLAGS)
t_gpu_bad_buffers_LDADD = runtime/libloom.la $(CUDA_LIBS) -ldl
t_gpu_nccl_timeout_SOURCES = t/gpu/nccl_timeout.c $(GPU_CHECK_SOURCES)
t_gpu_nccl_timeout_CFLAGS = $(AM_CFLAGS) $(CUDA_CFLAGS)
t_gpu_nccl_timeout_LDADD = runtime/libloom.la $(CUDA_LIBS)
endif

# the plugin's planner on the live topology and NVML: the spank/ sources
# loom.so is made of (never libloom); without hwloc it can only say so
check_PROGRAMS += t/gpu/loom-topo-probe
t_gpu_loom_topo_probe_SOURCES = t/gpu/topo_probe.c spank/topology.c spank/affinity.c spank/strbuf.c
t_gpu_loom_topo_probe_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank $(HWLOC_CFLAGS)
t_gpu_loom_topo_probe_LDADD = $(HWLOC_LIBS) -ldl
