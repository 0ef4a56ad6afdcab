# Detection of loom's optional (and the plugin's required) dependencies.
# Every macro sets loom_summary_<part> for the summary table and an
# AM_CONDITIONAL; a missing optional part disables itself with a reason.

# LOOM_WITH_PREFIX(name): --with-name[=PREFIX] / --without-name
AC_DEFUN([LOOM_WITH_PREFIX], [
  AC_ARG_WITH([$1],
    [AS_HELP_STRING([--with-$1@<:@=PREFIX@:>@], [$2 (default: check)])],
    [], [with_]m4_translit([$1], [-], [_])[=check])
])

AC_DEFUN([LOOM_CHECK_SLURM], [
  AC_ARG_ENABLE([spank],
    [AS_HELP_STRING([--disable-spank], [build only the runtime, not the Slurm plugin])],
    [], [enable_spank=yes])
  LOOM_WITH_PREFIX([slurm], [Slurm installation prefix for slurm/spank.h])
  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR], [install loom.so here (default: Slurm's plugin directory)])],
    [], [with_slurm_plugindir=auto])
  SLURM_CPPFLAGS=""
  SLURM_LIBS=""
  loom_have_spank=no
  AS_IF([test "x$enable_spank" = xno -o "x$with_slurm" = xno],
    [loom_summary_spank="no (disabled by --disable-spank/--without-slurm)"],
    [
      AS_IF([test "x$with_slurm" != xcheck -a "x$with_slurm" != xyes],
        [SLURM_CPPFLAGS="-I$with_slurm/include"; SLURM_LIBS="-L$with_slurm/lib"])
      save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
      AC_CHECK_HEADER([slurm/spank.h], [loom_have_spank=yes])
      CPPFLAGS=$save_CPPFLAGS
      AS_IF([test $loom_have_spank = yes],
        [loom_summary_spank=yes],
        [AS_IF([test "x$enable_spank" = xyes -a "x$with_slurm" != xcheck],
           [AC_MSG_ERROR([slurm/spank.h not found; install libslurm-dev, or pass --disable-spank to build only the runtime])])
         loom_summary_spank="no (slurm/spank.h not found: install libslurm-dev)"])
    ])
  AS_IF([test "x$with_slurm_plugindir" = xauto -o "x$with_slurm_plugindir" = xyes],
    [AS_IF([test -d "$libdir/slurm-wlm" ],
           [slurm_plugindir="$libdir/slurm-wlm"],
           [test -d /usr/lib/$host_cpu-$host_os/slurm-wlm -o -d /usr/lib/x86_64-linux-gnu/slurm-wlm],
           [slurm_plugindir=`ls -d /usr/lib/*-linux-gnu/slurm-wlm 2>/dev/null | head -1`],
           [test -d /usr/lib64/slurm],
           [slurm_plugindir=/usr/lib64/slurm],
           [slurm_plugindir='${libdir}/slurm'])],
    [slurm_plugindir=$with_slurm_plugindir])
  loom_summary_plugindir=$slurm_plugindir
  AC_SUBST([slurm_plugindir])
  AC_SUBST([SLURM_CPPFLAGS])
  AM_CONDITIONAL([BUILD_SPANK], [test $loom_have_spank = yes])
])

AC_DEFUN([LOOM_CHECK_HWLOC], [
  LOOM_WITH_PREFIX([hwloc], [hwloc for CPU/NUMA/PCI topology in the plugin])
  loom_have_hwloc=no
  AS_IF([test "x$with_hwloc" = xno], [loom_summary_hwloc="no (--without-hwloc)"], [
    AS_IF([test "x$with_hwloc" != xcheck -a "x$with_hwloc" != xyes],
      [export PKG_CONFIG_PATH="$with_hwloc/lib/pkgconfig:$PKG_CONFIG_PATH"])
    PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [loom_have_hwloc=yes], [loom_have_hwloc=no])
    AS_IF([test $loom_have_hwloc = yes], [loom_summary_hwloc="yes (`$PKG_CONFIG --modversion hwloc`)"],
      [loom_summary_hwloc="no (hwloc >= 2.0 not found: install libhwloc-dev)"])
  ])
  AS_IF([test $loom_have_hwloc = yes], [AC_DEFINE([HAVE_HWLOC], [1], [hwloc available])])
  AM_CONDITIONAL([HAVE_HWLOC], [test $loom_have_hwloc = yes])
])

