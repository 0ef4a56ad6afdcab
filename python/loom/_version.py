"""The package's version: loom's own (configure.ac's AC_INIT), which
pyproject.toml reads too; the unit tests check that libloom agrees."""
__version__ = "0.1.0"
