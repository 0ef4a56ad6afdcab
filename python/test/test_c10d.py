"""Unit tests of loom.torch, the process group "loom", printing TAP: on a
world of one (no cluster; t/t5106 runs 4 ranks): registration, every
operation, futures, non-contiguous tensors, what raises (a tensor on
another device: the check reached directly, torch dispatches by device
first), groups, a second init after destroy. make check runs it where
loom._c10d is built, with LOOM_TORCH_EXTENSION at it; without torch every
test is skipped."""
import datetime
import gc
import os
import sys
import warnings
import pytap  # this folder: the shared TAP runner

for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "PMIX_RANK", "LOOM_BACKEND",
          "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
    os.environ.pop(v, None)
warnings.filterwarnings("ignore", category=UserWarning)  # _allgather_base & co: "deprecated"

try:
    import torch
    import torch.distributed as dist
    import loom.torch
    why_not = None
except ImportError as e:
    why_not = str(e)

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def init():
    dist.init_process_group("loom", store=dist.HashStore(), rank=0, world_size=1)


def raises(fn, *words):
    """fn() raises RuntimeError whose text has every one of words"""
    try:
        fn()
    except RuntimeError as e:
        for w in words:
            assert w in str(e), "%r lacks %r" % (str(e), w)
        return
    raise AssertionError("no RuntimeError (wanted %s)" % (words,))


@test
def registered():
    """import loom.torch registers the backend; init_process_group("loom") gives it"""
    assert "LOOM" in dist.Backend._plugins
    init()
    pg = dist.group.WORLD
    assert isinstance(pg, loom.torch.ProcessGroupLoom), type(pg)
    assert dist.get_backend().lower() == "loom"
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    assert pg.bootstrap == "env", pg.bootstrap
    assert pg.transport(0) == "self", pg.transport(0)


@test
def operations():
    """every operation on a world of one gives its input back"""
    x = torch.arange(10, dtype=torch.float32)
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.PRODUCT,
               dist.ReduceOp.MIN, dist.ReduceOp.MAX):
        a = x.clone()
        dist.all_reduce(a, op=op)
        assert torch.equal(a, x), (op, a)
        dist.reduce(a, 0, op=op)
        assert torch.equal(a, x)
    b = [x.clone(), x[:3].clone()]
    dist.all_reduce_coalesced(b)
    assert torch.equal(b[0], x) and torch.equal(b[1], x[:3])
    c = x.clone()
    dist.broadcast(c, 0)
    assert torch.equal(c, x)
    out = [torch.empty_like(x)]
    dist.all_gather(out, x)
    assert torch.equal(out[0], x)
    flat = torch.empty_like(x)
    dist._all_gather_base(flat, x)
    assert torch.equal(flat, x)
    o = torch.empty_like(x)
    dist.reduce_scatter(o, [x.clone()])
    assert torch.equal(o, x)
    dist._reduce_scatter_base(o, x.clone())
    assert torch.equal(o, x)
    o = torch.empty_like(x)
    dist.all_to_all_single(o, x)
    assert torch.equal(o, x)
    o = torch.empty_like(x)
    dist.all_to_all_single(o, x, [10], [10])
    assert torch.equal(o, x)
    lo = [torch.empty_like(x)]
    dist.all_to_all(lo, [x])
    assert torch.equal(lo[0], x)
    g = [torch.empty_like(x)]
    dist.gather(x, g, dst=0)
    assert torch.equal(g[0], x)
    s = torch.empty_like(x)
    dist.scatter(s, [x.clone()], src=0)
    assert torch.equal(s, x)
    dist.barrier()


