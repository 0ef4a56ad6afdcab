"""loom.init() and the world communicator's collectives."""
import ctypes
from typing import Dict, List, Optional, Tuple, TypeVar

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

    Surviving a lost rank (native backend; docs/fault-tolerance.md): when
    a collective raises loom.PeerLost or loom.Revoked, revoke() stops the
    other members wherever they wait, and shrink() returns a World of the
    survivors (ranks renumbered in their old order) to go on with;
    agree() and failed() tell who is gone. The MPI and NCCL backends raise
    loom.Error (LOOM_ERR_UNSUPPORTED).
    """

    def __init__(self, comm: ctypes.c_void_p, parent: Optional["World"] = None) -> None:
        self._comm: Optional[ctypes.c_void_p] = comm
        # a shrunk world is freed by loom_comm_free, and with the world it
        # came from (loom_finalize frees what was derived from it)
        self._parent = parent
        self._children: List["World"] = []
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

    def revoke(self) -> None:
        """Revoke the communicator from this member: every member's pending
        and later operations on it fail within about a second with
        loom.Revoked (or loom.PeerLost). agree(), failed() and shrink()
        still work on it."""
        check(lib.loom_comm_revoke(self._handle("revoke")), "loom_comm_revoke")

    def agree(self, flag: bool = True) -> Tuple[bool, List[int]]:
        """Collective over the members still alive, also after a failure or
        a revoke: the AND of every survivor's flag, and the agreed failed
        ranks (this world's numbering, ascending). Every survivor gets the
        same pair."""
        if not isinstance(flag, (bool, int)):
            raise wrong_type("agree: flag=%r is not a bool" % (flag,))
        comm = self._handle("agree")
        f = ctypes.c_int(1 if flag else 0)
        check(lib.loom_comm_agree(comm, ctypes.byref(f)), "loom_comm_agree")
        return bool(f.value), self.failed()

    def failed(self) -> List[int]:
        """The failed ranks of the last agree() or shrink(), ascending
        (none before the first)."""
        comm = self._handle("failed")
        ranks = (ctypes.c_int * max(self.size, 1))()
        n = ctypes.c_int(0)
        check(lib.loom_comm_failed(comm, ranks, self.size, ctypes.byref(n)), "loom_comm_failed")
        return [ranks[i] for i in range(min(n.value, self.size))]

    def shrink(self) -> "World":
        """Collective over the survivors: an agreement, then a new World of
        the members not failed, ranks renumbered in their old order. This
        World stays failed: close it when done (a shrunk World is also
        freed with the world it came from). A member the others agreed
        failed gets loom.Revoked."""
        comm = self._handle("shrink")
        new = ctypes.c_void_p()
        check(lib.loom_comm_shrink(comm, ctypes.byref(new)), "loom_comm_shrink")
        child = World(new, parent=self)
        self._children.append(child)
        return child

    def grow(self, nnew: int) -> "World":
        """Collective over the members: wait (up to the timeout) for nnew
        newcomers, processes of the same job started with
        ``srun --jobid=$SLURM_JOB_ID --overlap -N1 -n K -w NODE --loom-join
        PROG``, and return a new World of the members (ranks kept)
        followed by them; a newcomer's loom.init() returns the same World.
        A process that does not hold the job's key is refused and not
        counted. loom.Timeout when fewer came in time."""
        if isinstance(nnew, bool) or not isinstance(nnew, int):
            raise wrong_type("grow: nnew=%r is not an int" % (nnew,))
        if not 1 <= nnew <= 4096:
            raise invalid("grow: nnew=%d is not from 1 to 4096" % nnew)
        comm = self._handle("grow")
        new = ctypes.c_void_p()
        check(lib.loom_comm_grow(comm, nnew, ctypes.byref(new)), "loom_comm_grow")
        child = World(new, parent=self)
        self._children.append(child)
        return child

    def close(self) -> None:
        """Free the world (loom_finalize); close its checkpoints first. A
        shrunk World is freed alone (loom_comm_free)."""
        for child in self._children:
            if self._parent is not None:
                child.close()
            else:
                child._comm = None      # loom_finalize frees it
        self._children = []
        if self._comm:
            comm, self._comm = self._comm, None
            if self._parent is not None:
                if self in self._parent._children:
                    self._parent._children.remove(self)
                check(lib.loom_comm_free(comm), "loom_comm_free")
            else:
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
