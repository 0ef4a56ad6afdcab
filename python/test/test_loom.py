"""Unit tests of the Python package loom, printing TAP: every call, its
bad arguments, and a world of one. make check runs it with PYTHONPATH at
python/ and LOOM_LIBRARY at the libloom just built."""
import array
import os
import signal
import subprocess
import sys
import tempfile
import threading
import pytap  # this folder: the shared TAP runner

for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "PMIX_RANK", "LOOM_BACKEND",
          "LOOM_CKPT_DIR", "LOOM_CKPT_SIGNAL", "LOOM_CKPT_REQUEUE", "SLURM_JOB_ID",
          "SLURM_RESTART_COUNT", "SLURM_STEP_ID", "LOOM_PLUGIN_VERSION"):
    os.environ.pop(v, None)

import loom  # noqa: E402

try:
    import numpy as np
except ImportError:
    np = None

TMP = tempfile.mkdtemp(prefix="loom-py-test.")
TESTS = []
count = 0


def test(fn):
    TESTS.append(fn)
    return fn


# the class of each status that has its own (others: loom.Error itself)
KIND = {"LOOM_ERR_INVALID": loom.InvalidArgument, "LOOM_ERR_IO": loom.IOFailure,
        "LOOM_ERR_TIMEOUT": loom.Timeout, "LOOM_ERR_PEER_LOST": loom.PeerLost,
        "LOOM_ERR_REVOKED": loom.Revoked}


def raises(status, fn, *args, contains=None, kind=None, **kw):
    """fn(*args) raises loom.Error of `status` (a name), whose text has `contains`,
    of class `kind` (default: the status's own, KIND)."""
    kind = kind or KIND.get(status, loom.Error)
    try:
        fn(*args, **kw)
    except loom.Error as e:
        assert e.name == status, "raised %s, not %s: %s" % (e.name, status, e)
        assert contains is None or contains in str(e), "%r lacks %r" % (str(e), contains)
        assert type(e) is kind, "raised %s, not %s: %s" % (type(e).__name__, kind.__name__, e)
        return e
    raise AssertionError("%s(%r) did not raise %s" % (fn.__name__, args, status))


def wait_for(cond):
    """Python runs a signal's handler between bytecodes: loop until it has."""
    for _ in range(1000):
        if cond():
            return True
    return cond()


@test
def library_and_version():
    """the package loads libloom and reports its version, libloom's own"""
    parts = loom.__version__.split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts), loom.__version__
    assert loom.library_version() == loom.__version__, (loom.library_version(), loom.__version__)
    assert loom.STATUS_NAMES[-12] == "LOOM_ERR_NOT_FOUND"


LAZY = """
import os, signal, loom
print("version", loom.__version__)
stop = loom.StopSignal()
os.kill(os.getpid(), signal.SIGUSR1)
for _ in range(1000):
    if stop.requested:
        break
print("stop", stop.signal)
for call in (loom.init, loom.library_version):
    try:
        call()
    except loom.LibraryError as e:
        assert isinstance(e, OSError) and isinstance(e, loom.Error) and e.status == -8, repr(e)
        print("error", e)
"""


@test
def library_not_found():
    """a bad LOOM_LIBRARY: the import works, StopSignal too, a call needing libloom names it"""
    env = dict(os.environ, LOOM_LIBRARY=os.path.join(TMP, "nothere.so"))
    r = subprocess.run([sys.executable, "-c", LAZY], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:2] == ["version " + loom.__version__, "stop %d" % signal.SIGUSR1], lines
    assert len(lines) == 4, lines
    for line in lines[2:]:
        assert line.startswith("error LOOM_ERR_UNSUPPORTED: cannot load libloom; tried "
                               "LOOM_LIBRARY=%s/nothere.so: " % TMP), line
        assert line.endswith("set LOOM_LIBRARY to the path of libloom.so.0"), line


