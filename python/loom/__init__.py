"""loom: checkpoint-and-requeue and collectives for Python programs on Slurm.

A pure-Python face of libloom (ctypes, no compiled extension) for programs
launched by srun with loom.so, the Slurm SPANK plugin of loom.

Stop signals and requeue, for programs that save with their own code
(torch.save, torch.distributed.checkpoint):

    stop = loom.StopSignal()        # SIGTERM, LOOM_CKPT_SIGNAL, SIGUSR1/2 set a flag
    for step in range(first, steps):
        train_one_step()
        flag = torch.tensor([int(stop.requested)])
        dist.all_reduce(flag)       # every rank agrees on the stop step
        if flag.item():
            if rank == 0:
                torch.save(state, os.path.join(os.environ["LOOM_CKPT_DIR"], ...))
                loom.request_requeue(step)   # loom.so requeues the job
            break                   # exit 0

Collectives and libloom's own coordinated checkpoint:

    world = loom.init()             # .rank .size .local_rank
    world.allreduce(a, op="sum")    # in place, any writable C-contiguous buffer
    world.broadcast(a, root=0); world.allgather(a); world.barrier()
    ck = loom.Checkpoint(world)     # .tensor() .should_stop() .save() .restore()

Surviving a lost rank (native backend, docs/fault-tolerance.md):

    try:
        world.allreduce(g)
    except (loom.PeerLost, loom.Revoked):
        world.revoke()              # the others stop too, wherever they wait
        world = world.shrink()      # the survivors, renumbered; .agree() .failed()
    world = world.grow(2)           # and two newcomers (srun ... --loom-join)

Errors: every exception is a loom.Error (.status, .name, .message), and
also the builtin exception of its kind: loom.InvalidArgument (a
ValueError) and loom.InvalidType (a TypeError) for bad arguments
(status LOOM_ERR_INVALID), loom.Timeout (a TimeoutError) for
LOOM_ERR_TIMEOUT, loom.PeerLost (a ConnectionError) for
LOOM_ERR_PEER_LOST, loom.Revoked (a ConnectionError) for
LOOM_ERR_REVOKED, loom.IOFailure (an OSError) for LOOM_ERR_SYSTEM,
LOOM_ERR_IO and LOOM_ERR_CORRUPT, loom.LibraryError (an OSError) when
libloom cannot be loaded; other statuses are loom.Error itself.

libloom is loaded on first use, not by `import loom` (StopSignal needs
none): from the path in LOOM_LIBRARY when set (only there), else its
soname libloom.so.0 through the dynamic loader's search path, else the
libdir make install put it in. The package installs with make install,
or into a virtual environment with `pip install --no-build-isolation
--no-index ./python` (then libloom comes from the loader's search path
or LOOM_LIBRARY). See loom-python(7), loom_ckpt(3), and
docs/environment.md for the contract with loom.so.
"""
from ._errors import (STATUS_NAMES, Error, InvalidArgument, InvalidType, IOFailure,
                      LibraryError, PeerLost, Revoked, Timeout, PUBLIC as _ERRORS)
from ._lib import lib as _libloom
from ._signal import StopSignal, request_requeue, stop_signals
from ._version import __version__
from ._world import OPS, World, init
from ._ckpt import Checkpoint


def library_version() -> str:
    """The version of the libloom this package loaded (loading it: raises
    loom.LibraryError when it cannot be loaded)."""
    version: bytes = _libloom.loom_version()
    return version.decode()


for _cls in (Checkpoint, StopSignal, World) + _ERRORS:
    _cls.__module__ = __name__      # loom.Error in tracebacks, not loom._errors.Error
__all__ = ["Checkpoint", "Error", "IOFailure", "InvalidArgument", "InvalidType",
           "LibraryError", "OPS", "PeerLost", "Revoked", "STATUS_NAMES", "StopSignal",
           "Timeout", "World",
           "init", "library_version", "request_requeue", "stop_signals", "__version__"]
