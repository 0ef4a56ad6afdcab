# LOOM_CHECK_PYTHON: the pure-Python package `loom` (python/loom) for the
# system's Python 3 (/usr/bin/python3 unless PYTHON is given). Without a
# Python 3 the package is not installed; configure does not fail.
# pythondir: the first of PREFIX/lib/python3/dist-packages (Debian's
# packages), PREFIX/lib/python3.X/dist-packages (Debian's /usr/local) and
# PREFIX/lib/python3.X/site-packages on that Python's sys.path, else its
# posix_prefix scheme (automake's own guess gives /usr/local/local/... with
# Debian's python3); --with-pythondir=DIR overrides.
AC_DEFUN([LOOM_CHECK_PYTHON], [
  AC_ARG_ENABLE([python],
    [AS_HELP_STRING([--disable-python], [do not install the Python package loom])],
    [], [enable_python=check])
  AC_ARG_WITH([pythondir],
    [AS_HELP_STRING([--with-pythondir=DIR], [install the Python package loom under DIR (default: see configure's summary)])],
    [], [with_pythondir=auto])
  loom_have_python=no
  AS_IF([test "x$enable_python" = xno],
    [loom_summary_python="no (--disable-python)"],
    [
      AS_IF([test -z "$PYTHON" && test -x /usr/bin/python3], [PYTHON=/usr/bin/python3])
      AM_PATH_PYTHON([3.7], [loom_have_python=yes], [:])
      AS_IF([test $loom_have_python = yes], [
        loom_py_prefix=$prefix
        test "x$loom_py_prefix" = xNONE && loom_py_prefix=$ac_default_prefix
        loom_py_out=`$PYTHON -c '
import sys, sysconfig
p = sys.argv@<:@1@:>@
v = "%d.%d" % sys.version_info@<:@:2@:>@
c = (p + "/lib/python3/dist-packages", p + "/lib/python" + v + "/dist-packages",
     p + "/lib/python" + v + "/site-packages")
d = next((x for x in c if x in sys.path), None)
print(d or sysconfig.get_path("purelib", "posix_prefix", vars={"base": p}), "on" if d else "off")
' "$loom_py_prefix"`
        loom_py_dir=`echo "$loom_py_out" | cut -d' ' -f1`
        loom_py_note=""
        AS_IF([test "x$with_pythondir" != xauto], [loom_py_dir=$with_pythondir],
          [echo "$loom_py_out" | grep -q ' off$' &&
             loom_py_note="; not on $PYTHON's sys.path: set PYTHONPATH"
           case $loom_py_dir in
           "$loom_py_prefix"/*) loom_py_dir='${prefix}'${loom_py_dir#"$loom_py_prefix"} ;;
           esac])
        pythondir=$loom_py_dir
        pkgpythondir='${pythondir}/loom'
        loom_summary_python="yes ($PYTHON $PYTHON_VERSION, into $pythondir$loom_py_note)"
      ], [
        AS_IF([test "x$enable_python" = xyes],
          [AC_MSG_ERROR([--enable-python: no Python >= 3.7 found; install python3 or set PYTHON])])
        loom_summary_python="no (no Python >= 3.7 found: install python3, or set PYTHON=...)"
      ])
    ])
  AM_CONDITIONAL([BUILD_PYTHON], [test $loom_have_python = yes])
])
