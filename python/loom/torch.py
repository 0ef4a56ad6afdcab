"""loom.torch: PyTorch on loom.

Resumable, the three-line preemption-safe training loop; StorageWriter and
StorageReader, torch.distributed.checkpoint on libloom's checkpoint
(two-phase I/O, the node-local tier with partner copies, async save,
checksums, fallback to the previous step). See loom-python(7).

PyTorch's collectives on libloom, the c10d backend "loom":

    import loom.torch                      # registers the backend "loom"
    torch.distributed.init_process_group("loom")   # instead of "gloo"

Importing this module registers the process group with
torch.distributed.Backend.register_backend; the group is the C++
extension loom._c10d (built when configure finds PyTorch's C++ headers,
installed beside this package). Rank, world size and timeout are those
given to init_process_group (env://, tcp://, a Store: any of torch's
rendezvous); the timeout bounds every operation: a lost peer or a rank
that never arrives makes work.wait() raise RuntimeError naming the
operation and loom's verdict.

Devices. CPU tensors go to libloom's native backend. CUDA tensors go to
its NCCL backend, when libloom is built with it: the first group forms
libloom's world on NCCL when torch sees a GPU and LOOM_BACKEND is unset
(LOOM_BACKEND=native keeps it off the GPU; host memory still goes to the
native backend on an NCCL world), on the device LOOM_LOCAL_DEVICE, else
LOCAL_RANK, names: call torch.cuda.set_device(LOCAL_RANK) first. Each
operation on CUDA tensors runs on a stream of the group's that waits, on
an event, for torch's current stream; work.wait() returns once the GPU
has run it. Gather, scatter and the alltoalls of lists or split sizes
take CPU tensors only. group.loom_backend and group.device say where a
group runs. The CUDA path is compiled, not yet run (no CUDA torch here).

How libloom forms its world under torch. torch's env:// rendezvous
binds MASTER_PORT on rank 0 for its TCPStore, and libloom's own
RANK/MASTER_ADDR bootstrap would bind the same port: they cannot share
it. So rank 0 takes a free port on MASTER_ADDR (or its host name when
unset) and writes "address:port" into torch's Store; every rank reads
it and runs libloom's bootstrap there, with RANK/WORLD_SIZE from torch
(the environment is restored afterwards). The Store carries only that
address: joining is authenticated by LOOM_JOB_SECRET, which loom.so sets
under srun and which never goes into the Store (under torchrun, export
the same random LOOM_JOB_SECRET to every rank). Under `srun --mpi=pmix`
libloom forms its world through PMIx instead. The port is probed, closed
and then bound again by libloom: another process taking it in between
makes the bootstrap fail (it does not join the job).

Groups: the first group forms libloom's world; a later group of every
rank (new_group() of all ranks) is a duplicate of it; a group of a
subset (new_group(ranks=...)) is split from it (loom_comm_split), which
every rank of the world takes part in. torch calls a backend's creator
on the members only, so this module wraps torch.distributed.new_group:
the ranks outside the group do their part of the split there and get
torch's GroupMember.NON_GROUP_MEMBER, as on gloo. Create groups through
torch.distributed.new_group (or new_subgroups) after importing this
module; a creator reached another way raises RuntimeError rather than
wait for ranks that never join the split. A subset needs a loom world of
every rank (the default group "loom", or new_group(backend="loom") of
all ranks first); without any, the subset forms a world of its own.

cpu_world() beside the default group "loom" is a duplicate of that
group's world (no second world, no second rendezvous); beside another
default group it forms libloom's world through torch's Store as above.

Without the extension (loom configured without PyTorch's C++ headers)
the rest of this module works and the backend "loom" is registered with a
creator that raises the ImportError saying what to install.
"""
import ctypes
import importlib.util
import inspect
import os
import socket
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Callable, Dict, Iterator, List, Optional

import torch.distributed as dist

