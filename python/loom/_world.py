"""loom.init() and the world communicator's collectives."""
import ctypes
from typing import Dict, Optional, TypeVar

from ._buffer import Buffer
from ._errors import invalid, wrong_type
from ._lib import Closing, check, lib

OPS: Dict[str, int] = {"sum": 0, "prod": 1, "min": 2, "max": 3, "avg": 4}

# any object exposing a writable, C-contiguous buffer; returned as given
B = TypeVar("B")


def _op(op: str) -> int:
    if not isinstance(op, str):
        raise wrong_type("op=%r: one of %s" % (op, ", ".join(sorted(OPS))))
    try:
        return OPS[op]
    except KeyError:
        raise invalid("op=%r: one of %s" % (op, ", ".join(sorted(OPS)))) from None


class World(Closing):
    """The world communicator of libloom (use loom.init() to make one).

    rank, size, local_rank, local_size: this process's place in the job.
    backend ("native", "mpi", "nccl") and bootstrap ("pmix", "env",
    "single", "mpi"): how it was formed.

    The collectives work in place on any object exposing a writable,
    C-contiguous buffer (numpy arrays, CPU torch tensors through .numpy(),
    array.array), with the dtype read from the buffer's format: int8,
    int32, int64, float16, float32, float64 (not unsigned integers, so not
    bytearray; bfloat16 has no buffer format). Every rank must call
    them in the same order with the same element count and dtype. They
    return the object. Bad arguments raise loom.InvalidArgument (a
    ValueError) or loom.InvalidType (a TypeError); a peer's death
    loom.PeerLost, a deadline loom.Timeout (a TimeoutError); all are
    loom.Error.
    """

    def __init__(self, comm: ctypes.c_void_p) -> None:
        self._comm: Optional[ctypes.c_void_p] = comm
        self.rank: int = lib.loom_comm_rank(comm)
        self.size: int = lib.loom_comm_size(comm)
        self.local_rank: int = lib.loom_comm_local_rank(comm)
        self.local_size: int = lib.loom_comm_local_size(comm)
        self.backend: str = lib.loom_comm_backend(comm).decode()
        self.bootstrap: str = lib.loom_comm_bootstrap(comm).decode()

    def _handle(self, what: str) -> ctypes.c_void_p:
        if not self._comm:
            raise invalid("%s: the world is closed" % what)
        return self._comm

    def allreduce(self, x: B, op: str = "sum") -> B:
        """Reduce x over all ranks, in place: op is "sum", "prod", "min",
        "max" or "avg" (sum / size; integers truncated)."""
        o = _op(op)
        comm = self._handle("allreduce")
        b = Buffer(x, "allreduce")
        check(lib.loom_allreduce(b.addr, b.addr, b.count, b.dtype, o, comm), "loom_allreduce")
        return x

    def broadcast(self, x: B, root: int = 0) -> B:
        """Copy root's x into every rank's x."""
        if isinstance(root, bool) or not isinstance(root, int):
            raise wrong_type("broadcast: root=%r is not a rank (an int)" % (root,))
        if not 0 <= root < self.size:
            raise invalid("broadcast: root=%r is not a rank of a world of %d" % (root, self.size))
        comm = self._handle("broadcast")
        b = Buffer(x, "broadcast")
        check(lib.loom_broadcast(b.addr, b.addr, b.count, b.dtype, root, comm),
              "loom_broadcast")
        return x

    def allgather(self, x: B) -> B:
        """In place: x holds size equal blocks; rank i contributes its block
        i (elements i*n .. (i+1)*n - 1, n = len / size) and every rank
        ends with all blocks."""
        comm = self._handle("allgather")
        b = Buffer(x, "allgather")
        if b.count % self.size:
            raise invalid("allgather: %d elements are not %d equal blocks (one per rank)" %
                          (b.count, self.size))
        n = b.count // self.size
        send = b.addr + self.rank * n * b.view.itemsize
        check(lib.loom_allgather(send, b.addr, n, b.dtype, comm), "loom_allgather")
        return x

    def barrier(self) -> None:
        """Return once every rank has entered the barrier."""
        check(lib.loom_barrier(self._handle("barrier")), "loom_barrier")

    def close(self) -> None:
        """Free the world (loom_finalize); close its checkpoints first."""
        if self._comm:
            comm, self._comm = self._comm, None
            check(lib.loom_finalize(comm), "loom_finalize")

    def __repr__(self) -> str:
        return "<loom.World rank %d/%d local %d/%d %s via %s>" % (
            self.rank, self.size, self.local_rank, self.local_size, self.backend, self.bootstrap)


def init() -> World:
    """Form the world, as loom_init(3) does: from PMIx (srun --mpi=pmix),
    else from RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (what loom.so and
    torchrun write), else a world of one. LOOM_BACKEND chooses the
    backend. Returns a World; raises loom.Error when the world cannot be
    formed (LOOM_ERR_BOOTSTRAP; loom.Timeout for LOOM_ERR_TIMEOUT, ...),
    loom.LibraryError when libloom cannot be loaded."""
    comm = ctypes.c_void_p()
    check(lib.loom_init(ctypes.byref(comm)), "loom_init")
    return World(comm)
