#!/usr/bin/env python3
"""t/gpu/torch_cuda.py: the process group "loom" on CUDA tensors, on a
world of one with one GPU (t/gpu/device-check.sh runs it).

Needs a CUDA build of torch and loom._c10d built against that torch
(LOOM_TORCH_EXTENSION), with libloom built with NCCL (LOOM_LIBRARY) and
the loom package on PYTHONPATH; exits 77 saying "NOT RUN: why" when one
is missing. Prints "ok"/"not ok" per check and "torch_cuda: PASS" when
all pass.

The ordering check: a kernel that sleeps on torch's current (side)
stream before filling the input; an out-of-place all-gather that ran
before it would read the old contents."""
import os
import sys


def not_run(why):
    print("NOT RUN: " + why)
    sys.exit(77)


def main():
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        not_run("no torch: %s" % e)
    if not torch.cuda.is_available():
        not_run("torch %s has no CUDA device (a CPU-only build, or no GPU)" % torch.__version__)
    if not os.environ.get("LOOM_TORCH_EXTENSION"):
        not_run("LOOM_TORCH_EXTENSION is not set: no loom._c10d built against this torch")
    for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOOM_BACKEND"):
        os.environ.pop(v, None)
    os.environ["LOCAL_RANK"] = "0"
    import loom.torch  # noqa: F401  registers "loom"
    torch.cuda.set_device(0)
    dist.init_process_group("loom", store=dist.HashStore(), rank=0, world_size=1)
    pg = dist.group.WORLD
    failed = []

    def check(name, cond):
        print("%s - %s" % ("ok" if cond else "not ok", name))
        if not cond:
            failed.append(name)

    check("the world formed on NCCL (backend %s)" % pg.loom_backend, pg.loom_backend == "nccl")
    check("the group's device is cuda:0 (%d)" % pg.device, pg.device == 0)
    side = torch.cuda.Stream()
    n = 1 << 22
    x = torch.zeros(n, device="cuda")
    out = torch.full((n,), -1.0, device="cuda")
    with torch.cuda.stream(side):
        torch.cuda._sleep(200 * 1000 * 1000)
        x.fill_(3.0)
        dist.all_gather_into_tensor(out, x) if hasattr(dist, "all_gather_into_tensor") \
            else dist._all_gather_base(out, x)
    side.synchronize()
    check("all-gather ordered after torch's current stream", bool((out == 3.0).all()))
    y = torch.arange(12.0, device="cuda").view(3, 4).t()  # non-contiguous
    want = y.clone()
    dist.all_reduce(y)
    check("allreduce of a non-contiguous CUDA tensor", torch.equal(y, want))
    z = torch.full((1000,), 2.0, device="cuda")
    fut = dist.all_reduce(z, async_op=True).get_future()
    got = fut.wait()[0]
    check("a CUDA Work's future", got.is_cuda and bool((got == 2.0).all()))
    b = torch.full((5,), 7, dtype=torch.int64, device="cuda")
    dist.broadcast(b, 0)
    check("broadcast of int64", bool((b == 7).all()))
    try:
        dist.gather(torch.ones(2, device="cuda"), [torch.ones(2, device="cuda")], dst=0)
        check("gather of CUDA tensors raises", False)
    except RuntimeError as e:
        check("gather of CUDA tensors raises naming it", "gather" in str(e) and "cuda:0" in str(e))
    dist.destroy_process_group()
    print("torch_cuda: %s" % ("PASS" if not failed else "FAIL (%s)" % ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
