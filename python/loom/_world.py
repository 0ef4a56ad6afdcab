"""loom.init() and the world communicator's collectives."""
import ctypes

from ._buffer import Buffer
from ._lib import Closing, check, invalid, lib

OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3, "avg": 4}


def _op(op):
    try:
        return OPS[op]
    except (KeyError, TypeError):
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
    return the object, and raise loom.Error on failure.
    """

    def __init__(self, comm):
        self._comm = comm
        self.rank = lib.loom_comm_rank(comm)
        self.size = lib.loom_comm_size(comm)
        self.local_rank = lib.loom_comm_local_rank(comm)
        self.local_size = lib.loom_comm_local_size(comm)
        self.backend = lib.loom_comm_backend(comm).decode()
        self.bootstrap = lib.loom_comm_bootstrap(comm).decode()

    def _handle(self, what):
        if not self._comm:
            raise invalid("%s: the world is closed" % what)
        return self._comm

    def allreduce(self, x, op="sum"):
        """Reduce x over all ranks, in place: op is "sum", "prod", "min",
        "max" or "avg" (sum / size; integers truncated)."""
        o = _op(op)
        comm = self._handle("allreduce")
        b = Buffer(x, "allreduce")
        check(lib.loom_allreduce(b.addr, b.addr, b.count, b.dtype, o, comm), "loom_allreduce")
        return x

    def broadcast(self, x, root=0):
        """Copy root's x into every rank's x."""
        if not isinstance(root, int) or not 0 <= root < self.size:
            raise invalid("broadcast: root=%r is not a rank of a world of %d" % (root, self.size))
        comm = self._handle("broadcast")
        b = Buffer(x, "broadcast")
        check(lib.loom_broadcast(b.addr, b.addr, b.count, b.dtype, root, comm),
              "loom_broadcast")
        return x

    def allgather(self, x):
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

    def barrier(self):
        """Return once every rank has entered the barrier."""
        check(lib.loom_barrier(self._handle("barrier")), "loom_barrier")

    def close(self):
        """Free the world (loom_finalize); close its checkpoints first."""
        if self._comm:
            comm, self._comm = self._comm, None
            check(lib.loom_finalize(comm), "loom_finalize")

    def __repr__(self):
        return "<loom.World rank %d/%d local %d/%d %s via %s>" % (
            self.rank, self.size, self.local_rank, self.local_size, self.backend, self.bootstrap)


def init():
    """Form the world, as loom_init(3) does: from PMIx (srun --mpi=pmix),
    else from RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (what loom.so and
    torchrun write), else a world of one. LOOM_BACKEND chooses the
    backend. Returns a World; raises loom.Error when the world cannot be
    formed (LOOM_ERR_BOOTSTRAP, LOOM_ERR_TIMEOUT, ...)."""
    comm = ctypes.c_void_p()
    check(lib.loom_init(ctypes.byref(comm)), "loom_init")
    return World(comm)
