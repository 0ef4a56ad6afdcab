# torch/: the c10d process group "loom" for PyTorch, the one C++ part of
# the tree: loom._c10d, a Python extension over libloom's public API,
# installed into the Python package's folder beside loom/torch.py, which
# registers it with torch.distributed. Built when configure finds torch
# and its C++ headers (m4/loom_torch.m4); in-tree tests load it from
# LOOM_TORCH_EXTENSION.
EXTRA_DIST += torch/torch_flags.py
loomtorchdir = $(pkgpythondir)
loomtorch_LTLIBRARIES =
if BUILD_TORCH
loomtorch_LTLIBRARIES += torch/_c10d.la
endif
torch__c10d_la_SOURCES = torch/loom_pg.hpp torch/loom_pg.cpp torch/loom_work.cpp \
	torch/loom_cuda.hpp torch/loom_cuda.cpp torch/loom_module.cpp
torch__c10d_la_CPPFLAGS = $(AM_CPPFLAGS) $(TORCH_CPPFLAGS)
# -shared: libtool compiles the PIC objects only (a module has no static
# form; each file costs some 15 s of torch's headers)
torch__c10d_la_CXXFLAGS = $(LOOM_WARN_CFLAGS) -std=c++17 -pthread -shared
torch__c10d_la_LDFLAGS = -module -avoid-version -shared -pthread
# libloom by its built file, handed to the linker itself: through its
# .la libtool would relink the module at install time, which fails for
# `make install prefix=OTHER` (t/t0005), and libtool drops a plain .so
# from a module's libraries. loom.torch loads libloom before the module.
torch__c10d_la_LDFLAGS += -Wl,runtime/.libs/libloom.so.0
torch__c10d_la_LIBADD = $(TORCH_LIBS)
# CUDA tensors go to libloom's NCCL backend on streams of the group's own
# (loom_cuda.cpp): the CUDA runtime, where libloom has it
if HAVE_CUDA
torch__c10d_la_CPPFLAGS += -DLOOM_TORCH_CUDA $(CUDA_CFLAGS)
torch__c10d_la_LIBADD += $(CUDA_LIBS)
endif
EXTRA_torch__c10d_la_DEPENDENCIES = runtime/libloom.la

# its unit tests on a world of one (no cluster)
EXTRA_DIST += python/test/test_c10d.py
if BUILD_TORCH
TESTS += python/test/test_c10d.py
AM_TESTS_ENVIRONMENT += \
	LOOM_TORCH_EXTENSION='$(abs_top_builddir)/torch/.libs/_c10d.so'; \
	export LOOM_TORCH_EXTENSION;
endif

# the cluster test and its programs (skipped where the extension is not built)
dist_check_SCRIPTS += t/t5106-torch-backend.t t/t5107-torch-bench.t t/t5108-torch-groups.t
EXTRA_DIST += t/python/torch_backend.py t/python/torch_ddp_compare.py t/python/torch_fault.py \
	t/python/torch_mismatch.py t/python/torch_hold.py t/python/torch_groups.py
EXTRA_DIST += contrib/debian/python3-loom-torch.install