from ._lib import lib as _libloom
from ._dcp import StorageReader, StorageWriter, dcp
from ._resumable import Resumable, cpu_world, durable_save
from ._world import World, init

NAME = "loom"
_KEY = "loom/rendezvous"


def _extension() -> ModuleType:
    """loom._c10d: the file in LOOM_TORCH_EXTENSION when set (tests of the
    build tree), else the one installed beside this package. libloom is
    loaded first, through the package's own search (LOOM_LIBRARY...), so
    that the extension binds to that one."""
    _libloom.loom_version()
    path = os.environ.get("LOOM_TORCH_EXTENSION")
    if path:
        spec = importlib.util.spec_from_file_location("loom._c10d", path)
        if spec is None or spec.loader is None:
            raise ImportError("loom.torch: LOOM_TORCH_EXTENSION=%s is not a Python extension" % path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    try:
        from . import _c10d  # type: ignore[attr-defined]
    except ImportError as e:
        raise ImportError("loom.torch: the extension loom._c10d is not installed (loom was "
                          "configured without PyTorch's C++ headers: install libtorch-dev and "
                          "pybind11-dev and build again): %s" % e) from None
    mod = _c10d
    return mod


try:
    _c10d: Any = _extension()
    _missing: Optional[ImportError] = None
except (ImportError, OSError) as e:   # OSError: loom.LibraryError, no libloom
    _c10d, _missing = None, ImportError(str(e))


@contextmanager
def _environ(values: Dict[str, str]) -> Iterator[None]:
    """os.environ with values set, restored afterwards."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _free_port() -> int:
    """A TCP port free on every address of this host now (probed and
    closed: libloom's rank 0 binds it next)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        port: int = s.getsockname()[1]
        return port


def _address() -> str:
    """Where libloom's rank 0 can meet the others: MASTER_ADDR (else this
    host's name) and a free port, "address:port"."""
    return "%s:%d" % (os.environ.get("MASTER_ADDR") or socket.gethostname(), _free_port())


def _rendezvous(rank: int, size: int, share: Callable[[Callable[[], str]], str]) -> Dict[str, str]:
    """The environment of libloom's bootstrap (above): RANK and WORLD_SIZE
    as torch says, MASTER_ADDR/MASTER_PORT those rank 0 picks; share(make)
    returns rank 0's make() on every rank (through torch's Store)."""
    env = {"RANK": str(rank), "WORLD_SIZE": str(size)}
    if size == 1:
        return env
    addr, _, port = share(_address).rpartition(":")
    env.update(MASTER_ADDR=addr, MASTER_PORT=port)
    return env


def _store_share(store: Any, rank: int, key: str) -> Callable[[Callable[[], str]], str]:
    def share(make: Callable[[], str]) -> str:
        if rank == 0:
            store.set(key, make())
        value: str = store.get(key).decode()
        return value
    return share


def _can_split() -> bool:
    """Whether a group of a subset can be split from libloom's world here:
    a world of every rank of torch's default group."""
    return _c10d is not None and _c10d.world_size() == dist.get_world_size()


def _create(opts: Any, pg_options: Optional[Any] = None) -> Any:
    """torch.distributed's creator of the group (extended_api=True)."""
    if _c10d is None:
        raise _missing  # type: ignore[misc]
    rank, size = opts.group_rank, opts.group_size
    timeout = float(opts.timeout.total_seconds())
    ranks: List[int] = [int(r) for r in getattr(opts, "global_ranks_in_group", None) or []]
    if _c10d.have_world():
        if not 0 < len(ranks) < dist.get_world_size():
            return _c10d.ProcessGroupLoom(rank, size, timeout)
        if not _splitting:
            raise RuntimeError("loom process group: new_group: a group of a subset of the ranks "
                               "is split from libloom's world by every rank: create it through "
                               "torch.distributed.new_group after importing loom.torch")
        if not _can_split():
            raise RuntimeError("loom process group: new_group: libloom's world has %d ranks, "
                               "torch's default group %d: a group of a subset needs a loom group "
                               "of every rank first" % (_c10d.world_size(), dist.get_world_size()))
        return _c10d.ProcessGroupLoom(rank, size, timeout, ranks)
    with _environ(_rendezvous(rank, size, _store_share(opts.store, rank, _KEY))):
        return _c10d.ProcessGroupLoom(rank, size, timeout)


_torch_new_group: Callable[..., Any] = dist.distributed_c10d.new_group
_splitting = False


def new_group(*args: Any, **kwargs: Any) -> Any:
    """torch.distributed.new_group, as loom.torch wraps it: a group "loom"
    of a subset of the ranks is split from libloom's world, and every rank
    of the world takes part in the split, those outside the group here
    (torch calls the backend's creator on the members only). Every other
    group is torch's call as is."""
    global _splitting
    a = inspect.signature(_torch_new_group).bind(*args, **kwargs).arguments
    ranks, backend = a.get("ranks"), a.get("backend")
    if (ranks is None or _c10d is None or not dist.is_initialized() or
            str(dist.Backend(backend or dist.get_backend())) != NAME or
            not 0 < len(ranks) < dist.get_world_size() or len(set(ranks)) != len(ranks) or
            not all(0 <= r < dist.get_world_size() for r in ranks)):
        return _torch_new_group(*args, **kwargs)    # as is; torch raises for bad ranks
    if dist.get_rank() not in ranks and _c10d.have_world() and _can_split():
        _c10d.split_out()
    _splitting = True
    try:
        return _torch_new_group(*args, **kwargs)
    finally:
        _splitting = False


new_group.__wrapped__ = _torch_new_group  # type: ignore[attr-defined]
dist.new_group = dist.distributed_c10d.new_group = new_group


class _GroupWorld(World):
    """cpu_world() beside the default group "loom": a duplicate of the
    group's libloom world (loom._c10d.WorldDup), which keeps that world
    alive until close() frees the duplicate."""

    def __init__(self, dup: Any) -> None:
        self._dup = dup
        super().__init__(ctypes.c_void_p(dup.address))

    def close(self) -> None:
        for child in list(self._children):
            child.close()
        self._children = []
        if self._comm:
            self._comm = None
            self._dup.free()


_worlds = 0     # cpu_world()s beside torch so far: each its own Store key


def _world_beside(d: Any) -> World:
    """cpu_world() once torch.distributed is initialised, with more than
    one rank: the default group's world, else libloom's world formed
    through torch's Store (rank 0 publishes a free port in it: torch's
    TCPStore keeps MASTER_PORT bound for the job's life)."""
    global _worlds
    if d.get_backend() == NAME and _c10d is not None and _can_split():
        return _GroupWorld(_c10d.WorldDup())
    _worlds += 1
    rank, size = d.get_rank(), d.get_world_size()
    store = getattr(d.distributed_c10d, "_get_default_store", lambda: None)()
    share = _store_share(store, rank, "loom/cpu_world/%d" % _worlds) if store is not None else \
        _broadcast_share(d, rank)
    with _environ(_rendezvous(rank, size, share)):
        return init()


def _broadcast_share(d: Any, rank: int) -> Callable[[Callable[[], str]], str]:
    """share() over the default group itself, where torch has no default
    Store to reach"""
    def share(make: Callable[[], str]) -> str:
        box: List[Any] = [make() if rank == 0 else None]
        d.broadcast_object_list(box, src=0)
        return str(box[0])
    return share


ProcessGroupLoom = _c10d.ProcessGroupLoom if _c10d is not None else None
if NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(NAME, _create, extended_api=True)  # type: ignore[no-untyped-call]

__all__ = ["NAME", "ProcessGroupLoom", "Resumable", "StorageReader", "StorageWriter", "cpu_world",
           "dcp", "durable_save"]
