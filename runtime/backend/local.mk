# runtime/backend/: the instances of the backend interface (native, MPI,
# NCCL), their unit tests, and the backend test programs of the cluster
# tests t/t6*.t.
runtime_libloom_core_la_SOURCES += runtime/backend/backend.h runtime/backend/backend_native.c
if HAVE_MPI
runtime_libloom_core_la_SOURCES += runtime/backend/backend_mpi.c runtime/backend/backend_mpi_comm.c \
	runtime/backend/backend_mpi_ops.c runtime/backend/backend_mpi.h
runtime_libloom_core_la_CFLAGS += $(MPI_CFLAGS)
runtime_libloom_core_la_LIBADD += $(MPI_LIBS)

check_PROGRAMS += runtime/backend/test/backend_mpi_ops runtime/backend/test/backend_mpi_status
runtime_backend_test_backend_mpi_ops_SOURCES = runtime/backend/test/backend_mpi_ops.c
runtime_backend_test_backend_mpi_ops_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
runtime_backend_test_backend_mpi_ops_LDADD = runtime/libloom_core.la $(MPI_LIBS) -lm
runtime_backend_test_backend_mpi_status_SOURCES = runtime/backend/test/backend_mpi_status.c
runtime_backend_test_backend_mpi_status_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
runtime_backend_test_backend_mpi_status_LDADD = runtime/libloom_core.la $(MPI_LIBS)
TESTS += runtime/backend/test/backend_mpi_ops runtime/backend/test/backend_mpi_status

# an MPI program adopting loom (loom_comm_from_mpi), for t6001
check_PROGRAMS += t/backend/mpi_adopt
t_backend_mpi_adopt_SOURCES = t/backend/mpi_adopt.c
t_backend_mpi_adopt_CFLAGS = $(AM_CFLAGS) $(MPI_CFLAGS)
t_backend_mpi_adopt_LDADD = runtime/libloom.la $(MPI_LIBS)
endif
if HAVE_NCCL
runtime_libloom_core_la_SOURCES += runtime/backend/backend_nccl.c
runtime_libloom_core_la_CFLAGS += $(NCCL_CFLAGS) $(CUDA_CFLAGS)
runtime_libloom_core_la_LIBADD += $(NCCL_LIBS) $(CUDA_LIBS)
endif
if HAVE_CUDA
# how many CUDA devices this machine has (t6010 skips without one)
check_PROGRAMS += t/backend/gpu_count
t_backend_gpu_count_SOURCES = t/backend/gpu_count.c
t_backend_gpu_count_CFLAGS = $(AM_CFLAGS) $(CUDA_CFLAGS)
t_backend_gpu_count_LDADD = $(CUDA_LIBS)
endif

# backend-independent check of every loom.h collective against a serial
# reference (any backend: LOOM_BACKEND), and a small allreduce timer
check_PROGRAMS += t/backend/mpi_check
t_backend_mpi_check_SOURCES = t/backend/mpi_check.c
t_backend_mpi_check_LDADD = runtime/libloom.la -lm
EXTRA_DIST += t/backend/lib.sh
dist_check_SCRIPTS += \
	t/t6000-backend-mpi.t \
	t/t6001-backend-mpi-adopt.t \
	t/t6010-backend-nccl.t \
	t/t6011-gpu-device-check.t