AC_DEFUN([LOOM_CHECK_XXHASH], [
  LOOM_WITH_PREFIX([xxhash], [xxHash for checkpoint checksums])
  loom_have_xxhash=no
  AS_IF([test "x$with_xxhash" = xno], [loom_summary_xxhash="no (--without-xxhash)"], [
    PKG_CHECK_MODULES([XXHASH], [libxxhash], [loom_have_xxhash=yes], [loom_have_xxhash=no])
    AS_IF([test $loom_have_xxhash = yes], [loom_summary_xxhash=yes],
      [loom_summary_xxhash="no (libxxhash not found: install libxxhash-dev)"])
  ])
  AS_IF([test $loom_have_xxhash = yes], [AC_DEFINE([HAVE_XXHASH], [1], [xxHash available])])
  AM_CONDITIONAL([HAVE_XXHASH], [test $loom_have_xxhash = yes])
])

AC_DEFUN([LOOM_CHECK_PMIX], [
  LOOM_WITH_PREFIX([pmix], [PMIx for bootstrap under srun --mpi=pmix])
  loom_have_pmix=no
  AS_IF([test "x$with_pmix" = xno], [loom_summary_pmix="no (--without-pmix)"], [
    AS_IF([test "x$with_pmix" != xcheck -a "x$with_pmix" != xyes],
      [export PKG_CONFIG_PATH="$with_pmix/lib/pkgconfig:$PKG_CONFIG_PATH"])
    PKG_CHECK_MODULES([PMIX], [pmix], [loom_have_pmix=yes], [loom_have_pmix=no])
    AS_IF([test $loom_have_pmix = yes], [loom_summary_pmix="yes (`$PKG_CONFIG --modversion pmix`)"],
      [AS_IF([test "x$with_pmix" != xcheck], [AC_MSG_ERROR([PMIx requested but not found])])
       loom_summary_pmix="no (pmix.pc not found: install libpmix-dev)"])
  ])
  AS_IF([test $loom_have_pmix = yes], [AC_DEFINE([HAVE_PMIX], [1], [PMIx available])])
  AM_CONDITIONAL([HAVE_PMIX], [test $loom_have_pmix = yes])
])

