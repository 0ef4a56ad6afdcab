"""Unit tests of loom.torch (Resumable, the DCP StorageWriter/StorageReader)
in a world of one, printing TAP; every test is skipped without torch.
make check runs it with PYTHONPATH at python/ and LOOM_LIBRARY at the
libloom just built."""
import os
import signal
import subprocess
import sys
import tempfile
import pytap  # this folder: the shared TAP runner

for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "PMIX_RANK", "LOOM_BACKEND",
          "LOOM_CKPT_DIR", "LOOM_CKPT_SIGNAL", "LOOM_CKPT_REQUEUE", "LOOM_CKPT_CACHE",
          "SLURM_JOB_ID", "SLURM_RESTART_COUNT", "SLURM_STEP_ID", "LOOM_PLUGIN_VERSION"):
    os.environ.pop(v, None)

import loom  # noqa: E402
import loom.torch  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

TMP = tempfile.mkdtemp(prefix="loom-torch-test.")
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def model_and_friends():
    torch.manual_seed(1)
    m = torch.nn.Linear(4, 3)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    sampler = torch.utils.data.DistributedSampler(list(range(10)), num_replicas=1, rank=0)
    return m, opt, sched, sampler


def train(m, opt, sched, n):
    for _ in range(n):
        loss = m(torch.randn(2, 4)).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()