@test
def future_and_noncontiguous():
    """async work completes its future with the tensors; non-contiguous tensors are written back"""
    x = torch.arange(12, dtype=torch.float64).view(3, 4).t()
    assert not x.is_contiguous()
    want = x.clone()
    w = dist.all_reduce(x, async_op=True)
    v = w.get_future().wait()
    assert w.is_completed()
    assert torch.equal(v[0], want) and torch.equal(x, want)
    # a DDP communication hook's chain
    fut = dist.all_reduce(torch.ones(4), async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    assert torch.equal(fut.wait(), torch.full((4,), 2.0))


@test
def who_completes():
    """a Work completes however it is awaited: polled, waited with a timeout, its future after wait, dropped"""
    w = dist.all_reduce(torch.ones(4), async_op=True)
    while not w.is_completed():
        pass
    assert w.is_success()
    w = dist.all_reduce(torch.ones(4), async_op=True)
    assert w.wait(timeout=datetime.timedelta(seconds=60))
    w = dist.all_reduce(torch.ones(4), async_op=True)
    w.wait()
    assert torch.equal(w.get_future().wait()[0], torch.ones(4))
    for _ in range(100):
        dist.all_reduce(torch.ones(1000), async_op=True)   # dropped at once
    x = torch.ones(3)
    dist.all_reduce(x)
    assert torch.equal(x, torch.ones(3))


@test
def every_dtype():
    """reductions over loom's dtypes; data movement over any dtype"""
    for dt in (torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
               torch.float32, torch.float64):
        a = torch.arange(5).to(dt)
        dist.all_reduce(a, op=dist.ReduceOp.MAX)
        assert torch.equal(a, torch.arange(5).to(dt)), dt
    for dt in (torch.uint8, torch.bool, torch.int16, torch.complex64):
        a = torch.ones(5, dtype=dt)
        dist.broadcast(a, 0)
        assert torch.equal(a, torch.ones(5, dtype=dt)), dt


@test
def what_raises():
    """what loom cannot do raises RuntimeError naming it"""
    raises(lambda: dist.all_reduce(torch.ones(2, dtype=torch.uint8)), "allreduce", "dtype Byte")
    raises(lambda: dist.all_reduce(torch.ones(2, dtype=torch.int32), op=dist.ReduceOp.BXOR),
           "allreduce", "BXOR")
    raises(lambda: dist.reduce_scatter(torch.ones(2), [torch.ones(3)]), "reduce_scatter",
           "3 elements where 2")
    raises(lambda: dist.send(torch.ones(1), 0, tag=7), "send", "tag 7")
    raises(lambda: dist.all_to_all_single(torch.ones(3), torch.ones(3), [2], [3]),
           "alltoall_base", "output split sizes do not add up")
    raises(lambda: dist.broadcast(torch.ones(1), 3), "broadcast", "root rank 3")


@test
def other_device():
    """a tensor neither on the CPU nor on CUDA is an error naming its device (checked directly)"""
    # torch 1.13 dispatches only CPU and CUDA tensors to a process group:
    # the check every operation makes first is reached directly
    raises(lambda: loom.torch._c10d._check_device("allreduce", torch.ones(2, device="meta")),
           "allreduce", "a tensor on meta", "takes CPU and CUDA tensors")


@test
def cuda_routing():
    """CUDA tensors: the world's backend, and each refusal naming the device and the remedy"""
    # a CPU-only torch makes no CUDA tensor but names CUDA devices: the
    # choices the group makes for one are reached directly
    c = loom.torch._c10d
    wb = c._world_backend
    assert wb(None, True, 2) == "nccl"
    assert wb(None, True, 0) == "native"
    assert wb(None, False, 2) == "native"
    assert wb("", True, 1) == "nccl"
    assert wb("native", True, 2) == "LOOM_BACKEND"
    assert wb("nccl", False, 0) == "LOOM_BACKEND"
    assert c._backend_built("native")
    refusal = c._device_refusal
    assert refusal("cpu", -1, "native") == ""
    assert refusal("cuda:1", 1, "nccl") == ""
    r = refusal("cuda:0", -1, "native")
    assert "a tensor on cuda:0" in r and "runs on the native backend" in r and \
        "NCCL" in r and "LOOM_BACKEND" in r, r
    r = refusal("cuda:1", 0, "nccl")
    assert "a tensor on cuda:1" in r and "on cuda:0" in r and "set_device(LOCAL_RANK)" in r, r
    assert "takes CPU and CUDA tensors" in refusal("meta", 0, "nccl")
    # this CPU world (the group of the tests before): it says where it runs
    pg = dist.group.WORLD
    assert pg.loom_backend == "native", pg.loom_backend
    assert pg.device == -1, pg.device


@test
def groups():
    """new_group() of every rank is a group of its own; a second init after destroy works"""
    g = dist.new_group()
    a = torch.ones(3)
    dist.all_reduce(a, group=g)
    assert torch.equal(a, torch.ones(3))
    dist.destroy_process_group()
    del g
    gc.collect()
    assert not loom.torch._c10d.have_world()
    init()
    dist.all_reduce(a)
    dist.destroy_process_group()


def main():
    return pytap.run(TESTS, why_not)


if __name__ == "__main__":
    sys.exit(main())
