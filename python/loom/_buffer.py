"""The memory of a Python object as libloom sees it: address, element
count and dtype, read from the buffer protocol (numpy arrays, bytearray,
array.array, CPU torch tensors through .numpy())."""
import ctypes
import sys
from typing import Any, Tuple

from ._errors import invalid, wrong_type

# loom_dtype_t of loom.h, by (buffer format character, item size)
_DTYPES = {
    ("b", 1): 0,                                      # LOOM_INT8
    ("i", 4): 1, ("l", 4): 1, ("q", 4): 1,            # LOOM_INT32
    ("i", 8): 2, ("l", 8): 2, ("q", 8): 2,            # LOOM_INT64
    ("e", 2): 3,                                      # LOOM_FLOAT16
    ("f", 4): 5,                                      # LOOM_FLOAT32
    ("d", 8): 6,                                      # LOOM_FLOAT64
}
DTYPE_NAMES = {0: "int8", 1: "int32", 2: "int64", 3: "float16", 4: "bfloat16",
               5: "float32", 6: "float64"}
_FOREIGN = ">" if sys.byteorder == "little" else "<"


class Buffer:
    """A writable, C-contiguous buffer pinned for as long as this object
    lives (the exporter cannot be resized meanwhile)."""

    def __init__(self, obj: Any, what: str) -> None:
        try:
            mv = memoryview(obj)
        except TypeError:
            raise wrong_type("%s: a %s has no buffer (pass a numpy array, or a CPU torch "
                             "tensor's .numpy())" % (what, type(obj).__name__)) from None
        if mv.readonly:
            raise invalid("%s: the buffer is read-only (the call writes into it)" % what)
        if not mv.c_contiguous:
            raise invalid("%s: the buffer is not C-contiguous (numpy.ascontiguousarray "
                          "makes a copy that is)" % what)
        fmt = mv.format
        if fmt[:1] == _FOREIGN:
            raise invalid("%s: format %r is not in this machine's byte order" % (what, fmt))
        base = fmt.lstrip("@=<>!")
        dtype = _DTYPES.get((base, mv.itemsize))
        if dtype is None:
            raise wrong_type("%s: buffer format %r (%d-byte items) is not a libloom dtype: "
                             "int8, int32, int64, float16, float32 or float64" %
                             (what, fmt, mv.itemsize))
        self.view = mv
        self.dtype = dtype
        self.count = mv.nbytes // mv.itemsize
        self.shape: Tuple[int, ...] = tuple(mv.shape or ()) if mv.ndim else (1,)
        self._mem = (ctypes.c_char * mv.nbytes).from_buffer(mv)
        self.addr = ctypes.addressof(self._mem)