@test
def t_lazy():
    """import loom does not import torch; import loom.torch registers the
    backend "loom" (which needs torch.distributed)"""
    out = subprocess.run([sys.executable, "-c", "import sys, loom; "
                          "print('torch' in sys.modules)"], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out
    out = subprocess.run([sys.executable, "-c", "import loom.torch, torch.distributed as d; "
                          "print('LOOM' in d.Backend._plugins)"], capture_output=True, text=True)
    assert out.stdout.strip() == "True", out


@test
def t_arguments():
    """Resumable: bad arguments are TypeError/ValueError (loom.Error)"""
    if torch is None:
        return "skip torch is not installed"
    for kw, kind in (({"model": object()}, TypeError), ({"every": 0}, ValueError),
                     ({"every": "2"}, TypeError), ({"dir": 3}, TypeError)):
        try:
            loom.torch.Resumable(**kw)
        except kind as e:
            assert isinstance(e, loom.Error), e
        else:
            raise AssertionError("%r did not raise %s" % (kw, kind.__name__))


@test
def t_save_restore():
    """Resumable: restore() is 0 when empty; save then restore brings back model, optimizer, scheduler, sampler epoch and RNG"""
    if torch is None:
        return "skip torch is not installed"
    d = os.path.join(TMP, "r1")
    m, opt, sched, sampler = model_and_friends()
    with loom.torch.Resumable(model=m, optimizer=opt, scheduler=sched, sampler=sampler,
                              dir=d) as run:
        assert run.restore() == 0
        train(m, opt, sched, 3)
        sampler.set_epoch(5)
        run.save(2)
        want = {k: v.clone() for k, v in m.state_dict().items()}
        mom = [opt.state[p]["momentum_buffer"].clone() for p in m.parameters()]
        lr = sched.get_last_lr()
        nxt = torch.rand(3)
        assert sorted(os.listdir(os.path.join(d, "step-2"))) == ["COMPLETE", "rng-0.pt",
                                                                 "state.pt"]
    m, opt, sched, sampler = model_and_friends()
    with loom.torch.Resumable(model=m, optimizer=opt, scheduler=sched, sampler=sampler,
                              dir=d) as run:
        assert run.restore() == 3
        for k, v in m.state_dict().items():
            assert torch.equal(v, want[k]), k
        for p, b in zip(m.parameters(), mom):
            assert torch.equal(opt.state[p]["momentum_buffer"], b)
        assert sched.get_last_lr() == lr and sampler.epoch == 5
        assert torch.equal(torch.rand(3), nxt), "the RNG state did not come back"
        assert run.path == os.path.join(d, "step-2")


@test
def t_fallback_keep():
    """Resumable: the newest two steps are kept; a damaged newest falls back to the one before"""
    if torch is None:
        return "skip torch is not installed"
    d = os.path.join(TMP, "r2")
    m, opt, sched, _ = model_and_friends()
    with loom.torch.Resumable(model=m, optimizer=opt, dir=d) as run:
        for s in (1, 2, 3):
            run.save(s)
        assert sorted(os.listdir(d)) == ["latest", "step-2", "step-3"], os.listdir(d)
        with open(os.path.join(d, "step-3", "state.pt"), "r+b") as f:
            f.write(b"damaged")
        assert run.restore() == 3


@test
def t_stop_signal():
    """Resumable: SIGUSR1 (no LOOM_CKPT_SIGNAL) makes should_stop save and ask loom.so for the requeue"""
    if torch is None:
        return "skip torch is not installed"
    ck = os.path.join(TMP, "job")
    os.makedirs(ck)
    env = {"LOOM_CKPT_DIR": ck, "SLURM_JOB_ID": "77", "LOOM_PLUGIN_VERSION": "0.1.0"}
    os.environ.update(env)
    try:
        m, opt, _, _ = model_and_friends()
        with loom.torch.Resumable(model=m, optimizer=opt) as run:
            assert run.dir == os.path.join(ck, "resumable")
            assert not run.should_stop(0)
            os.kill(os.getpid(), signal.SIGUSR1)
            for _ in range(1000):
                if run.requested:
                    break
            assert run.should_stop(1)
            assert run.stopped_at == 1
        assert os.path.exists(os.path.join(ck, "resumable", "step-1", "COMPLETE"))
        assert os.path.exists(os.path.join(ck, ".loom-requeue")), os.listdir(ck)
    finally:
        for k in env:
            os.environ.pop(k, None)
        loom._signal._last = None


@test
def t_dcp_round_trip():
    """StorageWriter/StorageReader: dtypes (bfloat16, bool, 0-dim), Python values, async, a damaged step falls back"""
    if torch is None:
        return "skip torch is not installed"
    D = loom.torch.dcp()
    d = os.path.join(TMP, "dcp")
    world = loom.init()
    try:
        def sd(k):
            return {"a": torch.arange(6, dtype=torch.float32).reshape(2, 3) + k,
                    "h": torch.ones(4, dtype=torch.bfloat16) * k,
                    "m": torch.tensor([True, False, k % 2 == 1]),
                    "z": torch.tensor(k, dtype=torch.int64), "obj": {"k": k}}
        w = loom.torch.StorageWriter(d, async_save=True, world=world)
        for k in range(3):
            D.save_state_dict(sd(k), w, no_dist=True)
        w.close()
        assert w.saved == 2 and open(os.path.join(d, "latest")).read() == "step-2\n"
        got = {"a": torch.zeros(2, 3), "h": torch.zeros(4, dtype=torch.bfloat16),
               "m": torch.zeros(3, dtype=torch.bool), "z": torch.tensor(0), "obj": None}
        r = loom.torch.StorageReader(d, world=world)
        D.load_state_dict(got, r, no_dist=True)
        want = sd(2)
        assert r.step == 2
        for k in ("a", "h", "m", "z"):
            assert torch.equal(got[k], want[k]), (k, got[k], want[k])
        assert got["obj"] == {"k": 2}
        man = open(os.path.join(d, "step-2", "MANIFEST")).read().split("\n")
        f = [ln.split(" file ")[1].split()[0] for ln in man if ln.startswith("tensor t0 ")][0]
        with open(os.path.join(d, "step-2", f), "r+b") as fh:
            fh.write(b"\xff\xfe")
        r = loom.torch.StorageReader(d, world=world)
        D.load_state_dict(got, r, no_dist=True)
        assert r.step == 1 and torch.equal(got["a"], sd(1)["a"]), (r.step, got["a"])
    finally:
        world.close()


@test
def t_dcp_writer_reused():
    """StorageWriter: one handle for saves whose tables differ, staging reserved from state_dict"""
    if torch is None:
        return "skip torch is not installed"
    D = loom.torch.dcp()
    d = os.path.join(TMP, "dcp-reused")
    world = loom.init()
    try:
        def sd(k):
            out = {"a": torch.arange(6, dtype=torch.float32) + k, "x%d" % k: torch.full((k + 1,), k)}
            if k == 2:
                out["big"] = torch.ones(1000, dtype=torch.float64) * k
            return out
        w = loom.torch.StorageWriter(d, async_save=True, world=world, state_dict=sd(0))
        ck = w._ck
        assert ck is not None, "state_dict= opens the handle at construction"
        for bad, exc in (("1", TypeError), (True, TypeError), (-1, ValueError)):
            try:
                ck.reserve(bad)
                raise AssertionError("reserve(%r) did not raise" % (bad,))
            except exc:
                pass
        for k in range(3):
            D.save_state_dict(sd(k), w, no_dist=True)
            assert w._ck is ck, "save %d reopened the handle" % k
        w.wait()
        assert open(os.path.join(d, "latest")).read() == "step-2\n"
        w.close()
        for k in (1, 2):
            want = sd(k)
            got = {n: torch.zeros_like(v) for n, v in want.items()}
            r = loom.torch.StorageReader(d, step=k, world=world)
            D.load_state_dict(got, r, no_dist=True)
            for n in want:
                assert torch.equal(got[n], want[n]), (k, n, got[n], want[n])
    finally:
        world.close()


PER_SAVE = r"""
import os, sys, torch, loom.torch
from loom import _dcp
D, d = loom.torch.dcp(), sys.argv[1]
ws, cks = [], []
for k in range(5):
    w = loom.torch.StorageWriter(d, async_save=True)   # README's pattern: one per save, never closed
    D.save_state_dict({"a": torch.full((1000,), float(k)), "k": k}, w, no_dist=True)
    ws.append(w.world)
    cks.append(w._ck)
    print("save", k, "step", w.saved, flush=True)
print("worlds", _dcp._COUNTS["worlds"], "handles", _dcp._COUNTS["handles"],
      "same world", all(x is ws[0] for x in ws), "same handle", all(x is cks[0] for x in cks))
r = loom.torch.StorageReader(d)
got = {"a": torch.zeros(1000), "k": None}
D.load_state_dict(got, r, no_dist=True)
print("loaded", r.step, got["k"], bool(torch.equal(got["a"], torch.full((1000,), 4.0))))
print("worlds", _dcp._COUNTS["worlds"], "handles", _dcp._COUNTS["handles"])
w = loom.torch.StorageWriter(d, async_save=True)
D.save_state_dict({"a": torch.full((1000,), 5.0), "k": 5}, w, no_dist=True)
print("last", w.saved, flush=True)
"""


@test
def t_dcp_writer_per_save():
    """StorageWriter made per save, never closed: one world, one handle; the exit makes the last async save durable"""
    if torch is None:
        return "skip torch is not installed"
    d = os.path.join(TMP, "dcp-per-save")
    out = subprocess.run([sys.executable, "-c", PER_SAVE, d], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out
    lines = out.stdout.splitlines()
    assert lines[:5] == ["save %d step %d" % (k, k) for k in range(5)], out
    assert lines[5] == "worlds 1 handles 1 same world True same handle True", out
    # the reader waited for the save in flight, and used the same world
    assert lines[6:8] == ["loaded 4 4 True", "worlds 1 handles 1"], out
    assert lines[8] == "last 5", out
    # exited with save 5 in flight: the exit waited for it to be committed
    assert open(os.path.join(d, "latest")).read() == "step-5\n", out
    assert "warning" not in out.stderr, out.stderr


def main():
    rc = pytap.run(TESTS)
    subprocess.run(["rm", "-rf", TMP])
    return rc


if __name__ == "__main__":
    sys.exit(main())
