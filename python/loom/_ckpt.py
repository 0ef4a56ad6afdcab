"""loom.Checkpoint: libloom's coordinated checkpoint/restart (loom_ckpt(3))."""
import ctypes
from typing import Any, List, Optional, Sequence

from ._buffer import DTYPE_NAMES, Buffer
from ._errors import ERR_NOT_FOUND, invalid, wrong_type
from ._lib import Closing, check, check_step as _step, lib
from ._world import World

MAX_DIMS = 8


def _sizes(what: str, values: Sequence[int], ndim: int) -> Any:
    try:
        out = [int(v) for v in values]
    except (TypeError, ValueError):
        raise wrong_type("%s=%r: a sequence of non-negative integers" % (what, values)) from None
    if len(out) != ndim or any(v < 0 for v in out):
        raise invalid("%s=%r: %d non-negative integers (one per dimension of the tensor)" %
                      (what, values, ndim))
    return (ctypes.c_size_t * ndim)(*out)


class Checkpoint(Closing):
    """Coordinated checkpoint of a world's tensors (see loom_ckpt(3)).

        ck = loom.Checkpoint(world)             # dir: $LOOM_CKPT_DIR
        ck.tensor("w", w)                       # every rank, same order
        step = ck.restore()                     # None: nothing saved yet
        for step in range(0 if step is None else step + 1, steps):
            train(...)
            stop = ck.should_stop(step)         # same answer on every rank
            if stop or step % 100 == 0:
                ck.save(step)                   # a stop's save asks loom.so to requeue
            if stop:
                break                           # exit 0; the job is requeued
        ck.close()

    Every call except tensor() is collective: all ranks, same order. While
    a Checkpoint is open, SIGTERM and LOOM_CKPT_SIGNAL only set libloom's
    stop flag (handlers installed before are chained).

    A directory that cannot be written raises loom.IOFailure (an
    OSError), a checkpoint that does not fit the registered tensors
    loom.Error (LOOM_ERR_MISMATCH); bad arguments loom.InvalidArgument
    (a ValueError) or loom.InvalidType (a TypeError).
    """

    def __init__(self, world: World, dir: Optional[str] = None) -> None:
        if not isinstance(world, World):
            raise wrong_type("Checkpoint: world=%r is not a loom.World (use loom.init())" %
                             (world,))
        if dir is not None and not isinstance(dir, str):
            raise wrong_type("Checkpoint: dir=%r is not a string" % (dir,))
        self._world = world
        self._buffers: List[Buffer] = []    # registered memory stays pinned while open
        ck = ctypes.c_void_p()
        check(lib.loom_ckpt_open(world._handle("Checkpoint"),
                                 dir.encode() if dir is not None else None, ctypes.byref(ck)),
              "loom_ckpt_open(%s)" % (dir if dir is not None else "$LOOM_CKPT_DIR"))
        self._ck: Optional[ctypes.c_void_p] = ck
        self.dir: str = lib.loom_ckpt_dir(ck).decode()

    def _handle(self, what: str) -> ctypes.c_void_p:
        if not self._ck:
            raise invalid("%s: the checkpoint is closed" % what)
        return self._ck

    def tensor(self, name: str, x: Any, global_shape: Optional[Sequence[int]] = None,
               offset: Optional[Sequence[int]] = None) -> None:
        """Register x, this rank's block of tensor `name`: x's shape is the
        block's extent, at `offset` (default zeros) within `global_shape`
        (default x's shape: the whole tensor on every rank). x's memory is
        saved from and restored into in place, so keep it (and do not
        reallocate it) while the checkpoint is open. Not collective, but
        every rank registers the same names, dtypes and global shapes in
        the same order."""
        if not isinstance(name, str):
            raise wrong_type("tensor: name=%r is not a string" % (name,))
        ck = self._handle("tensor")
        b = Buffer(x, "tensor %s" % name)
        ndim = len(b.shape)
        if ndim > MAX_DIMS:
            raise invalid("tensor %s: %d dimensions, at most %d" % (name, ndim, MAX_DIMS))
        ext = (ctypes.c_size_t * ndim)(*b.shape)
        shape = _sizes("global_shape", b.shape if global_shape is None else global_shape, ndim)
        off = _sizes("offset", [0] * ndim if offset is None else offset, ndim)
        for d in range(ndim):
            if off[d] + ext[d] > shape[d]:
                raise invalid("tensor %s: dimension %d: offset %d + extent %d > global %d" %
                              (name, d, off[d], ext[d], shape[d]))
        check(lib.loom_ckpt_tensor(ck, name.encode(), b.dtype, ndim, shape, off, ext, b.addr),
              "loom_ckpt_tensor(%s)" % name)
        self._buffers.append(b)

    def declare(self, name: str, dtype: str, global_shape: Sequence[int]) -> None:
        """Declare tensor `name` with no block on this rank (dtype: "int8",
        "int32", "int64", "float16", "float32" or "float64"): a rank that
        holds none of a tensor others register still declares it, in the
        same order."""
        if not isinstance(name, str):
            raise wrong_type("declare: name=%r is not a string" % (name,))
        codes = {v: k for k, v in DTYPE_NAMES.items()}
        if dtype not in codes:
            raise invalid("declare %s: dtype=%r: one of %s" % (name, dtype, ", ".join(codes)))
        ndim = len(global_shape)
        if not 0 < ndim <= MAX_DIMS:
            raise invalid("declare %s: %d dimensions, 1 to %d" % (name, ndim, MAX_DIMS))
        shape = _sizes("global_shape", global_shape, ndim)
        check(lib.loom_ckpt_tensor(self._handle("declare"), name.encode(), codes[dtype], ndim,
                                   shape, None, None, None), "loom_ckpt_tensor(%s)" % name)

    def set_keep(self, keep: int) -> None:
        """Keep the newest `keep` (>= 1) committed checkpoints."""
        check(lib.loom_ckpt_set_keep(self._handle("set_keep"), _step(keep)), "loom_ckpt_set_keep")

    def set_async(self, on: bool) -> None:
        """on: save() returns once the blocks are copied to staging memory;
        `latest` moves once the data is durable (not collective)."""
        check(lib.loom_ckpt_set_async(self._handle("set_async"), 1 if on else 0),
              "loom_ckpt_set_async")

    def reserve(self, nbytes: int) -> None:
        """Prepare staging memory for async saves of `nbytes` bytes of this
        rank's state: a thread faults it in now, while the caller works,
        so that the first async save blocks only for its copy (for a state
        registered only at the save). Not collective."""
        if isinstance(nbytes, bool) or not isinstance(nbytes, int):
            raise wrong_type("reserve: nbytes=%r is not an integer" % (nbytes,))
        if nbytes < 0:
            raise invalid("reserve: nbytes=%r: a non-negative integer" % (nbytes,))
        check(lib.loom_ckpt_reserve(self._handle("reserve"), nbytes), "loom_ckpt_reserve")

    def clear(self) -> None:
        """Forget every registered tensor (the buffers are released), keeping
        the settings, the staging memory and the background writer: register
        a new state and save again without reopening. A save in flight is
        unaffected. Not collective (every rank clears)."""
        check(lib.loom_ckpt_clear(self._handle("clear")), "loom_ckpt_clear")
        self._buffers = []

    def wait(self) -> None:
        """Wait for the save in flight to be committed; its failure raises."""
        check(lib.loom_ckpt_wait(self._handle("wait")), "loom_ckpt_wait")

    def latest(self) -> Optional[int]:
        """The newest committed step (its data is checked only by a load),
        None when there is none."""
        step = ctypes.c_longlong(-1)
        rc = lib.loom_ckpt_latest(self._handle("latest"), ctypes.byref(step))
        if rc == ERR_NOT_FOUND:
            return None
        check(rc, "loom_ckpt_latest")
        return step.value

    def load(self, step: int) -> None:
        """Fill the registered blocks from checkpoint `step` (a damaged one
        raises loom.IOFailure, LOOM_ERR_CORRUPT)."""
        check(lib.loom_ckpt_load(self._handle("load"), _step(step)), "loom_ckpt_load(%d)" % step)

    def should_stop(self, step: int) -> bool:
        """True on every rank when any rank has received a stop signal by
        the time it called this for `step` (the same step on every rank)."""
        stop = ctypes.c_int()
        check(lib.loom_ckpt_should_stop(self._handle("should_stop"), _step(step),
                                        ctypes.byref(stop)), "loom_ckpt_should_stop")
        return bool(stop.value)

    def save(self, step: int) -> None:
        """Write and commit checkpoint `step` of every registered tensor."""
        check(lib.loom_ckpt_save(self._handle("save"), _step(step)), "loom_ckpt_save")

    def restore(self) -> Optional[int]:
        """Load the newest checkpoint that verifies (older ones as fallback)
        into the registered tensors; its step, or None when there is none."""
        step = ctypes.c_longlong(-1)
        rc = lib.loom_ckpt_restore(self._handle("restore"), ctypes.byref(step))
        if rc == ERR_NOT_FOUND:
            return None
        check(rc, "loom_ckpt_restore")
        return step.value

    def close(self) -> None:
        """Close the checkpoint (collective); the signal handlers go back."""
        if self._ck:
            ck, self._ck = self._ck, None
            self._buffers = []
            check(lib.loom_ckpt_close(ck), "loom_ckpt_close")

