#!/usr/bin/env python3
"""bench/ddp-step.py: one DDP training step on CPUs, timed on a
torch.distributed backend ("loom" through loom.torch, or "gloo"), under
srun with loom.so (env=torch: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).

The model is an MLP (--width, --hidden, --layers; the defaults make about
25M float32 parameters, 100 MB of gradients a step); each step is
forward, backward and an SGD step on a batch of --batch random rows;
--bucket-view makes the gradients views of DDP's allreduce buckets
(gradient_as_bucket_view=True), which drops DDP's copy of each
gradient into its bucket and back.
Steps are timed twice, interleaved step by step after --warmup untimed
ones: with DDP's gradient allreduce, and under DDP's no_sync() (the same
step without it). A time is the slowest rank's mean over --steps; comm is the share of the step that the allreduce adds
((step - nosync) / step), what the backend costs a training step.

Rank 0 prints a "#" header and one row:
  backend ranks params batch step_ms nosync_ms comm_pct"""
import argparse
import datetime
import os
import sys
import time


def main():
    p = argparse.ArgumentParser(description="a DDP training step on CPUs, timed")
    p.add_argument("--backend", default="gloo", choices=("gloo", "loom"))
    p.add_argument("--width", type=int, default=1024, help="input and output features")
    p.add_argument("--hidden", type=int, default=4096, help="hidden features")
    p.add_argument("--layers", type=int, default=3, help="linear layers (>= 2)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--bucket-view", action="store_true",
                   help="DDP(gradient_as_bucket_view=True): gradients are views of the "
                        "allreduce buckets, no copy into and out of them")
    a = p.parse_args()
    if a.layers < 2 or a.steps < 1 or a.warmup < 0 or min(a.width, a.hidden, a.batch) < 1:
        p.error("--layers >= 2, --steps >= 1, --warmup >= 0, sizes >= 1")
    for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        if v not in os.environ:
            sys.stderr.write("ddp-step: %s is not set: run under srun with loom.so (env=torch)\n" % v)
            return 2
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    if a.backend == "loom":
        import loom.torch  # noqa: F401  registers "loom"
    torch.set_num_threads(a.threads)
    dist.init_process_group(a.backend, init_method="env://",
                            timeout=datetime.timedelta(seconds=600))
    me, n = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    dims = [a.width] + [a.hidden] * (a.layers - 1) + [a.width]
    mods = []
    for i in range(a.layers):
        mods.append(torch.nn.Linear(dims[i], dims[i + 1]))
        if i < a.layers - 1:
            mods.append(torch.nn.ReLU())
    model = DDP(torch.nn.Sequential(*mods), gradient_as_bucket_view=a.bucket_view)
    nparams = sum(q.numel() for q in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(a.batch, a.width)
    y = torch.randn(a.batch, a.width)

    def step(sync):
        t0 = time.perf_counter()
        opt.zero_grad()
        if sync:
            torch.nn.functional.mse_loss(model(x), y).backward()
        else:
            with model.no_sync():
                torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        return time.perf_counter() - t0

    for _ in range(a.warmup):
        step(True)
        step(False)
    dist.barrier()
    t = torch.zeros(2, dtype=torch.float64)
    for _ in range(a.steps):
        t[0] += step(True)
        dist.barrier()
        t[1] += step(False)
        dist.barrier()
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    sync, nosync = t[0].item() / a.steps, t[1].item() / a.steps
    if me == 0:
        print("# ddp-step torch %s: backend %s, %d ranks, MLP %s, %d parameters, batch %d, "
              "%d steps after %d warm-up, %d thread(s) a rank, bucket view %s"
              % (torch.__version__, a.backend, n, "-".join(map(str, dims)), nparams, a.batch,
                 a.steps, a.warmup, a.threads, "on" if a.bucket_view else "off"))
        print("# backend ranks params batch step_ms nosync_ms comm_pct")
        print("%s %d %d %d %.3f %.3f %.1f" % (a.backend, n, nparams, a.batch, 1e3 * sync, 1e3 * nosync,
                                             100.0 * max(sync - nosync, 0.0) / sync), flush=True)
    # every rank leaves together, then at once: gloo's teardown at
    # interpreter exit was seen to hang a rank when rank 0 (the TCPStore's
    # server) had gone; the figures are printed, so nothing is lost by
    # skipping it. loom's group is destroyed first, while every rank is
    # there: it says goodbye to its peers, which would otherwise log each
    # other's exit as a lost rank
    dist.barrier()
    if a.backend == "loom":
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
