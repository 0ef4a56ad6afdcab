"""loom.StopSignal and loom.request_requeue: the stop signals of
docs/environment.md for programs that save with their own code."""
import os
import signal as _sig
import sys

from ._lib import Closing, check, check_step, invalid, lib

_last = None    # the last stop signal a StopSignal saw in this process


def _parse(text):
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


def stop_signals():
    """The stop signals, as libloom catches them: SIGTERM, and the one
    LOOM_CKPT_SIGNAL names (loom.so sets it from --loom-ckpt-signal)."""
    sigs = [int(_sig.SIGTERM)]
    text = os.environ.get("LOOM_CKPT_SIGNAL", "")
    if text:
        s = _parse(text)
        if s is None:
            sys.stderr.write("loom: warning: LOOM_CKPT_SIGNAL=%s is not a signal name or "
                             "number; only SIGTERM is caught\n" % text)
        elif s not in sigs:
            sigs.append(s)
    return sigs


class StopSignal(Closing):
    """Catch the stop signals (SIGTERM and LOOM_CKPT_SIGNAL) from now on.

    The handler only records the signal: .requested becomes True and
    .signal holds its number; the program checks .requested at a step
    boundary, agrees on it across ranks (one all_reduce), saves, calls
    loom.request_requeue(step) on one rank, and exits 0. A Python handler
    installed before is chained (still called), an ignored signal stays
    ignored, and close() (or leaving the with block) puts the old
    handlers back. A signal whose handler was installed outside Python
    (for instance by an open loom.Checkpoint, which has should_stop()
    for this) is left alone. Python runs signal handlers in the main
    thread only, so make it there.

        with loom.StopSignal() as stop:
            for step in ...:
                ...
                if stop.requested: ...
    """

    def __init__(self):
        self.requested = False
        self.signal = None
        self._old = {}
        for s in stop_signals():
            old = _sig.getsignal(s)
            if old == _sig.SIG_IGN or old is None:
                continue
            try:
                _sig.signal(s, self._handler)
            except ValueError:
                self.close()
                raise invalid("StopSignal() must be made in the main thread (Python runs "
                              "signal handlers there only)") from None
            self._old[s] = old

    def _handler(self, signum, frame):
        global _last
        self.requested = True
        self.signal = _last = signum
        old = self._old.get(signum)
        if callable(old):
            old(signum, frame)

    @property
    def signals(self):
        """The signal numbers this object watches."""
        return sorted(self._old)

    def close(self):
        """Put back the handlers that were there before."""
        for s, old in self._old.items():
            if _sig.getsignal(s) == self._handler:
                _sig.signal(s, old)
        self._old = {}


def request_requeue(step, signal=None, dir=None):
    """Ask loom.so to requeue this job after the program's own checkpoint
    of `step` (torch.save, torch.distributed.checkpoint...): call it on one
    rank once that save is durable (files closed, fsynced), then exit 0.

    It writes the request of docs/environment.md ("Requeue after a
    checkpoint") into dir (default $LOOM_CKPT_DIR) with libloom's
    loom_ckpt_request_requeue(3). signal: the stop signal's number
    (default: the last one a StopSignal saw, else SIGTERM), for loom.so's
    log line. Raises loom.Error (LOOM_ERR_INVALID) when LOOM_CKPT_DIR is
    unset or loom.so did not start the job (no --loom-ckpt=DIR: nothing
    would act on the request), LOOM_ERR_IO when the file cannot be
    written. LOOM_CKPT_REQUEUE=0 makes it write nothing.
    """
    check_step(step)
    if signal is None:
        signal = _last if _last is not None else int(_sig.SIGTERM)
    if isinstance(signal, bool) or not isinstance(signal, int) or not 0 < signal < _sig.NSIG:
        raise invalid("request_requeue: signal=%r is not a signal number" % (signal,))
    if dir is None:
        dir = os.environ.get("LOOM_CKPT_DIR")
        if not dir:
            raise invalid("request_requeue: LOOM_CKPT_DIR is unset: the job was not started "
                          "with --loom-ckpt=DIR, and loom.so requeues only such jobs")
    elif not isinstance(dir, str):
        raise invalid("request_requeue: dir=%r is not a string" % (dir,))
    if not os.environ.get("SLURM_JOB_ID"):
        raise invalid("request_requeue: SLURM_JOB_ID is unset: not a Slurm job, so nothing "
                      "would requeue it")
    if not os.environ.get("LOOM_PLUGIN_VERSION"):
        raise invalid("request_requeue: LOOM_PLUGIN_VERSION is unset: loom.so did not start "
                      "this job (add it to plugstack.conf), so nothing would requeue it")
    check(lib.loom_ckpt_request_requeue(dir.encode(), step, signal),
          "loom_ckpt_request_requeue(%s)" % dir)
