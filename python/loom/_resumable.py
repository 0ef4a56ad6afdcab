"""loom.torch.Resumable: a torch training loop made preemption-safe in
three lines (restore, should_stop, and the object itself).

What is saved, when a stop is agreed: the model's, optimizer's and
scheduler's state_dict() and the sampler's state (its state_dict(), else
its epoch) once, from rank 0 (they are replicated under DDP), and every
rank's RNG states (torch, CUDA when initialised, numpy when imported,
random). Layout under dir (default $LOOM_CKPT_DIR/resumable):
step-N/state.pt, step-N/rng-R.pt, step-N/COMPLETE, and `latest`; every
file is written to a temporary name, fsynced, renamed, and its directory
fsynced, and COMPLETE is written only once every rank's files are.

The stop agreement is one 4-byte MAX allreduce over libloom's CPU world
(shm within a node, TCP between nodes), never over torch's process group,
so a NCCL job pays no device synchronisation for it. That world is formed
here; when torch.distributed is already initialised its rendezvous port
is a free one rank 0 picks and passes through torch's own store, since
torch's TCPStore keeps MASTER_PORT bound for the job's life.
"""
import array
import os
import signal as _sig
import sys
from typing import Any, Dict, List, Optional, Set

from ._errors import invalid, wrong_type
from ._lib import check_step
from . import _signal
from ._signal import StopSignal, request_requeue
from ._world import World, init

KEEP = 2        # committed steps kept; older ones are removed after a commit
_IGNORED: Set[int] = set()  # SIGUSR1/2 that close() set to SIG_IGN (the next Resumable takes them back)


def _warn(text: str) -> None:
    sys.stderr.write("loom: warning: %s\n" % text)
    sys.stderr.flush()


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def durable_save(obj: Any, path: str) -> None:
    """torch.save(obj) to path, durably: a temporary name, fsync, rename,
    fsync of the directory. A crash leaves the old file or the new one."""
    import torch
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path) or ".")


def _write_text(path: str, text: str) -> None:
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(os.path.dirname(path) or ".")


def _torch_dist() -> Any:
    """torch.distributed when it is initialised, else None."""
    if "torch" not in sys.modules:
        return None
    import torch.distributed as dist
    return dist if dist.is_available() and dist.is_initialized() else None


def cpu_world() -> World:
    """libloom's world beside torch's process group. Without an initialised
    torch.distributed (or with one rank) it is loom.init() as is. With
    one, beside the default group "loom" it is a duplicate of that group's
    world; beside another, rank 0 picks a free port and passes it through
    torch's store, and loom.init() meets there (loom.torch's rendezvous):
    MASTER_PORT is torch's TCPStore's for the job's life."""
    dist = _torch_dist()
    if dist is None or dist.get_world_size() == 1:
        return init()
    from .torch import _world_beside
    return _world_beside(dist)


def _rng_state() -> Dict[str, Any]:
    import random
    import torch
    out: Dict[str, Any] = {"torch": torch.get_rng_state(), "random": random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["cuda"] = torch.cuda.get_rng_state_all()
    if "numpy" in sys.modules:
        out["numpy"] = sys.modules["numpy"].random.get_state()
    return out


def _set_rng_state(st: Dict[str, Any]) -> None:
    import random
    import torch
    torch.set_rng_state(st["torch"])
    random.setstate(st["random"])
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])
    if "numpy" in st:
        import numpy
        numpy.random.set_state(st["numpy"])


