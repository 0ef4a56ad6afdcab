# examples/: small programs that show how to use loom.
bin_PROGRAMS += examples/loom-hello
examples_loom_hello_SOURCES = examples/hello.c
examples_loom_hello_LDADD = runtime/libloom.la

# examples that compute something and check it against the serial result
noinst_HEADERS += examples/common.h
bin_PROGRAMS += examples/loom-dp-train
examples_loom_dp_train_SOURCES = examples/dp_train.c
examples_loom_dp_train_LDADD = runtime/libloom.la -lm
bin_PROGRAMS += examples/loom-mesh
examples_loom_mesh_SOURCES = examples/mesh.c
examples_loom_mesh_LDADD = runtime/libloom.la
bin_PROGRAMS += examples/loom-tp-linear
examples_loom_tp_linear_SOURCES = examples/tp_linear.c
examples_loom_tp_linear_LDADD = runtime/libloom.la -lm
bin_PROGRAMS += examples/loom-pipeline
examples_loom_pipeline_SOURCES = examples/pipeline.c
examples_loom_pipeline_LDADD = runtime/libloom.la -lm
bin_PROGRAMS += examples/loom-matmul-io
examples_loom_matmul_io_SOURCES = examples/matmul_io.c
examples_loom_matmul_io_LDADD = runtime/libloom.la

# batch scripts, installed beside the docs
exampledir = $(docdir)/examples
dist_example_DATA = examples/dp_train.sbatch examples/mesh.sbatch \
	examples/tp_linear.sbatch examples/pipeline.sbatch \
	examples/matmul_io.sbatch \
	examples/numpy_allreduce.py examples/numpy_allreduce.sbatch \
	examples/torch_ddp_requeue.py examples/torch_ddp_requeue.sbatch \
	examples/dp_train_heal.sbatch \
	examples/torch_ddp_gpu.py examples/torch_ddp_gpu.sbatch

# their tests, on the live cluster
dist_check_SCRIPTS += t/t5001-dp-train.t t/t5002-mesh.t t/t5003-tp-linear.t \
	t/t5004-pipeline.t t/t5005-matmul-io.t t/t5006-sbatch.t \
	t/t5007-hello.t t/t5008-dp-heal.t t/t5009-recovery-bench.t
dist_example_DATA += examples/torch_ddp_loom.py examples/torch_ddp_loom.sbatch
