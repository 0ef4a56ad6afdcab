# python/: the pure-Python package loom (ctypes over libloom, no compiled
# extension) for the Python configure found, and its unit tests. Tests of
# the whole build run it from the source tree against the built libloom.
LOOM_PY_MODULES = python/loom/__init__.py python/loom/_lib.py python/loom/_buffer.py \
	python/loom/_world.py python/loom/_ckpt.py python/loom/_signal.py \
	python/loom/_errors.py python/loom/_version.py python/loom/torch.py \
	python/loom/_resumable.py python/loom/_dcp.py
EXTRA_DIST += $(LOOM_PY_MODULES) python/loom/_paths.py.in python/test/test_loom.py python/test/test_torch.py python/test/pytap.py \
	t/python/requeue_counter.py python/loom/py.typed python/pyproject.toml \
	t/python/dcp_drive.py
dist_check_SCRIPTS += t/t5100-python.t t/t5101-python-torch.t t/t5102-python-venv.t \
	t/t5103-torch-resumable.t
dist_check_SCRIPTS += t/t5104-dcp-bench.t t/t5105-torch-gpu-example.t
TEST_EXTENSIONS += .py
PY_LOG_DRIVER = $(LOG_DRIVER)
PY_LOG_COMPILER = $(PYTHON)
if BUILD_PYTHON
pkgpython_PYTHON = $(LOOM_PY_MODULES)
# PEP 561: the package's type hints are for type checkers to read
pkgpython_DATA = python/loom/py.typed
TESTS += python/test/test_loom.py python/test/test_torch.py
endif

# where make install put libloom, for the installed package to find it
# (written at install time, so that `make install prefix=...` holds)
if BUILD_PYTHON
install-data-local:
	$(MKDIR_P) '$(DESTDIR)$(pkgpythondir)'
	sed 's|@libdir[@]|$(libdir)|' '$(srcdir)/python/loom/_paths.py.in' \
		>'$(DESTDIR)$(pkgpythondir)/_paths.py'
uninstall-local:
	rm -f '$(DESTDIR)$(pkgpythondir)/_paths.py'
endif

# every test (the cluster ones too: srun passes it on) imports the package
# of this tree and the libloom just built
AM_TESTS_ENVIRONMENT += \
	PYTHONPATH='$(abs_top_srcdir)/python'; PYTHONDONTWRITEBYTECODE=1; \
	LOOM_LIBRARY='$(abs_top_builddir)/runtime/.libs/libloom.so.0'; \
	export PYTHONPATH PYTHONDONTWRITEBYTECODE LOOM_LIBRARY;
if BUILD_PYTHON
AM_TESTS_ENVIRONMENT += LOOM_PYTHON='$(PYTHON)'; export LOOM_PYTHON;
endif
