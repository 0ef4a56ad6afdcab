"""loom: checkpoint-and-requeue and collectives for Python programs on Slurm.

A pure-Python face of libloom (ctypes, no compiled extension) for programs
launched by srun with loom.so, the Slurm SPANK plugin of loom.

Stop signals and requeue, for programs that save with their own code
(torch.save, torch.distributed.checkpoint):

    stop = loom.StopSignal()        # SIGTERM and LOOM_CKPT_SIGNAL set a flag
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

Errors are loom.Error (status, name, message). libloom is found through
LOOM_LIBRARY (a path), else its soname libloom.so.0, else the libdir it
was installed into. See loom-python(7), loom_ckpt(3), and
docs/environment.md for the contract with loom.so.
"""
from ._lib import STATUS_NAMES, Error, lib as _lib
from ._signal import StopSignal, request_requeue, stop_signals
from ._world import OPS, World, init
from ._ckpt import Checkpoint

for _cls in (Checkpoint, Error, StopSignal, World):
    _cls.__module__ = __name__      # loom.Error in tracebacks, not loom._lib.Error
__version__ = _lib.loom_version().decode()
__all__ = ["Checkpoint", "Error", "OPS", "STATUS_NAMES", "StopSignal", "World", "init",
           "request_requeue", "stop_signals", "__version__"]
