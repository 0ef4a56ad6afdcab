"""loom.StopSignal and loom.request_requeue: the stop signals of
docs/environment.md for programs that save with their own code."""
import os
import signal as _sig
import sys
from typing import Any, Dict, Iterable, List, Optional, Union

from ._errors import invalid, wrong_type
from ._lib import Closing, check, check_step, lib

_last: Optional[int] = None     # the last stop signal a StopSignal saw in this process


def _parse(text: str) -> Optional[int]:
    """LOOM_CKPT_SIGNAL's value ("USR1", "SIGUSR1", "10", a "@SECONDS"
    suffix ignored) as a signal number, None when it is none."""
    name = text.split("@", 1)[0]
    if name.isdigit():
        v = int(name)
        return v if 0 < v < _sig.NSIG and v not in (_sig.SIGKILL, _sig.SIGSTOP) else None
    name = name if name.startswith("SIG") else "SIG" + name
    try:
        v = _sig.Signals[name]
    except KeyError:
        return None
    return None if v in (_sig.SIGKILL, _sig.SIGSTOP) else int(v)


def stop_signals() -> List[int]:
    """The stop signals, as libloom catches them: SIGTERM, and the one
    LOOM_CKPT_SIGNAL names (loom.so sets it from --loom-ckpt-signal).
    StopSignal() also catches SIGUSR1 and SIGUSR2 where nothing else
    handles them."""
    sigs = [int(_sig.SIGTERM)]
    text = os.environ.get("LOOM_CKPT_SIGNAL", "")
    if text:
        s = _parse(text)
        if s is None:
            sys.stderr.write("loom: warning: LOOM_CKPT_SIGNAL=%s is not a signal name or "
                             "number; it is ignored\n" % text)
        elif s not in sigs:
            sigs.append(s)
    return sigs


# caught by default where nothing else handles them: Slurm's --signal
# (Lightning's `#SBATCH --signal=USR1@90`) sends them and sets nothing in
# the task's environment, and their default action kills the process
_OPTIONAL = (int(_sig.SIGUSR1), int(_sig.SIGUSR2))