AC_DEFUN([LOOM_CHECK_MPI], [
  LOOM_WITH_PREFIX([mpi], [MPI (Open MPI) backend and loom-bench --peer mpi])
  loom_have_mpi=no
  MPI_CFLAGS=""; MPI_LIBS=""
  AS_IF([test "x$with_mpi" = xno], [loom_summary_mpi="no (--without-mpi)"], [
    AS_IF([test "x$with_mpi" != xcheck -a "x$with_mpi" != xyes],
      [export PKG_CONFIG_PATH="$with_mpi/lib/pkgconfig:$PKG_CONFIG_PATH"])
    PKG_CHECK_MODULES([MPI], [ompi], [loom_have_mpi=yes], [
      AC_PATH_PROG([MPICC], [mpicc], [no])
      AS_IF([test "x$MPICC" != xno], [
        MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null`
        MPI_LIBS=`$MPICC --showme:link 2>/dev/null`
        AS_IF([test -n "$MPI_LIBS"], [loom_have_mpi=yes])])])
    AS_IF([test $loom_have_mpi = yes], [
      save_CFLAGS=$CFLAGS; save_LIBS=$LIBS
      CFLAGS="$CFLAGS $MPI_CFLAGS"; LIBS="$LIBS $MPI_LIBS"
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[MPI_Init(0, 0); MPI_Finalize();]])],
        [], [loom_have_mpi=no])
      CFLAGS=$save_CFLAGS; LIBS=$save_LIBS])
    AS_IF([test $loom_have_mpi = yes], [loom_summary_mpi=yes],
      [AS_IF([test "x$with_mpi" != xcheck], [AC_MSG_ERROR([MPI requested but mpi.h/libmpi not usable])])
       loom_summary_mpi="no (no usable MPI: install libopenmpi-dev)"])
  ])
  AC_SUBST([MPI_CFLAGS])
  AC_SUBST([MPI_LIBS])
  AS_IF([test $loom_have_mpi = yes], [AC_DEFINE([HAVE_MPI], [1], [MPI available])])
  AM_CONDITIONAL([HAVE_MPI], [test $loom_have_mpi = yes])
])

AC_DEFUN([LOOM_CHECK_CUDA], [
  LOOM_WITH_PREFIX([cuda], [CUDA runtime (default prefix /usr/local/cuda)])
  loom_have_cuda=no
  CUDA_CFLAGS=""; CUDA_LIBS=""
  AS_IF([test "x$with_cuda" = xno], [loom_summary_cuda="no (--without-cuda)"], [
    cuda_prefix=/usr/local/cuda
    AS_IF([test "x$with_cuda" != xcheck -a "x$with_cuda" != xyes], [cuda_prefix=$with_cuda])
    cuda_libdir=$cuda_prefix/lib64
    test -d "$cuda_libdir" || cuda_libdir=$cuda_prefix/lib
    save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS -I$cuda_prefix/include"
    LIBS="$LIBS -L$cuda_libdir -lcudart"
    AC_MSG_CHECKING([for CUDA runtime in $cuda_prefix])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>]], [[int n; cudaGetDeviceCount(&n);]])],
      [loom_have_cuda=yes], [loom_have_cuda=no])
    AC_MSG_RESULT([$loom_have_cuda])
    CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS
    AS_IF([test $loom_have_cuda = yes], [
      CUDA_CFLAGS="-I$cuda_prefix/include"
      CUDA_LIBS="-L$cuda_libdir -Wl,-rpath,$cuda_libdir -lcudart"
      loom_summary_cuda="yes ($cuda_prefix)"], [
      AS_IF([test "x$with_cuda" != xcheck], [AC_MSG_ERROR([CUDA requested but cudart not usable in $cuda_prefix])])
      loom_summary_cuda="no (cudart not found in $cuda_prefix)"])
  ])
  AC_SUBST([CUDA_CFLAGS])
  AC_SUBST([CUDA_LIBS])
  AS_IF([test $loom_have_cuda = yes], [AC_DEFINE([HAVE_CUDA], [1], [CUDA runtime available])])
  AM_CONDITIONAL([HAVE_CUDA], [test $loom_have_cuda = yes])
])

AC_DEFUN([LOOM_CHECK_NCCL], [
  LOOM_WITH_PREFIX([nccl], [NCCL backend (needs CUDA; default prefix: the CUDA prefix)])
  loom_have_nccl=no
  NCCL_CFLAGS=""; NCCL_LIBS=""
  AS_IF([test "x$with_nccl" = xno], [loom_summary_nccl="no (--without-nccl)"],
        [test $loom_have_cuda != yes], [
          AS_IF([test "x$with_nccl" != xcheck], [AC_MSG_ERROR([NCCL requested but CUDA is not available])])
          loom_summary_nccl="no (needs CUDA)"], [
    nccl_prefix=$cuda_prefix
    AS_IF([test "x$with_nccl" != xcheck -a "x$with_nccl" != xyes], [nccl_prefix=$with_nccl])
    nccl_libdir=$nccl_prefix/lib64
    test -d "$nccl_libdir" || nccl_libdir=$nccl_prefix/lib
    save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $CUDA_CFLAGS -I$nccl_prefix/include"
    LIBS="$LIBS -L$nccl_libdir -lnccl $CUDA_LIBS"
    AC_MSG_CHECKING([for NCCL in $nccl_prefix])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <nccl.h>]], [[int v; ncclGetVersion(&v);]])],
      [loom_have_nccl=yes], [loom_have_nccl=no])
    AC_MSG_RESULT([$loom_have_nccl])
    CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS
    AS_IF([test $loom_have_nccl = yes], [
      NCCL_CFLAGS="-I$nccl_prefix/include"
      NCCL_LIBS="-L$nccl_libdir -Wl,-rpath,$nccl_libdir -lnccl"
      loom_summary_nccl="yes ($nccl_prefix; compile/link only without a GPU)"], [
      AS_IF([test "x$with_nccl" != xcheck], [AC_MSG_ERROR([NCCL requested but not usable in $nccl_prefix])])
      loom_summary_nccl="no (nccl.h/libnccl not found in $nccl_prefix)"])
  ])
  AC_SUBST([NCCL_CFLAGS])
  AC_SUBST([NCCL_LIBS])
  AS_IF([test $loom_have_nccl = yes], [AC_DEFINE([HAVE_NCCL], [1], [NCCL available])])
  AM_CONDITIONAL([HAVE_NCCL], [test $loom_have_nccl = yes])
])

# OpenSSL's libcrypto: HMAC-SHA256 for the authenticated rendezvous and
# mesh (docs/security.md). Required: without it another local user could
# join a job, so there is no build without it.
AC_DEFUN([LOOM_CHECK_CRYPTO], [
  PKG_CHECK_MODULES([CRYPTO], [libcrypto >= 1.1.1], [],
    [AC_MSG_ERROR([libloom needs OpenSSL's libcrypto >= 1.1.1 to authenticate ranks (Debian: apt-get install libssl-dev)])])
  loom_summary_crypto="yes (`$PKG_CONFIG --modversion libcrypto`)"
])
