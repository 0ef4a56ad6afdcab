# runtime/: libloom, the library training programs link. Knows nothing of
# SPANK. One folder per layer, bottom up; a folder's files call only into
# their own folder and the ones before it in this list (t/t0007 checks the
# calls in the built objects; runtime/README.md says what each one does):
#   util metrics flight transport comm coll core boot backend api dp ckpt
# Everything goes into the convenience library libloom_core.la, which the
# unit tests link (internals included); the installed libloom.la is made
# from it and exports exactly the functions loom.h declares.
noinst_LTLIBRARIES += runtime/libloom_core.la
runtime_libloom_core_la_SOURCES =
runtime_libloom_core_la_CFLAGS = $(AM_CFLAGS) $(LOOM_LTO_FLAGS) -pthread
runtime_libloom_core_la_LIBADD =
include $(srcdir)/runtime/util/local.mk
include $(srcdir)/runtime/metrics/local.mk
include $(srcdir)/runtime/flight/local.mk
include $(srcdir)/runtime/transport/local.mk
include $(srcdir)/runtime/comm/local.mk
include $(srcdir)/runtime/coll/local.mk
include $(srcdir)/runtime/core/local.mk
include $(srcdir)/runtime/boot/local.mk
include $(srcdir)/runtime/backend/local.mk
include $(srcdir)/runtime/api/local.mk
include $(srcdir)/runtime/dp/local.mk
include $(srcdir)/runtime/ckpt/local.mk

lib_LTLIBRARIES += runtime/libloom.la
include_HEADERS += runtime/loom.h
pkgconfig_DATA += runtime/loom.pc
EXTRA_DIST += runtime/README.md
runtime_libloom_la_SOURCES =
runtime_libloom_la_LIBADD = runtime/libloom_core.la
runtime_libloom_la_LDFLAGS = -version-info 0:0:0 -pthread -export-symbols runtime/loom.sym \
	$(LOOM_SYMBOLIC_LDFLAGS) $(LOOM_LTO_FLAGS)
EXTRA_runtime_libloom_la_DEPENDENCIES = runtime/loom.sym
# the exported names: every function loom.h declares
runtime/loom.sym: $(srcdir)/runtime/loom.h
	$(AM_V_GEN)sed -n 's/^[a-z][a-z_ ]*[ *]\(loom_[a-z0-9_]*\)(.*/\1/p' \
		$(srcdir)/runtime/loom.h | sort -u >$@
CLEANFILES += runtime/loom.sym

# multi-rank test program for the cluster tests t/t2*.t (not installed)
check_PROGRAMS += t/runtime/coll-check
t_runtime_coll_check_SOURCES = t/runtime/coll-check.c
t_runtime_coll_check_LDADD = runtime/libloom.la -lm -lpthread
check_PROGRAMS += t/runtime/scale-check
t_runtime_scale_check_SOURCES = t/runtime/scale-check.c
t_runtime_scale_check_LDADD = runtime/libloom.la
check_PROGRAMS += t/runtime/ft-check
t_runtime_ft_check_SOURCES = t/runtime/ft-check.c t/runtime/rank-list.h
t_runtime_ft_check_LDADD = runtime/libloom.la
check_PROGRAMS += t/runtime/grow-check
t_runtime_grow_check_SOURCES = t/runtime/grow-check.c t/runtime/rank-list.h
t_runtime_grow_check_LDADD = runtime/libloom.la
# the node rendezvous' socket name, for the squatter of t2007
check_PROGRAMS += t/runtime/node-socket-name
t_runtime_node_socket_name_SOURCES = t/runtime/node-socket-name.c
t_runtime_node_socket_name_LDADD = runtime/libloom_core.la
EXTRA_DIST += t/runtime/lib.sh t/runtime/flight.sh
dist_check_SCRIPTS += \
	t/t2000-runtime-local.t \
	t/t2001-runtime-coll-env.t \
	t/t2002-runtime-coll-pmix.t \
	t/t2003-runtime-comm.t \
	t/t2004-runtime-failures.t \
	t/t2010-runtime-shrink.t \
	t/t2012-runtime-heartbeat.t \
	t/t2013-runtime-kill-paths.t \
	t/t2011-runtime-grow.t \
	t/t2005-runtime-scale.t \
	t/t2006-runtime-direct-reads.t \
	t/t2008-runtime-staged.t \
	t/t2009-runtime-tcp-segments.t \
	t/t2007-runtime-bootstrap-tree.t
