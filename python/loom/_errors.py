"""loom.Error and its subclasses: libloom's statuses as Python exceptions.

Every exception of the package is a loom.Error (status, name, message),
so `except loom.Error` catches them all; each subclass is also the
builtin exception Python programs expect for its kind of failure, so
`except ValueError` or `except TimeoutError` catches it too.
"""
import builtins
from typing import Any, Dict, Tuple, Type

# loom_status_t of loom.h
STATUS_NAMES: Dict[int, str] = {
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
    -13: "LOOM_ERR_REVOKED",
}
ERR_INVALID = -1
ERR_SYSTEM = -3
ERR_TIMEOUT = -4
ERR_PEER_LOST = -5
ERR_UNSUPPORTED = -8
ERR_IO = -10
ERR_CORRUPT = -11
ERR_NOT_FOUND = -12
ERR_REVOKED = -13


class Error(Exception):
    """An error of libloom, or a bad argument found before calling it.

    Attributes: status (libloom's negative status code), name (its name in
    loom.h, e.g. "LOOM_ERR_INVALID") and message (what failed and why;
    libloom's own log line on stderr may say more). Statuses without a
    subclass below (LOOM_ERR_MISMATCH, LOOM_ERR_BOOTSTRAP, LOOM_ERR_ABORTED,
    ...) are raised as loom.Error itself.
    """

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.name = STATUS_NAMES.get(status, "LOOM_ERR_%d" % status)
        self.message = message
        super().__init__("%s: %s" % (self.name, message))

    def __reduce__(self) -> Tuple[Any, ...]:
        # rebuilt from (status, message), not from the formatted text
        return (type(self), (self.status, self.message))


class InvalidArgument(Error, builtins.ValueError):
    """A bad argument value (LOOM_ERR_INVALID): out of range, a closed
    object, a call loom.so's environment does not allow."""


class InvalidType(Error, builtins.TypeError):
    """An argument of the wrong type (status LOOM_ERR_INVALID): a list
    where a buffer is needed, a dtype libloom lacks, a float step."""


class Timeout(Error, builtins.TimeoutError):
    """An operation passed its deadline (LOOM_ERR_TIMEOUT; LOOM_TIMEOUT,
    LOOM_BOOTSTRAP_TIMEOUT). The communicator fails every later call."""


class PeerLost(Error, builtins.ConnectionError):
    """A peer process died or closed its link (LOOM_ERR_PEER_LOST)."""


class Revoked(Error, builtins.ConnectionError):
    """The communicator was revoked by a member (LOOM_ERR_REVOKED): agree
    and shrink still work on it (docs/fault-tolerance.md)."""


class IOFailure(Error, builtins.OSError):
    """A system call or file I/O failed, or a file failed its check
    (LOOM_ERR_SYSTEM, LOOM_ERR_IO, LOOM_ERR_CORRUPT)."""


class LibraryError(Error, builtins.OSError):
    """libloom cannot be loaded, or it is older than this package (status
    LOOM_ERR_UNSUPPORTED). Raised by the first call that needs libloom,
    not by `import loom`; LOOM_LIBRARY names the library to load."""

    def __init__(self, message: str) -> None:
        super().__init__(ERR_UNSUPPORTED, message)

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (self.message,))


_BY_STATUS: Dict[int, Type[Error]] = {
    ERR_INVALID: InvalidArgument,
    ERR_SYSTEM: IOFailure,
    ERR_TIMEOUT: Timeout,
    ERR_PEER_LOST: PeerLost,
    ERR_REVOKED: Revoked,
    ERR_IO: IOFailure,
    ERR_CORRUPT: IOFailure,
}

PUBLIC = (Error, InvalidArgument, InvalidType, Timeout, PeerLost, IOFailure, LibraryError,
          Revoked)


def error(status: int, message: str) -> Error:
    """The exception of libloom status `status`: its subclass, else Error."""
    return _BY_STATUS.get(status, Error)(status, message)


def invalid(message: str) -> InvalidArgument:
    """The exception of a bad argument value."""
    return InvalidArgument(ERR_INVALID, message)


def wrong_type(message: str) -> InvalidType:
    """The exception of an argument of the wrong type."""
    return InvalidType(ERR_INVALID, message)
