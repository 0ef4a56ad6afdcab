#!/usr/bin/env python3
"""examples/torch_ddp_requeue.py: PyTorch DDP over gloo that survives
preemption and time limits: it checkpoints with torch.save when a stop
signal comes, loom.so requeues the job, and the requeued run resumes.

    sbatch -p low --loom-ckpt=/scratch/$USER/ckpt/%j --loom-ckpt-signal=USR1@120 \\
           torch_ddp_requeue.sbatch [--steps N] [--step-ms MS]

It reads only what loom.so writes (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT for env://, LOCAL_RANK; LOOM_CKPT_DIR from --loom-ckpt). On
SIGTERM (preemption) or LOOM_CKPT_SIGNAL (the time limit near) the ranks
agree on a step with one all_reduce, rank 0 saves model and optimizer
state into LOOM_CKPT_DIR and calls loom.request_requeue(step), and every
rank exits 0. A run that finds a checkpoint there resumes after its step.
The data of each step depend only on the step and the rank, so a run that
was stopped and resumed ends with the parameters of an uninterrupted run;
rank 0 prints their SHA-256 ("final parameters: sha256 ...").
"""
import loom

# First, before the slow import of torch: from here on a stop signal only
# sets a flag (SIGUSR1 would otherwise kill the process).
stop = loom.StopSignal()

import argparse  # noqa: E402
import hashlib  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

CKPT = "torch_ddp_requeue.pt"


def batch(step, rank):
    """The inputs and targets of a step: a function of step and rank only."""
    g = torch.Generator().manual_seed(step * 1000 + rank)
    x = torch.randn(16, 32, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


def save(path, model, opt, step):
    """torch.save made durable: a temporary file, fsync, rename, fsync dir."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        torch.save({"step": step, "model": model.module.state_dict(),
                    "opt": opt.state_dict()}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def digest(model):
    h = hashlib.sha256()
    for t in model.module.state_dict().values():
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    ap.add_argument("--step-ms", type=float, default=0,
                    help="sleep this long in each step, to stand for real work (default 0)")
    ap.add_argument("--log-every", type=int, default=10)
    a = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    rank, size = dist.get_rank(), dist.get_world_size()
    # find_unused_parameters=True keeps DDP from rebuilding its gradient
    # bucket after the first step: the new layout would change the order of
    # the sums, and a resumed run (one more first step) would then differ
    # from an uninterrupted one in the last bits
    model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(),
                                    torch.nn.Linear(64, 1)), find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    ckdir = os.environ.get("LOOM_CKPT_DIR")
    path = os.path.join(ckdir, CKPT) if ckdir else None
    first = 0
    if path and os.path.exists(path):
        state = torch.load(path)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        first = state["step"] + 1
        if rank == 0:
            print("resuming after step %d from %s (restart %s)" % (
                state["step"], path, os.environ.get("SLURM_RESTART_COUNT", "0")), flush=True)

    for step in range(first, a.steps):
        x, y = batch(step, rank)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if a.step_ms:
            time.sleep(a.step_ms / 1000)
        if rank == 0 and (step + 1) % a.log_every == 0:
            print("step %d/%d loss %.6f" % (step + 1, a.steps, loss.item()), flush=True)
        # every rank stops at the same step: any rank's signal counts
        flag = torch.tensor([1 if stop.requested else 0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() and step + 1 < a.steps:
            if not path:
                if rank == 0:
                    print("stop signal at step %d, but no LOOM_CKPT_DIR (--loom-ckpt): "
                          "exiting without a checkpoint" % step, flush=True)
                dist.destroy_process_group()
                return 1
            if rank == 0:
                save(path, model, opt, step)
                loom.request_requeue(step)
                print("stop signal: step %d saved to %s, requeue requested" % (step, path),
                      flush=True)
            dist.barrier()
            dist.destroy_process_group()
            return 0

    if rank == 0:
        print("final parameters: sha256 %s" % digest(model), flush=True)
        print("PASS: %d steps on %d ranks" % (a.steps, size), flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