class Resumable:
    """A training loop that survives preemption and time limits:

        run = loom.torch.Resumable(model=model, optimizer=opt, scheduler=sched,
                                   sampler=sampler)
        for step in range(run.restore(), steps):
            train_step(step)
            if run.should_stop(step):
                break           # saved, requeue asked: exit 0

    Make it on every rank, in the main thread, after
    torch.distributed.init_process_group (if the job uses it). From then
    on SIGTERM (preemption, scancel), LOOM_CKPT_SIGNAL (--loom-ckpt-signal)
    and SIGUSR1/SIGUSR2 (Slurm's --signal, where nothing else handles
    them) only set a flag (loom.StopSignal); make a loom.StopSignal()
    before `import torch` too when a signal may come during that slow
    import (this object then keeps watching it).

    restore(): the first step to run: one after the newest complete
    checkpoint (an older one when the newest does not load, with a
    warning), 0 when there is none. It works for any rank count; the
    RNG states come back only on the rank count that saved them.

    should_stop(step): True on every rank when any rank got a stop
    signal (one 4-byte allreduce on libloom's CPU world; every=K checks
    every K steps only). When True, the state is saved durably (save()),
    loom.request_requeue(step) is called on rank 0, and the program should
    leave its loop and exit 0: loom.so requeues the job.

    save(step): a collective checkpoint now (for periodic saves too).

    model, optimizer, scheduler: anything with state_dict() and
    load_state_dict(); sampler: its state_dict()/load_state_dict(), else
    its `epoch` (set back with set_epoch()); extra: a dict of more such
    objects by name. dir: default $LOOM_CKPT_DIR/resumable (None when the
    job has no --loom-ckpt: should_stop() then stops without a save,
    with a warning). world: a loom.World to agree over (default: one made
    beside torch's process group, see cpu_world()).
    """

    def __init__(self, model: Any = None, optimizer: Any = None, scheduler: Any = None,
                 sampler: Any = None, dir: Optional[str] = None, world: Optional[World] = None,
                 extra: Optional[Dict[str, Any]] = None, every: int = 1) -> None:
        if dir is not None and not isinstance(dir, str):
            raise wrong_type("Resumable: dir=%r is not a string" % (dir,))
        if isinstance(every, bool) or not isinstance(every, int):
            raise wrong_type("Resumable: every=%r is not an int" % (every,))
        if every < 1:
            raise invalid("Resumable: every=%r: check at least every step (>= 1)" % (every,))
        if world is not None and not isinstance(world, World):
            raise wrong_type("Resumable: world=%r is not a loom.World" % (world,))
        self.objects: Dict[str, Any] = {}
        for name, obj in (("model", model), ("optimizer", optimizer),
                          ("scheduler", scheduler)) + tuple((extra or {}).items()):
            if obj is None:
                continue
            if not (hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict")):
                raise wrong_type("Resumable: %s=%r has no state_dict()/load_state_dict()" %
                                 (name, obj))
            self.objects[name] = obj
        self.sampler = sampler
        self.every = every
        if dir is None and os.environ.get("LOOM_CKPT_DIR"):
            dir = os.path.join(os.environ["LOOM_CKPT_DIR"], "resumable")
        self.dir = dir
        for s in list(_IGNORED):    # a closed Resumable's, not the program's
            if _sig.getsignal(s) == _sig.SIG_IGN:
                _sig.signal(s, _sig.SIG_DFL)
            _IGNORED.discard(s)
        self._signal = StopSignal()
        self._own_world = world is None
        self.world = cpu_world() if world is None else world
        self.rank = self.world.rank
        self.size = self.world.size
        self.path: Optional[str] = None     # the step directory saved or restored last
        self.stopped_at: Optional[int] = None

    # ---- agreement ----------------------------------------------------------
    @property
    def requested(self) -> bool:
        """Whether this rank got a stop signal (not agreed): this object's
        or any loom.StopSignal's of the process (one made before `import
        torch` keeps SIGUSR1/2, which this one then leaves to it)."""
        return self._signal.requested or _signal._last is not None

    def should_stop(self, step: int) -> bool:
        """See the class: collective (every rank, same step)."""
        check_step(step)
        if step % self.every:
            return False
        flag = array.array("i", [1 if self.requested else 0])
        self.world.allreduce(flag, op="max")
        if not flag[0]:
            return False
        self.stopped_at = step
        if self.dir is None:
            if self.rank == 0:
                _warn("stop signal at step %d, but no LOOM_CKPT_DIR (--loom-ckpt) nor dir=: "
                      "stopping without a checkpoint" % step)
            return True
        self.save(step)
        if self.rank == 0:
            request_requeue(step, signal=self._signal.signal or _signal._last)
        return True

    def _agree(self, value: int, op: str) -> int:
        a = array.array("q", [value])
        self.world.allreduce(a, op=op)
        return int(a[0])

    # ---- saving -------------------------------------------------------------
    def _sampler_state(self) -> Any:
        s = self.sampler
        if s is None:
            return None
        if hasattr(s, "state_dict"):
            return {"state_dict": s.state_dict()}
        if hasattr(s, "epoch"):
            return {"epoch": s.epoch}
        return None

    def save(self, step: int) -> str:
        """Save step durably (collective); the step directory's path."""
        check_step(step)
        if self.dir is None:
            raise invalid("Resumable.save: no directory (dir= or $LOOM_CKPT_DIR)")
        path = os.path.join(self.dir, "step-%d" % step)
        ok = 1
        try:
            if self.rank == 0:
                os.makedirs(path, exist_ok=True)
            self.world.barrier()
            if self.rank == 0:
                state = {"step": step, "world_size": self.size,
                         "sampler": self._sampler_state()}
                for name, obj in self.objects.items():
                    state[name] = obj.state_dict()
                durable_save(state, os.path.join(path, "state.pt"))
            durable_save(_rng_state(), os.path.join(path, "rng-%d.pt" % self.rank))
        except OSError as e:
            _warn("rank %d: checkpoint step %d: %s" % (self.rank, step, e))
            ok = 0
        if self._agree(ok, "min") == 0:
            raise OSError("loom: checkpoint step %d in %s failed on some rank (see its "
                          "warning)" % (step, path))
        if self.rank == 0:
            _write_text(os.path.join(path, "COMPLETE"), "step %d\nranks %d\n" % (step, self.size))
            _write_text(os.path.join(self.dir, "latest"), "%d\n" % step)
            self._prune(step)
        self.world.barrier()
        self.path = path
        return path

    def _steps(self) -> List[int]:
        """The complete steps under dir, newest first."""
        out = []
        try:
            names = os.listdir(self.dir) if self.dir else []
        except FileNotFoundError:
            names = []
        for n in names:
            if n.startswith("step-") and n[5:].isdigit() and \
                    os.path.exists(os.path.join(self.dir or "", n, "COMPLETE")):
                out.append(int(n[5:]))
        return sorted(out, reverse=True)

    def _prune(self, newest: int) -> None:
        import shutil
        steps = self._steps()
        for s in steps[KEEP:]:
            if s < newest:
                shutil.rmtree(os.path.join(self.dir or "", "step-%d" % s), ignore_errors=True)

    # ---- restoring ----------------------------------------------------------
    def _load(self, step: int) -> Optional[Dict[str, Any]]:
        import torch
        path = os.path.join(self.dir or "", "step-%d" % step, "state.pt")
        try:
            return torch.load(path, map_location="cpu")
        except Exception as e:      # damaged or unreadable: fall back
            _warn("checkpoint %s does not load (%s: %s); trying an older one" %
                  (path, type(e).__name__, e))
            return None

    def restore(self) -> int:
        """See the class: collective; the first step to run."""
        steps = self._steps()
        state = None
        for s in steps:
            state = self._load(s)
            if state is not None:
                break
        mine = state["step"] if state is not None else -1
        agreed = self._agree(mine, "min")
        if agreed != mine:
            state = self._load(agreed) if agreed >= 0 else None
            if agreed >= 0 and state is None:
                raise OSError("loom: checkpoint step %d loads on some ranks, not on rank %d" %
                              (agreed, self.rank))
        if state is None:
            return 0
        for name, obj in self.objects.items():
            if name in state:
                obj.load_state_dict(state[name])
            elif self.rank == 0:
                _warn("checkpoint step %d has no %s; it starts fresh" % (agreed, name))
        ss = state.get("sampler")
        if self.sampler is not None and ss is not None:
            if "state_dict" in ss and hasattr(self.sampler, "load_state_dict"):
                self.sampler.load_state_dict(ss["state_dict"])
            elif "epoch" in ss and hasattr(self.sampler, "set_epoch"):
                self.sampler.set_epoch(ss["epoch"])
        self.path = os.path.join(self.dir or "", "step-%d" % agreed)
        rng = os.path.join(self.path, "rng-%d.pt" % self.rank)
        if state.get("world_size") == self.size and os.path.exists(rng):
            import torch
            _set_rng_state(torch.load(rng))
        elif self.rank == 0:
            _warn("checkpoint step %d was saved on %s ranks, restored on %d: the RNG states "
                  "start fresh" % (agreed, state.get("world_size"), self.size))
        return agreed + 1

    def close(self) -> None:
        """Put the signal handlers back, but ignore SIGUSR1/SIGUSR2 where a
        StopSignal took them from their default action: Slurm's --signal
        may still come while the finished program exits (Python puts the
        default action back at exit), and it would turn a finished run
        into a failed job. Free the world this object made."""
        self._signal.close()
        for s in (_sig.SIGUSR1, _sig.SIGUSR2):
            h = _sig.getsignal(s)
            if h == _sig.SIG_DFL or isinstance(getattr(h, "__self__", None), StopSignal):
                _sig.signal(s, _sig.SIG_IGN)
                _IGNORED.add(int(s))
        if self._own_world:
            self.world.close()

    def __enter__(self) -> "Resumable":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
