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
operation and loom's verdict. CPU tensors only.

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
rank (new_group() of all ranks) is a duplicate of it. A group of a
subset of the ranks is not supported yet (RuntimeError).

Without the extension (loom configured without PyTorch's C++ headers)
the rest of this module works and the backend "loom" is registered with a
creator that raises the ImportError saying what to install.
"""
import importlib.util
import os
import socket
from contextlib import contextmanager
from types import ModuleType
from typing import Any, Dict, Iterator, Optional

import torch.distributed as dist

from ._lib import lib as _libloom
from ._dcp import StorageReader, StorageWriter, dcp
from ._resumable import Resumable, cpu_world, durable_save

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


def _free_port(addr: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((socket.gethostbyname(addr), 0))
        port: int = s.getsockname()[1]
        return port


def _rendezvous(store: Any, rank: int, size: int) -> Dict[str, str]:
    """The environment of libloom's bootstrap for this group (above)."""
    env = {"RANK": str(rank), "WORLD_SIZE": str(size)}
    if size == 1:
        return env
    if rank == 0:
        addr = os.environ.get("MASTER_ADDR") or socket.gethostname()
        store.set(_KEY, "%s:%d" % (addr, _free_port(addr)))
    where = store.get(_KEY).decode()
    addr, _, port = where.rpartition(":")
    env.update(MASTER_ADDR=addr, MASTER_PORT=port)
    return env


def _create(opts: Any, pg_options: Optional[Any] = None) -> Any:
    """torch.distributed's creator of the group (extended_api=True)."""
    if _c10d is None:
        raise _missing  # type: ignore[misc]
    rank, size = opts.group_rank, opts.group_size
    timeout = float(opts.timeout.total_seconds())
    if _c10d.have_world():
        return _c10d.ProcessGroupLoom(rank, size, timeout)
    with _environ(_rendezvous(opts.store, rank, size)):
        return _c10d.ProcessGroupLoom(rank, size, timeout)


ProcessGroupLoom = _c10d.ProcessGroupLoom if _c10d is not None else None
if NAME.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(NAME, _create, extended_api=True)  # type: ignore[no-untyped-call]

__all__ = ["NAME", "ProcessGroupLoom", "Resumable", "StorageReader", "StorageWriter", "cpu_world",
           "dcp", "durable_save"]
