"""Loading libloom with ctypes, lazily, and its prototypes.

`import loom` loads nothing: the first call that needs libloom loads it
(loom.StopSignal, which is pure Python, never does). Where the library
comes from, in this order: the path in LOOM_LIBRARY (only that, when
set: in-tree tests point it at runtime/.libs); the soname through the
dynamic loader's search path; the libdir that make install recorded
(_paths.py, absent in the source tree and in a pip install). A library
that cannot be loaded is loom.LibraryError, raised by each call that
needs it (so setting LOOM_LIBRARY later in the process still works).
"""
import ctypes
import os
from typing import Any, List, Tuple, TypeVar

from ._errors import LibraryError, error, invalid, wrong_type

SONAME = "libloom.so.0"


def _candidates() -> List[Tuple[str, str]]:
    env = os.environ.get("LOOM_LIBRARY")
    if env:
        return [("LOOM_LIBRARY=" + env, env)]
    found = [(SONAME + " (the dynamic loader's search path)", SONAME)]
    try:
        from . import _paths  # type: ignore[attr-defined]  # by make install only
        path = os.path.join(_paths.LIBDIR, SONAME)
        found.append((path + " (the libdir of make install)", path))
    except ImportError:
        pass
    return found


_c = ctypes
_P = _c.c_void_p
_S = _c.c_size_t
# name: (restype, argtypes)
_PROTOS = {
    "loom_strerror": (_c.c_char_p, [_c.c_int]),
    "loom_version": (_c.c_char_p, []),
    "loom_init": (_c.c_int, [_c.POINTER(_P)]),
    "loom_finalize": (_c.c_int, [_P]),
    "loom_comm_rank": (_c.c_int, [_P]),
    "loom_comm_size": (_c.c_int, [_P]),
    "loom_comm_local_rank": (_c.c_int, [_P]),
    "loom_comm_local_size": (_c.c_int, [_P]),
    "loom_comm_backend": (_c.c_char_p, [_P]),
    "loom_comm_bootstrap": (_c.c_char_p, [_P]),
    "loom_allreduce": (_c.c_int, [_P, _P, _S, _c.c_int, _c.c_int, _P]),
    "loom_broadcast": (_c.c_int, [_P, _P, _S, _c.c_int, _c.c_int, _P]),
    "loom_allgather": (_c.c_int, [_P, _P, _S, _c.c_int, _P]),
    "loom_barrier": (_c.c_int, [_P]),
    "loom_comm_free": (_c.c_int, [_P]),
    "loom_comm_revoke": (_c.c_int, [_P]),
    "loom_comm_agree": (_c.c_int, [_P, _c.POINTER(_c.c_int)]),
    "loom_comm_failed": (_c.c_int, [_P, _c.POINTER(_c.c_int), _c.c_int, _c.POINTER(_c.c_int)]),
    "loom_comm_shrink": (_c.c_int, [_P, _c.POINTER(_P)]),
    "loom_comm_grow": (_c.c_int, [_P, _c.c_int, _c.POINTER(_P)]),
    "loom_ckpt_open": (_c.c_int, [_P, _c.c_char_p, _c.POINTER(_P)]),
    "loom_ckpt_tensor": (_c.c_int, [_P, _c.c_char_p, _c.c_int, _c.c_int, _c.POINTER(_S),
                                    _c.POINTER(_S), _c.POINTER(_S), _P]),
    "loom_ckpt_should_stop": (_c.c_int, [_P, _c.c_longlong, _c.POINTER(_c.c_int)]),
    "loom_ckpt_save": (_c.c_int, [_P, _c.c_longlong]),
    "loom_ckpt_restore": (_c.c_int, [_P, _c.POINTER(_c.c_longlong)]),
    "loom_ckpt_dir": (_c.c_char_p, [_P]),
    "loom_ckpt_set_keep": (_c.c_int, [_P, _c.c_int]),
    "loom_ckpt_set_async": (_c.c_int, [_P, _c.c_int]),
    "loom_ckpt_wait": (_c.c_int, [_P]),
    "loom_ckpt_reserve": (_c.c_int, [_P, _S]),
    "loom_ckpt_clear": (_c.c_int, [_P]),
    "loom_ckpt_latest": (_c.c_int, [_P, _c.POINTER(_c.c_longlong)]),
    "loom_ckpt_load": (_c.c_int, [_P, _c.c_longlong]),
    "loom_ckpt_close": (_c.c_int, [_P]),
    "loom_ckpt_request_requeue": (_c.c_int, [_c.c_char_p, _c.c_longlong, _c.c_int]),
}


def _load() -> ctypes.CDLL:
    tried = []
    for what, path in _candidates():
        try:
            dll = ctypes.CDLL(path)
            break
        except OSError as e:
            tried.append("%s: %s" % (what, e))
    else:
        raise LibraryError("cannot load libloom; tried " + "; ".join(tried) +
                           ". Install libloom (make install, or the libloom0 package), or "
                           "set LOOM_LIBRARY to the path of libloom.so.0")
    for name, (res, args) in _PROTOS.items():
        try:
            f = getattr(dll, name)
        except AttributeError:
            raise LibraryError("%s lacks %s: it is older than this package; install the "
                               "libloom of the same loom version, or set LOOM_LIBRARY to "
                               "its path" % (dll._name, name)) from None
        f.restype, f.argtypes = res, args
    return dll


class _Lazy:
    """libloom's functions as attributes, the library loaded on the first
    lookup; each function found is kept on this object, so later calls
    cost what a direct ctypes call does."""

    def __getattr__(self, name: str) -> Any:
        if name not in _PROTOS:
            raise AttributeError(name)
        dll = _load()
        for n in _PROTOS:
            setattr(self, n, getattr(dll, n))
        self.__dict__["_dll"] = dll
        return getattr(dll, name)


lib: Any = _Lazy()


def check(rc: int, what: str) -> int:
    """Raise the loom.Error of a negative libloom status of the call `what`."""
    if rc < 0:
        raise error(rc, "%s: %s" % (what, lib.loom_strerror(rc).decode(errors="replace")))
    return rc


def check_step(step: int) -> int:
    """step as libloom takes it: a non-negative int (not a bool)."""
    if isinstance(step, bool) or not isinstance(step, int):
        raise wrong_type("step=%r: a non-negative integer" % (step,))
    if step < 0:
        raise invalid("step=%r: a non-negative integer" % (step,))
    return step


_C = TypeVar("_C", bound="Closing")


class Closing:
    """A with block closes the object (its close() method)."""

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError
