# LOOM_CHECK_TORCH: the c10d process group "loom" (torch/, the Python
# extension loom._c10d) for the Python configure found: built when that
# Python imports torch and PyTorch's C++ headers (Debian: libtorch-dev)
# and pybind11's (pybind11-dev) compile with the C++ compiler; left out
# with a one-line reason otherwise (configure does not fail, unless
# --enable-torch was given).
# TORCH_CPPFLAGS (torch/torch_flags.py says what they are) and
# TORCH_LIBS: what the extension compiles and links with.
AC_DEFUN([LOOM_CHECK_TORCH], [
  AC_ARG_ENABLE([torch],
    [AS_HELP_STRING([--disable-torch], [do not build the PyTorch process group loom (loom._c10d)])],
    [], [enable_torch=check])
  loom_have_torch=no
  TORCH_CPPFLAGS=
  TORCH_LIBS=
  AS_IF([test "x$enable_torch" = xno], [loom_summary_torch="no (--disable-torch)"],
    [test $loom_have_python != yes], [loom_summary_torch="no (no Python package: see above)"],
    [
      AC_MSG_CHECKING([for torch in $PYTHON])
      loom_torch_out=`$PYTHON "$srcdir/torch/torch_flags.py" 2>/dev/null`
      AS_IF([test -z "$loom_torch_out"], [
        AC_MSG_RESULT([no])
        loom_summary_torch="no ($PYTHON cannot import torch: install python3-torch)"
      ], [
        loom_torch_version=`echo "$loom_torch_out" | sed -n 1p`
        AC_MSG_RESULT([$loom_torch_version])
        loom_torch_inc=`echo "$loom_torch_out" | sed -n 2p`
        loom_torch_defs=`echo "$loom_torch_out" | sed -n 3p`
        TORCH_CPPFLAGS="$loom_torch_inc $loom_torch_defs"
        loom_torch_ldflags=`echo "$loom_torch_out" | sed -n 4p`
        AC_LANG_PUSH([C++])
        loom_save_CPPFLAGS=$CPPFLAGS
        CPPFLAGS="$CPPFLAGS $loom_torch_inc"
        AC_MSG_CHECKING([whether PyTorch's C++ headers and pybind11 compile])
        AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include <torch/extension.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
]], [[c10d::AllreduceOptions o; (void)o;]])],
          [AC_MSG_RESULT([yes]); loom_have_torch=yes],
          [AC_MSG_RESULT([no])
           loom_summary_torch="no (torch/extension.h or c10d/ProcessGroup.hpp do not compile: install libtorch-dev pybind11-dev)"])
        CPPFLAGS=$loom_save_CPPFLAGS
        AC_LANG_POP([C++])
        AS_IF([test $loom_have_torch = yes], [
          TORCH_LIBS="$loom_torch_ldflags -ltorch_python -ltorch -ltorch_cpu -lc10"
          loom_summary_torch="yes (torch $loom_torch_version: loom._c10d into $pythondir/loom)"])
      ])
    ])
  AS_IF([test "x$enable_torch" = xyes && test $loom_have_torch != yes],
    [AC_MSG_ERROR([--enable-torch: $loom_summary_torch])])
  AC_SUBST([TORCH_CPPFLAGS])
  AC_SUBST([TORCH_LIBS])
  AM_CONDITIONAL([BUILD_TORCH], [test $loom_have_torch = yes])
])