def _signum(value: Union[int, str]) -> int:
    """A signal of StopSignal(signals=...) as its number."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise wrong_type("StopSignal: signal %r is not a signal number or name" % (value,))
    s = _parse(value if isinstance(value, str) else str(int(value)))
    if s is None:
        raise invalid("StopSignal: %r is not a signal that can be caught" % (value,))
    return s


class StopSignal(Closing):
    """Catch the stop signals from now on.

    Which signals: by default SIGTERM (preemption, scancel) and the one
    LOOM_CKPT_SIGNAL names (loom.so's --loom-ckpt-signal), and also
    SIGUSR1 and SIGUSR2 where their handler is still the default one
    (which kills the process): Slurm's own `--signal=USR1@90` (as
    Lightning's sbatch scripts use) sets nothing in the task's
    environment, so the process cannot tell whether the job asked for
    it; a program (or library, such as Lightning) that installed its own
    SIGUSR1 or SIGUSR2 handler before keeps that handler alone. signals=[...] (numbers or names such
    as "USR1") watches exactly those instead, as it does SIGTERM.

    The handler only records the signal: .requested becomes True and
    .signal holds its number; the program checks .requested at a step
    boundary, agrees on it across ranks (one all_reduce), saves, calls
    loom.request_requeue(step) on one rank, and exits 0. For SIGTERM,
    LOOM_CKPT_SIGNAL and signals=[...], a Python handler installed before
    is chained (still called); an ignored signal stays ignored, and
    close() (or leaving the with block) puts the old handlers back. A
    signal whose handler was installed outside Python (for instance by
    an open loom.Checkpoint, which has should_stop() for this) is left
    alone. Python runs signal handlers in the main thread only, so make
    it there (elsewhere: loom.InvalidArgument, a ValueError). It needs
    no libloom.

        with loom.StopSignal() as stop:
            for step in ...:
                ...
                if stop.requested: ...
    """

    def __init__(self, signals: Optional[Iterable[Union[int, str]]] = None) -> None:
        self.requested = False
        self.signal: Optional[int] = None
        self._old: Dict[int, Any] = {}
        if signals is None:
            chained = stop_signals()
            want = chained + [s for s in _OPTIONAL if s not in chained]
        else:
            if isinstance(signals, (int, str)):
                raise wrong_type("StopSignal: signals=%r is not a list of signals" % (signals,))
            want = chained = []
            for v in signals:
                s = _signum(v)
                if s not in want:
                    want.append(s)
        for s in want:
            old = _sig.getsignal(s)
            if old == _sig.SIG_IGN or old is None:
                continue
            if s not in chained and old != _sig.SIG_DFL:
                continue        # the program's own SIGUSR1/SIGUSR2 handler
            try:
                _sig.signal(s, self._handler)
            except ValueError:
                self.close()
                raise invalid("StopSignal() must be made in the main thread (Python runs "
                              "signal handlers there only)") from None
            self._old[s] = old

    def _handler(self, signum: int, frame: Any) -> None:
        global _last
        self.requested = True
        self.signal = _last = signum
        old = self._old.get(signum)
        if callable(old):
            old(signum, frame)

    @property
    def signals(self) -> List[int]:
        """The signal numbers this object watches."""
        return sorted(self._old)

    def close(self) -> None:
        """Put back the handlers that were there before."""
        for s, old in self._old.items():
            if _sig.getsignal(s) == self._handler:
                _sig.signal(s, old)
        self._old = {}


def request_requeue(step: int, signal: Optional[int] = None, dir: Optional[str] = None) -> None:
    """Ask loom.so to requeue this job after the program's own checkpoint
    of `step` (torch.save, torch.distributed.checkpoint...): call it on one
    rank once that save is durable (files closed, fsynced), then exit 0.

    It writes the request of docs/environment.md ("Requeue after a
    checkpoint") into dir (default $LOOM_CKPT_DIR) with libloom's
    loom_ckpt_request_requeue(3). signal: the stop signal's number
    (default: the last one a StopSignal saw, else SIGTERM), for loom.so's
    log line. Raises loom.InvalidArgument (a ValueError; status
    LOOM_ERR_INVALID) when LOOM_CKPT_DIR is unset or loom.so did not start
    the job (no --loom-ckpt=DIR: nothing would act on the request),
    loom.IOFailure (an OSError; LOOM_ERR_IO) when the file cannot be
    written. LOOM_CKPT_REQUEUE=0 makes it write nothing.
    """
    check_step(step)
    if signal is None:
        signal = _last if _last is not None else int(_sig.SIGTERM)
    if isinstance(signal, bool) or not isinstance(signal, int):
        raise wrong_type("request_requeue: signal=%r is not a signal number" % (signal,))
    if not 0 < signal < _sig.NSIG:
        raise invalid("request_requeue: signal=%r is not a signal number" % (signal,))
    if dir is None:
        dir = os.environ.get("LOOM_CKPT_DIR")
        if not dir:
            raise invalid("request_requeue: LOOM_CKPT_DIR is unset: the job was not started "
                          "with --loom-ckpt=DIR, and loom.so requeues only such jobs")
    elif not isinstance(dir, str):
        raise wrong_type("request_requeue: dir=%r is not a string" % (dir,))
    if not os.environ.get("SLURM_JOB_ID"):
        raise invalid("request_requeue: SLURM_JOB_ID is unset: not a Slurm job, so nothing "
                      "would requeue it")
    if not os.environ.get("LOOM_PLUGIN_VERSION"):
        raise invalid("request_requeue: LOOM_PLUGIN_VERSION is unset: loom.so did not start "
                      "this job (add it to plugstack.conf), so nothing would requeue it")
    check(lib.loom_ckpt_request_requeue(dir.encode(), step, signal),
          "loom_ckpt_request_requeue(%s)" % dir)
