#!/usr/bin/env python3
"""examples/torch_ddp_requeue.py: PyTorch DDP over gloo that survives
preemption and time limits with loom.torch.Resumable: when a stop signal
comes, the ranks agree on a step, the state is saved durably, loom.so
requeues the job, and the requeued run resumes.

    sbatch -p low --loom-ckpt=/scratch/$USER/ckpt/%j --loom-ckpt-signal=USR1@120 \\
           torch_ddp_requeue.sbatch [--steps N] [--step-ms MS]

It reads only what loom.so writes (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT for env://, LOCAL_RANK; LOOM_CKPT_DIR from --loom-ckpt). The
loop is the three-line pattern:

    run = loom.torch.Resumable(model=model, optimizer=opt)
    for step in range(run.restore(), steps):
        train_step(step)
        if run.should_stop(step): break

On SIGTERM (preemption), LOOM_CKPT_SIGNAL (the time limit near) or
SIGUSR1/2 (Slurm's --signal) should_stop() is True on every rank at the
same step; model, optimizer and every rank's RNG states are then in
LOOM_CKPT_DIR/resumable/step-N, and rank 0 has asked for the requeue.
The data of each step depend only on the step and the rank, so a run that
was stopped and resumed ends with the parameters of an uninterrupted run;
rank 0 prints their SHA-256 ("final parameters: sha256 ...").
"""

import loom

# First, before the slow import of torch: from here on a stop signal only
# sets a flag (SIGUSR1 would otherwise kill the process); Resumable sees it.
stop = loom.StopSignal()

import argparse  # noqa: E402
import hashlib  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import loom.torch  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


def batch(step, rank):
    """The inputs and targets of a step: a function of step and rank only."""
    g = torch.Generator().manual_seed(step * 1000 + rank)
    x = torch.randn(16, 32, generator=g)
    return x, x.sum(dim=1, keepdim=True).sin()


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
    run = loom.torch.Resumable(model=model, optimizer=opt)
    first = run.restore()
    if rank == 0 and first:
        print("resuming after step %d from %s (restart %s)" % (
            first - 1, run.path, os.environ.get("SLURM_RESTART_COUNT", "0")), flush=True)

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
        if step + 1 < a.steps and run.should_stop(step):
            if rank == 0:
                print("stop signal: step %d saved to %s, requeue requested" % (step, run.path)
                      if run.path else "stop signal at step %d: exiting without a checkpoint "
                      "(no LOOM_CKPT_DIR: --loom-ckpt)" % step, flush=True)
            run.close()
            dist.destroy_process_group()
            return 0 if run.path else 1

    if rank == 0:
        print("final parameters: sha256 %s" % digest(model), flush=True)
        print("PASS: %d steps on %d ranks" % (a.steps, size), flush=True)
    run.close()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