@test
def library_loaded_late():
    """a LOOM_LIBRARY set after a failed call is loaded by the next call"""
    code = ("import os, loom\ntry:\n    loom.library_version()\nexcept loom.LibraryError:\n"
            "    print('failed')\nos.environ['LOOM_LIBRARY'] = %r\nprint(loom.library_version())"
            % os.environ["LOOM_LIBRARY"])
    env = dict(os.environ, LOOM_LIBRARY=os.path.join(TMP, "nothere.so"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "failed\n%s\n" % loom.__version__, (r.stdout, r.stderr)


@test
def error_classes():
    """each status maps to its class, which is also the builtin one; all are loom.Error"""
    import pickle
    from loom import _lib
    want = {-1: (loom.InvalidArgument, ValueError), -3: (loom.IOFailure, OSError),
            -4: (loom.Timeout, TimeoutError), -5: (loom.PeerLost, ConnectionError),
            -10: (loom.IOFailure, OSError), -11: (loom.IOFailure, OSError),
            -13: (loom.Revoked, ConnectionError)}
    for status, name in loom.STATUS_NAMES.items():
        if status == 0:
            assert _lib.check(0, "ok") == 0
            continue
        try:
            _lib.check(status, "the call")
        except loom.Error as e:
            cls, builtin = want.get(status, (loom.Error, Exception))
            assert type(e) is cls and isinstance(e, builtin), (status, type(e))
            assert e.status == status and e.name == name, (e.status, e.name)
            assert e.message.startswith("the call: ") and str(e) == name + ": " + e.message, str(e)
            assert type(e).__module__ == "loom", type(e).__module__
            again = pickle.loads(pickle.dumps(e))
            assert type(again) is cls and str(again) == str(e) and again.status == status
        else:
            raise AssertionError("check(%d) raised nothing" % status)
    assert issubclass(loom.InvalidType, TypeError) and issubclass(loom.InvalidType, loom.Error)
    assert issubclass(loom.LibraryError, OSError) and issubclass(loom.LibraryError, loom.Error)
    assert not issubclass(loom.InvalidType, ValueError)


world = loom.init()


@test
def world_of_one():
    """loom.init() without a launcher is a world of one"""
    assert (world.rank, world.size, world.local_rank, world.local_size) == (0, 1, 0, 1)
    assert world.bootstrap == "single" and world.backend == "native", repr(world)


@test
def collectives_on_array_and_bytearray():
    """allreduce, broadcast, allgather on array.array (no numpy); not on unsigned bytes"""
    a = array.array("d", [1.5, -2.0, 3.25])
    assert world.allreduce(a) is a and list(a) == [1.5, -2.0, 3.25]
    for op in ("sum", "prod", "min", "max", "avg"):
        world.allreduce(a, op=op)
    assert list(a) == [1.5, -2.0, 3.25]
    i = array.array("i", [7, -3])
    world.broadcast(i, root=0)
    world.allgather(i)
    assert list(i) == [7, -3]
    b = array.array("b", [1, -2, 127])
    world.allreduce(b, op="max")
    assert list(b) == [1, -2, 127]
    raises("LOOM_ERR_INVALID", world.allreduce, bytearray(2), contains="format 'B'",
           kind=loom.InvalidType)
    world.barrier()


@test
def collectives_on_numpy():
    """every dtype numpy and libloom share, 2-D arrays, an empty array"""
    if np is None:
        return "skip python3-numpy is not installed"
    for dt in (np.int8, np.int32, np.int64, np.float16, np.float32, np.float64):
        x = np.arange(12, dtype=dt).reshape(3, 4)
        world.allreduce(x, op="sum")
        world.broadcast(x)
        world.allgather(x)
        assert (x == np.arange(12, dtype=dt).reshape(3, 4)).all(), (dt, x)
    world.allreduce(np.zeros(0, dtype=np.float32))


@test
def collective_bad_arguments():
    """bad buffers, ops and roots: LOOM_ERR_INVALID naming it, ValueError or TypeError"""
    raises("LOOM_ERR_INVALID", world.allreduce, [1.0, 2.0], contains="a list has no buffer",
           kind=loom.InvalidType)
    raises("LOOM_ERR_INVALID", world.allreduce, b"abc", contains="read-only")
    raises("LOOM_ERR_INVALID", world.allreduce, array.array("B", [1]),
           contains="format 'B' (1-byte items) is not a libloom dtype", kind=loom.InvalidType)
    raises("LOOM_ERR_INVALID", world.allreduce, array.array("d", [1]), op="mean",
           contains="op='mean': one of avg, max, min, prod, sum")
    raises("LOOM_ERR_INVALID", world.allreduce, array.array("d", [1]), op=None,
           contains="op=None: one of avg", kind=loom.InvalidType)
    raises("LOOM_ERR_INVALID", world.broadcast, array.array("d", [1]), root=1,
           contains="root=1 is not a rank of a world of 1")
    raises("LOOM_ERR_INVALID", world.broadcast, array.array("d", [1]), root=-1)
    raises("LOOM_ERR_INVALID", world.broadcast, array.array("d", [1]), root="0",
           contains="root='0' is not a rank", kind=loom.InvalidType)
    if np is not None:
        raises("LOOM_ERR_INVALID", world.allreduce, np.zeros((4, 4))[:, 1],
               contains="not C-contiguous")
        raises("LOOM_ERR_INVALID", world.allreduce, np.zeros(2, dtype=">f4"),
               contains="byte order")
        raises("LOOM_ERR_INVALID", world.allreduce, np.zeros(2, dtype=np.complex64),
               kind=loom.InvalidType)
        ro = np.zeros(3)
        ro.flags.writeable = False
        raises("LOOM_ERR_INVALID", world.allgather, ro, contains="read-only")


@test
def error_attributes():
    """loom.Error carries libloom's status, its name and the message"""
    e = raises("LOOM_ERR_INVALID", world.allreduce, None, kind=loom.InvalidType)
    assert e.status == -1 and isinstance(e.message, str) and str(e).startswith("LOOM_ERR_INVALID: ")
    assert isinstance(e, Exception)


def ckpt_dir(name):
    d = os.path.join(TMP, name)
    os.mkdir(d)
    return d


@test
def checkpoint_save_restore():
    """save, restore into the registered buffers, blocks of a larger tensor"""
    d = ckpt_dir("ck")
    w = array.array("f", [1.0, 2.0, 3.0, 4.0])
    blk = array.array("q", [5, 6])
    with loom.Checkpoint(world, d) as ck:
        assert ck.dir == d
        ck.tensor("w", w)
        ck.tensor("part", blk, global_shape=[4], offset=[2])
        assert ck.restore() is None
        assert ck.should_stop(0) is False
        ck.save(3)
        w[0], blk[1] = 100.0, 100
        ck.save(4)
        assert os.path.isfile(os.path.join(d, "step-4", "MANIFEST"))
        w[0], blk[1] = -1.0, -1
        assert ck.restore() == 4
        assert list(w) == [100.0, 2.0, 3.0, 4.0] and list(blk) == [5, 100]
    with loom.Checkpoint(world, d) as ck:
        w2 = array.array("f", [0.0] * 4)
        ck.tensor("w", w2)
        assert ck.restore() == 4 and list(w2) == [100.0, 2.0, 3.0, 4.0]


@test
def checkpoint_stop_signal_and_requeue():
    """SIGTERM while open: should_stop says True, the save leaves .loom-requeue"""
    d = ckpt_dir("ck-stop")
    os.environ.update(SLURM_JOB_ID="4242", SLURM_RESTART_COUNT="1")
    try:
        ck = loom.Checkpoint(world, d)
        x = array.array("d", [1.0])
        ck.tensor("x", x)
        assert ck.should_stop(1) is False
        os.kill(os.getpid(), signal.SIGTERM)     # libloom's handler: a flag
        assert ck.should_stop(2) is True
        ck.save(2)
        ck.close()
        with open(os.path.join(d, ".loom-requeue")) as f:
            assert f.read() == "job=4242\nrestart=1\nslurm_step=none\nstep=2\nsignal=TERM\nreason=preempt\n"
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    finally:
        del os.environ["SLURM_JOB_ID"], os.environ["SLURM_RESTART_COUNT"]


@test
def checkpoint_bad_arguments():
    """bad worlds, directories, shapes, names and steps are loom.Error"""
    raises("LOOM_ERR_INVALID", loom.Checkpoint, None, contains="is not a loom.World",
           kind=loom.InvalidType)
    raises("LOOM_ERR_INVALID", loom.Checkpoint, world, 5, contains="dir=5 is not a string",
           kind=loom.InvalidType)
    raises("LOOM_ERR_INVALID", loom.Checkpoint, world, contains="loom_ckpt_open($LOOM_CKPT_DIR)")
    e = raises("LOOM_ERR_IO", loom.Checkpoint, world, os.path.join(TMP, "none"))
    assert isinstance(e, OSError)
    ck = loom.Checkpoint(world, ckpt_dir("ck-bad"))
    x = array.array("f", [0.0, 0.0])
    raises("LOOM_ERR_INVALID", ck.tensor, 3, x, contains="name=3 is not a string",
           kind=loom.InvalidType)
    e = raises("LOOM_ERR_INVALID", ck.tensor, "has space", x)     # libloom's status
    assert isinstance(e, ValueError) and "loom_ckpt_tensor(has space)" in str(e), str(e)
    raises("LOOM_ERR_INVALID", ck.tensor, "x", x, global_shape=[2, 2],
           contains="one per dimension")
    raises("LOOM_ERR_INVALID", ck.tensor, "x", x, global_shape=[3], offset=[2],
           contains="offset 2 + extent 2 > global 3")
    raises("LOOM_ERR_INVALID", ck.tensor, "x", x, offset=["a"], kind=loom.InvalidType)
    raises("LOOM_ERR_INVALID", ck.tensor, "x", b"ro", contains="read-only")
    for step in (-1, "1", 1.0, True):
        kind = loom.InvalidArgument if step == -1 else loom.InvalidType
        raises("LOOM_ERR_INVALID", ck.save, step, contains="a non-negative integer", kind=kind)
        raises("LOOM_ERR_INVALID", ck.should_stop, step, kind=kind)
    ck.close()
    ck.close()      # a second close does nothing
    raises("LOOM_ERR_INVALID", ck.save, 1, contains="the checkpoint is closed")
    raises("LOOM_ERR_INVALID", ck.restore, contains="the checkpoint is closed")


@test
def stop_signal_flag_and_chaining():
    """StopSignal: a flag set by SIGTERM, the old handler chained then restored"""
    usr = [signal.SIGUSR1, signal.SIGUSR2]
    seen = []

    def mine(s, f):
        seen.append(s)
    old = signal.signal(signal.SIGTERM, mine)
    try:
        with loom.StopSignal() as stop:
            assert stop.requested is False and stop.signal is None
            assert stop.signals == sorted([signal.SIGTERM] + usr), stop.signals
            os.kill(os.getpid(), signal.SIGTERM)
            wait_for(lambda: stop.requested)
            assert stop.requested is True and stop.signal == signal.SIGTERM
            assert seen == [signal.SIGTERM], seen
        assert signal.getsignal(signal.SIGTERM) is mine
        assert all(signal.getsignal(s) == signal.SIG_DFL for s in usr)
    finally:
        signal.signal(signal.SIGTERM, old)


@test
def stop_signal_env():
    """LOOM_CKPT_SIGNAL names a second signal; an ignored one stays ignored"""
    try:
        for text in ("USR1", "SIGUSR1", "%d@120" % signal.SIGUSR1):
            os.environ["LOOM_CKPT_SIGNAL"] = text
            with loom.StopSignal() as stop:
                assert stop.signals == sorted([signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2]), \
                    (text, stop.signals)
                os.kill(os.getpid(), signal.SIGUSR1)
                wait_for(lambda: stop.requested)
                assert stop.signal == signal.SIGUSR1
            assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL
        os.environ["LOOM_CKPT_SIGNAL"] = "NOPE"
        with loom.StopSignal() as stop:
            assert stop.signals == sorted([signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2])
        with loom.StopSignal(signals=[signal.SIGTERM]) as stop:
            assert stop.signals == [signal.SIGTERM]
        os.environ["LOOM_CKPT_SIGNAL"] = "USR2"
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        with loom.StopSignal() as stop:
            assert stop.signals == sorted([signal.SIGTERM, signal.SIGUSR1])
        assert signal.getsignal(signal.SIGUSR2) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGUSR2, signal.SIG_DFL)
        os.environ.pop("LOOM_CKPT_SIGNAL", None)


USR1_CHILD = """
import signal, sys, time, loom
stop = loom.StopSignal()
print("ready", stop.signals, flush=True)
end = time.monotonic() + 30
while not stop.requested and time.monotonic() < end:
    time.sleep(0.01)
print("stop", stop.signal, flush=True)
"""


@test
def stop_signal_usr1_not_killed():
    """Slurm's --signal=USR1@90 with StopSignal: the process is flagged, not killed"""
    p = subprocess.Popen([sys.executable, "-c", USR1_CHILD], stdout=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    want = sorted(int(s) for s in (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2))
    assert first == "ready %s\n" % want, first
    p.send_signal(signal.SIGUSR1)
    rest = p.stdout.read()
    assert p.wait() == 0 and rest == "stop %d\n" % signal.SIGUSR1, (p.returncode, rest)


@test
def stop_signal_leaves_own_usr_handler():
    """a program's own SIGUSR1 handler is left alone by default, chained when asked for"""
    seen = []

    def mine(s, f):
        seen.append(s)
    old = signal.signal(signal.SIGUSR1, mine)
    try:
        with loom.StopSignal() as stop:
            assert stop.signals == sorted([signal.SIGTERM, signal.SIGUSR2]), stop.signals
            assert signal.getsignal(signal.SIGUSR1) is mine
            os.kill(os.getpid(), signal.SIGUSR1)
            wait_for(lambda: seen)
            assert seen == [signal.SIGUSR1] and stop.requested is False
        with loom.StopSignal(signals=["USR1"]) as stop:
            assert stop.signals == [signal.SIGUSR1]
            os.kill(os.getpid(), signal.SIGUSR1)
            wait_for(lambda: stop.requested)
            assert stop.signal == signal.SIGUSR1 and seen == [signal.SIGUSR1] * 2, seen
        assert signal.getsignal(signal.SIGUSR1) is mine
    finally:
        signal.signal(signal.SIGUSR1, old)


@test
def stop_signal_argument():
    """signals=: numbers, names, Signals; bad ones are InvalidArgument or InvalidType"""
    with loom.StopSignal(signals=["SIGUSR2", signal.SIGTERM, int(signal.SIGTERM), "10@90"]) as s:
        assert s.signals == sorted([signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM]), s.signals
    with loom.StopSignal(signals=[]) as s:
        assert s.signals == []
    raises("LOOM_ERR_INVALID", loom.StopSignal, signals=[signal.SIGKILL],
           contains="is not a signal that can be caught")
    raises("LOOM_ERR_INVALID", loom.StopSignal, signals=["NOPE"])
    raises("LOOM_ERR_INVALID", loom.StopSignal, signals=[0])
    raises("LOOM_ERR_INVALID", loom.StopSignal, signals=[1.5], kind=loom.InvalidType)
    raises("LOOM_ERR_INVALID", loom.StopSignal, signals="USR1", kind=loom.InvalidType,
           contains="is not a list of signals")
    assert all(signal.getsignal(x) == signal.SIG_DFL
               for x in (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2))


@test
def stop_signal_thread():
    """StopSignal outside the main thread is a clear loom.Error"""
    out = []
    t = threading.Thread(target=lambda: out.append(
        raises("LOOM_ERR_INVALID", loom.StopSignal, contains="in the main thread")))
    t.start()
    t.join()
    assert len(out) == 1 and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


@test
def request_requeue_writes_the_contract():
    """request_requeue writes job, restart, Slurm step, step and signal (docs/environment.md)"""
    d = ckpt_dir("rq")
    os.environ.update(LOOM_CKPT_DIR=d, SLURM_JOB_ID="77", SLURM_RESTART_COUNT="2",
                      SLURM_STEP_ID="3", LOOM_PLUGIN_VERSION="0.1.0")
    try:
        loom.request_requeue(9, signal=signal.SIGUSR1)
        with open(os.path.join(d, ".loom-requeue")) as f:
            assert f.read() == "job=77\nrestart=2\nslurm_step=3\nstep=9\nsignal=USR1\nreason=timelimit\n"
        del os.environ["SLURM_RESTART_COUNT"], os.environ["SLURM_STEP_ID"]
        loom.request_requeue(10, dir=d)
        with open(os.path.join(d, ".loom-requeue")) as f:
            assert f.read().startswith("job=77\nrestart=0\nslurm_step=none\nstep=10\nsignal=")
        os.remove(os.path.join(d, ".loom-requeue"))
        os.environ["LOOM_CKPT_REQUEUE"] = "0"
        loom.request_requeue(11)
        assert not os.path.exists(os.path.join(d, ".loom-requeue"))
        del os.environ["LOOM_CKPT_REQUEUE"]
        raises("LOOM_ERR_IO", loom.request_requeue, 1, dir=os.path.join(TMP, "none"),
               contains="loom_ckpt_request_requeue(%s/none)" % TMP)
    finally:
        for v in ("LOOM_CKPT_DIR", "SLURM_JOB_ID", "SLURM_RESTART_COUNT", "SLURM_STEP_ID",
                  "LOOM_PLUGIN_VERSION", "LOOM_CKPT_REQUEUE"):
            os.environ.pop(v, None)


@test
def request_requeue_errors():
    """request_requeue without --loom-ckpt, Slurm or loom.so: clear loom.Error"""
    raises("LOOM_ERR_INVALID", loom.request_requeue, 1,
           contains="LOOM_CKPT_DIR is unset: the job was not started with --loom-ckpt=DIR")
    os.environ["LOOM_CKPT_DIR"] = TMP
    try:
        raises("LOOM_ERR_INVALID", loom.request_requeue, 1, contains="SLURM_JOB_ID is unset")
        os.environ["SLURM_JOB_ID"] = "5"
        raises("LOOM_ERR_INVALID", loom.request_requeue, 1,
               contains="LOOM_PLUGIN_VERSION is unset: loom.so did not start this job")
        os.environ["LOOM_PLUGIN_VERSION"] = "0.1.0"
        raises("LOOM_ERR_INVALID", loom.request_requeue, -1, contains="a non-negative integer")
        raises("LOOM_ERR_INVALID", loom.request_requeue, 1, signal=0)
        raises("LOOM_ERR_INVALID", loom.request_requeue, 1, signal="TERM", kind=loom.InvalidType)
        raises("LOOM_ERR_INVALID", loom.request_requeue, 1, dir=3, kind=loom.InvalidType)
        assert not os.path.exists(os.path.join(TMP, ".loom-requeue"))
    finally:
        for v in ("LOOM_CKPT_DIR", "SLURM_JOB_ID", "LOOM_PLUGIN_VERSION"):
            os.environ.pop(v, None)


@test
def agree_failed_shrink_world_of_one():
    """agree, failed and shrink on a world of one; a shrunk World works and closes alone"""
    assert world.failed() == []
    assert world.agree(True) == (True, []) and world.agree(False) == (False, [])
    assert world.agree(1) == (True, []) and world.agree() == (True, [])
    raises("LOOM_ERR_INVALID", world.agree, "yes", kind=loom.InvalidType)
    s = world.shrink()
    assert isinstance(s, loom.World) and s is not world
    assert (s.rank, s.size, s.backend) == (0, 1, "native"), repr(s)
    a = array.array("d", [2.5, -1.0])
    assert list(s.allreduce(a)) == [2.5, -1.0]
    s.barrier()
    s2 = s.shrink()
    assert s2.size == 1 and s2.agree() == (True, [])
    s.close()
    s.close()
    raises("LOOM_ERR_INVALID", s2.barrier, contains="the world is closed")
    raises("LOOM_ERR_INVALID", s.shrink, contains="the world is closed")
    raises("LOOM_ERR_INVALID", s.agree, contains="the world is closed")
    world.barrier()


@test
def grow_checks_and_world_of_one():
    """grow checks nnew; a world started alone cannot take newcomers"""
    raises("LOOM_ERR_INVALID", world.grow, 0, kind=loom.InvalidArgument)
    raises("LOOM_ERR_INVALID", world.grow, 5000, kind=loom.InvalidArgument)
    raises("LOOM_ERR_INVALID", world.grow, "2", kind=loom.InvalidType)
    raises("LOOM_ERR_INVALID", world.grow, True, kind=loom.InvalidType)
    raises("LOOM_ERR_UNSUPPORTED", world.grow, 1, contains="loom_comm_grow")
    world.barrier()


@test
def revoke_raises_revoked():
    """after revoke() an operation raises loom.Revoked; agree and shrink still work"""
    s = world.shrink()
    s.revoke()
    e = raises("LOOM_ERR_REVOKED", s.barrier, contains="loom_barrier")
    assert isinstance(e, ConnectionError) and e.status == -13, repr(e)
    assert s.agree(True) == (True, [])
    t = s.shrink()
    t.barrier()
    assert t.allreduce(array.array("i", [7]))[0] == 7
    s.close()
    raises("LOOM_ERR_INVALID", t.barrier, contains="the world is closed")


@test
def world_close():
    """a closed world's calls are loom.Error; a second close does nothing"""
    world.close()
    world.close()
    raises("LOOM_ERR_INVALID", world.barrier, contains="the world is closed")
    raises("LOOM_ERR_INVALID", world.allreduce, array.array("d", [1]))
    raises("LOOM_ERR_INVALID", loom.Checkpoint, world, TMP)
    raises("LOOM_ERR_INVALID", world.shrink, contains="the world is closed")
    raises("LOOM_ERR_INVALID", world.revoke, contains="the world is closed")


def main():
    rc = pytap.run(TESTS)
    subprocess.run(["rm", "-rf", TMP])
    return rc


if __name__ == "__main__":
    sys.exit(main())
