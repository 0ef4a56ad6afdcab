# docs/: the environment contract between plugin and runtime, man pages.
EXTRA_DIST += docs/admin.md docs/environment.md docs/security.md docs/flight-format.md docs/scale.md docs/algorithms.md \
	docs/fault-tolerance.md
EXTRA_DIST += docs/performance/README.md docs/performance/2026-12-06-full-run.md docs/performance/method-checks.md \
	docs/performance/2026-12-03-container-build.md docs/performance/2026-12-06-dcp-bench.md \
	docs/performance/2026-12-06-recovery.md \
	docs/performance/2026-12-06-dcp-async-overlap.md \
	docs/performance/2026-12-06-torch-loom.md \
	docs/performance/2026-12-06-2028-recovery.md \
	docs/performance/2026-12-06-2041-torch-inplace.md \
	docs/performance/2026-12-06-2132-torch-ddp.md \
	docs/performance/2026-12-06-2209-torch-ddp-quiet.md
dist_man_MANS = docs/man/loom.3 docs/man/loom_dp.3 docs/man/loom_ckpt.3 docs/man/loom.8 docs/man/loom-python.7 \
	docs/man/loom-bench.1 docs/man/loom-ckpt-bench.1 docs/man/loom-examples.1 \
	docs/man/loom-doctor.1

# the example commands' pages: .so links to loom-examples(1)
LOOM_EXAMPLE_MAN1_LINKS = loom-hello loom-dp-train loom-tp-linear loom-pipeline \
	loom-mesh loom-matmul-io

# loom_<function>(3) pages: each is a .so link to loom(3)
LOOM_MAN3_LINKS = loom_init loom_init_backend loom_finalize loom_comm_rank \
	loom_comm_size loom_comm_split loom_comm_dup loom_comm_free loom_comm_abort \
	loom_comm_set_timeout loom_mesh loom_allreduce loom_broadcast loom_reduce \
	loom_allgather loom_reduce_scatter loom_alltoall loom_barrier loom_send \
	loom_recv loom_iallreduce loom_wait loom_test loom_strerror

LOOM_DP_MAN3_LINKS = loom_dp_create loom_dp_add loom_dp_ready loom_dp_poll \
	loom_dp_finish loom_dp_stats loom_dp_broadcast_params loom_dp_free
LOOM_CKPT_MAN3_LINKS = loom_ckpt_open loom_ckpt_tensor loom_ckpt_should_stop \
	loom_ckpt_save loom_ckpt_restore loom_ckpt_load loom_ckpt_latest \
	loom_ckpt_resume_step loom_ckpt_close loom_ckpt_request_requeue \
	loom_ckpt_set_async loom_ckpt_wait loom_ckpt_reserve loom_ckpt_clear

install-data-hook:
	$(MKDIR_P) '$(DESTDIR)$(man3dir)' '$(DESTDIR)$(man1dir)'
	for f in $(LOOM_EXAMPLE_MAN1_LINKS); do \
		echo '.so man1/loom-examples.1' >'$(DESTDIR)$(man1dir)'/$$f.1 || exit 1; done
	for f in $(LOOM_MAN3_LINKS); do \
		echo '.so man3/loom.3' >'$(DESTDIR)$(man3dir)'/$$f.3 || exit 1; done
	for f in $(LOOM_DP_MAN3_LINKS); do \
		echo '.so man3/loom_dp.3' >'$(DESTDIR)$(man3dir)'/$$f.3 || exit 1; done
	for f in $(LOOM_CKPT_MAN3_LINKS); do \
		echo '.so man3/loom_ckpt.3' >'$(DESTDIR)$(man3dir)'/$$f.3 || exit 1; done

uninstall-hook:
	for f in $(LOOM_MAN3_LINKS) $(LOOM_DP_MAN3_LINKS) $(LOOM_CKPT_MAN3_LINKS); do \
		rm -f '$(DESTDIR)$(man3dir)'/$$f.3; done
	for f in $(LOOM_EXAMPLE_MAN1_LINKS); do rm -f '$(DESTDIR)$(man1dir)'/$$f.1; done
