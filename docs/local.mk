# docs/: the environment contract between plugin and runtime, man pages.
EXTRA_DIST += docs/environment.md
dist_man_MANS = docs/man/loom.3 docs/man/loom.8

# loom_<function>(3) pages: each is a .so link to loom(3)
LOOM_MAN3_LINKS = loom_init loom_init_backend loom_finalize loom_comm_rank \
	loom_comm_size loom_comm_split loom_comm_dup loom_comm_free loom_comm_abort \
	loom_comm_set_timeout loom_mesh loom_allreduce loom_broadcast loom_reduce \
	loom_allgather loom_reduce_scatter loom_alltoall loom_barrier loom_send \
	loom_recv loom_iallreduce loom_wait loom_test loom_strerror

install-data-hook:
	$(MKDIR_P) '$(DESTDIR)$(man3dir)'
	for f in $(LOOM_MAN3_LINKS); do \
		echo '.so man3/loom.3' >'$(DESTDIR)$(man3dir)'/$$f.3 || exit 1; done

uninstall-hook:
	for f in $(LOOM_MAN3_LINKS); do rm -f '$(DESTDIR)$(man3dir)'/$$f.3; done
