#!/bin/sh
# The Python package loom installed with pip into a virtual environment
# (python3 -m venv --system-site-packages, where a site's torch may live),
# offline: pip install --no-build-isolation --no-index of python/ builds
# with the system's setuptools and downloads nothing. The installed copy
# (no _paths.py of make install) finds libloom through LOOM_LIBRARY or the
# dynamic loader's search path, and imports without it.
. "$LOOM_SRC_DIR/t/lib/test-lib.sh"
test_need_python
PY=$LOOM_PYTHON
ENV=$TEST_TMP/venv
"$PY" -m venv --system-site-packages "$ENV" >"$TEST_TMP/venv.out" 2>&1 ||
	skip_all "python3-venv is not installed: $PY -m venv fails (contrib/install-deps installs it)"
"$ENV/bin/python" -c "import setuptools, wheel" 2>/dev/null ||
	skip_all "python3-setuptools or python3-wheel is not installed (contrib/install-deps installs them)"
LIBS=$LOOM_BUILD_DIR/runtime/.libs
# the tests' own PYTHONPATH points at the source tree: the venv's copy must be the one imported
unset PYTHONPATH LOOM_LIBRARY

# pip builds in the source directory (build/, loom.egg-info/): a copy, so
# that the source tree stays clean (and may be read-only, as in distcheck)
test_expect_success 'pip install --no-build-isolation --no-index: offline into the venv, py.typed too' '
	cp -R "$LOOM_SRC_DIR/python" "$TEST_TMP/src" && chmod -R u+w "$TEST_TMP/src" &&
	"$ENV/bin/pip" --isolated install --no-build-isolation --no-index --no-cache-dir \
		--disable-pip-version-check "$TEST_TMP/src" >"$TEST_TMP/pip" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/pip" && test $rc = 0 &&
	site=$("$ENV/bin/python" -c "import sysconfig; print(sysconfig.get_path(\"purelib\"))") &&
	for f in __init__.py _errors.py _lib.py _signal.py _version.py py.typed; do
		test -f "$site/loom/$f" || { echo "$site/loom/$f not installed"; false; }
	done &&
	test ! -e "$site/loom/_paths.py" &&
	"$ENV/bin/pip" --isolated show loom | grep -x "Version: $("$PY" -c "
import sys; sys.path.insert(0, \"$LOOM_SRC_DIR/python/loom\"); import _version; print(_version.__version__)")"
'

test_expect_success 'the venv imports its copy; LOOM_LIBRARY at the build: a world of one' '
	cd "$TEST_TMP" &&
	LOOM_LIBRARY=$LIBS/libloom.so.0 "$ENV/bin/python" -c "
import loom, sys
assert loom.__file__.startswith(sys.prefix), loom.__file__
assert loom.library_version() == loom.__version__
w = loom.init()
print(w.rank, w.size, w.backend)
w.close()" >"$TEST_TMP/lib" 2>&1 && rc=0 || rc=$?; cat "$TEST_TMP/lib" && test $rc = 0 &&
	test "$(cat "$TEST_TMP/lib")" = "0 1 native"
'

test_expect_success 'without LOOM_LIBRARY: the soname through the loader path (LD_LIBRARY_PATH)' '
	cd "$TEST_TMP" &&
	LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$ENV/bin/python" -c "
import loom
print(loom.library_version() == loom.__version__)" >"$TEST_TMP/so" 2>&1 && rc=0 || rc=$?
	cat "$TEST_TMP/so" && test $rc = 0 && test "$(cat "$TEST_TMP/so")" = True
'

test_expect_success 'no libloom: import and StopSignal work; loom.init() raises loom.LibraryError naming LOOM_LIBRARY' '
	cd "$TEST_TMP" &&
	LOOM_LIBRARY=$TEST_TMP/none/libloom.so.0 "$ENV/bin/python" -c "
import os, signal, loom
stop = loom.StopSignal()
os.kill(os.getpid(), signal.SIGUSR1)
for _ in range(1000):
    if stop.requested:
        break
print(\"stop\", stop.signal == signal.SIGUSR1)
loom.init()" >"$TEST_TMP/nolib" 2>&1 && rc=0 || rc=$?; cat "$TEST_TMP/nolib" && test $rc = 1 &&
	grep -qx "stop True" "$TEST_TMP/nolib" &&
	grep -q "^loom.LibraryError: LOOM_ERR_UNSUPPORTED: cannot load libloom; tried LOOM_LIBRARY=$TEST_TMP/none/libloom.so.0: .*set LOOM_LIBRARY to the path of libloom.so.0$" \
		"$TEST_TMP/nolib"
'
test_done
