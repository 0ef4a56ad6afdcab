"""Loading libloom with ctypes, its prototypes, and loom.Error.

Where the library comes from, in this order: the path in LOOM_LIBRARY
(only that, when set: in-tree tests point it at runtime/.libs); the
soname through the dynamic loader's search path; the libdir that
make install recorded (_paths.py, absent in the source tree).
"""
import ctypes
import os

SONAME = "libloom.so.0"

# loom_status_t of loom.h
STATUS_NAMES = {
    0: "LOOM_SUCCESS",
    -1: "LOOM_ERR_INVALID",
    -2: "LOOM_ERR_NOMEM",
    -3: "LOOM_ERR_SYSTEM",
    -4: "LOOM_ERR_TIMEOUT",
    -5: "LOOM_ERR_PEER_LOST",
    -6: "LOOM_ERR_MISMATCH",
    -7: "LOOM_ERR_BOOTSTRAP",
    -8: "LOOM_ERR_UNSUPPORTED",
    -9: "LOOM_ERR_ABORTED",
    -10: "LOOM_ERR_IO",
    -11: "LOOM_ERR_CORRUPT",
    -12: "LOOM_ERR_NOT_FOUND",
}
ERR_INVALID = -1
ERR_NOT_FOUND = -12


class Error(Exception):
    """An error of libloom, or a bad argument found before calling it.

    Attributes: status (libloom's negative status code), name (its name in
    loom.h, e.g. "LOOM_ERR_INVALID") and message (what failed and why;
    libloom's own log line on stderr may say more).
    """

    def __init__(self, status, message):
        self.status = status
        self.name = STATUS_NAMES.get(status, "LOOM_ERR_%d" % status)
        self.message = message
        super().__init__("%s: %s" % (self.name, message))


def _candidates():
    env = os.environ.get("LOOM_LIBRARY")
    if env:
        return [("LOOM_LIBRARY=" + env, env)]
    found = [(SONAME + " (the dynamic loader's search path)", SONAME)]
    try:
        from . import _paths  # written by make install; absent in the source tree
        found.append((os.path.join(_paths.LIBDIR, SONAME) + " (the libdir of make install)",
                      os.path.join(_paths.LIBDIR, SONAME)))
    except ImportError:
        pass
    return found


def _load():
    tried = []
    for what, path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s: %s" % (what, e))
    raise ImportError("loom: cannot load libloom; tried " + "; ".join(tried) +
                      ". Install libloom (make install, or the libloom0 package), or set "
                      "LOOM_LIBRARY to the path of libloom.so.0")


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
    "loom_ckpt_open": (_c.c_int, [_P, _c.c_char_p, _c.POINTER(_P)]),
    "loom_ckpt_tensor": (_c.c_int, [_P, _c.c_char_p, _c.c_int, _c.c_int, _c.POINTER(_S),
                                    _c.POINTER(_S), _c.POINTER(_S), _P]),
    "loom_ckpt_should_stop": (_c.c_int, [_P, _c.c_longlong, _c.POINTER(_c.c_int)]),
    "loom_ckpt_save": (_c.c_int, [_P, _c.c_longlong]),
    "loom_ckpt_restore": (_c.c_int, [_P, _c.POINTER(_c.c_longlong)]),
    "loom_ckpt_dir": (_c.c_char_p, [_P]),
    "loom_ckpt_close": (_c.c_int, [_P]),
    "loom_ckpt_request_requeue": (_c.c_int, [_c.c_char_p, _c.c_longlong, _c.c_int]),
}

lib = _load()
for _name, (_res, _args) in _PROTOS.items():
    try:
        _f = getattr(lib, _name)
    except AttributeError:
        raise ImportError("loom: %s lacks %s: it is older than this package; install the "
                          "libloom of the same loom version" % (lib._name, _name)) from None
    _f.restype, _f.argtypes = _res, _args


def check(rc, what):
    """Raise Error for a negative libloom status of the call `what`."""
    if rc < 0:
        raise Error(rc, "%s: %s" % (what, lib.loom_strerror(rc).decode(errors="replace")))
    return rc


def invalid(message):
    """The Error of a bad argument (LOOM_ERR_INVALID)."""
    return Error(ERR_INVALID, message)


def check_step(step):
    """step as libloom takes it: a non-negative int (not a bool)."""
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise invalid("step=%r: a non-negative integer" % (step,))
    return step


class Closing:
    """A with block closes the object (its close() method)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
