#!/usr/bin/env python3
"""examples/torch_ddp_gpu.py: PyTorch DDP on NCCL, one GPU per task, with
torch's everyday device choice, made preemption-safe by loom.torch.Resumable.

    sbatch --loom-ckpt=/scratch/$USER/ckpt/%j --loom-ckpt-signal=USR1@120 \\
           torch_ddp_gpu.sbatch [--steps N] [--batch B] [--hidden H]

Run under srun --loom-affinity=closest --loom-env=torch (the sbatch
script does): loom.so binds each task to the CPUs near its GPU and lists
the node's GPUs in CUDA_VISIBLE_DEVICES with the task's own at position
LOCAL_RANK (LOOM_LOCAL_DEVICE says the same), so

    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))

picks the task's closest GPU and NCCL sees the node's GPUs as without
loom. (With several GPUs a task, the task's own are listed alone: use
LOOM_LOCAL_DEVICE, which is right in every case.) The rendezvous is
env:// from what loom.so writes (RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT). The loop is loom.torch's three lines; should_stop() agrees
over libloom's CPU world, so a step costs no device synchronisation for
it. Without a GPU it says so and exits 1; examples/torch_ddp_requeue.py
is the CPU (gloo) version.
"""

import loom

# First, before the slow import of torch: from here on a stop signal only
# sets a flag (SIGUSR1 would otherwise kill the process); Resumable sees it.
stop = loom.StopSignal()

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

PROG = "torch_ddp_gpu.py"


def positive(kind):
    def parse(s):
        try:
            v = kind(s)
        except ValueError:
            v = 0
        if not v > 0:
            raise argparse.ArgumentTypeError("'%s' is not a positive %s" %
                                             (s, "integer" if kind is int else "number"))
        return v
    return parse


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=positive(int), default=1000,
                    help="training steps (default 1000)")
    ap.add_argument("--batch", type=positive(int), default=256,
                    help="samples a step on each GPU (default 256)")
    ap.add_argument("--hidden", type=positive(int), default=1024,
                    help="width of the model's hidden layers (default 1024)")
    ap.add_argument("--lr", type=positive(float), default=0.01,
                    help="learning rate (default 0.01)")
    ap.add_argument("--log-every", type=positive(int), default=50,
                    help="print the loss every N steps (a device synchronisation; default 50)")
    return ap.parse_args(argv)


def fail(msg):
    sys.stderr.write("%s: %s\n" % (PROG, msg))
    return 1


def main():
    a = parse_args()
    try:
        import torch
        import torch.distributed as dist
        import loom.torch
        from torch.nn.parallel import DistributedDataParallel as DDP
    except ImportError as e:
        return fail("PyTorch is needed (%s)" % e)
    if not torch.cuda.is_available():
        return fail("CUDA is not available (torch %s, CUDA_VISIBLE_DEVICES=%s): this example "
                    "needs a GPU for each task (sbatch --gpus-per-node=N --ntasks-per-node=N, "
                    "srun --loom-affinity=closest); examples/torch_ddp_requeue.py runs on CPUs"
                    % (torch.__version__, os.environ.get("CUDA_VISIBLE_DEVICES", "unset")))
    missing = [v for v in ("LOCAL_RANK", "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
               if v not in os.environ]
    if missing:
        return fail("%s unset: run it under srun with loom.so (--loom-env=torch) or torchrun"
                    % ", ".join(missing))
    local = int(os.environ["LOCAL_RANK"])
    if local >= torch.cuda.device_count():
        return fail("LOCAL_RANK %d but this task sees %d GPU(s) (CUDA_VISIBLE_DEVICES=%s): "
                    "ask for one GPU per task and srun --loom-affinity=closest"
                    % (local, torch.cuda.device_count(),
                       os.environ.get("CUDA_VISIBLE_DEVICES", "unset")))

    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", init_method="env://")
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    h = a.hidden
    model = DDP(torch.nn.Sequential(torch.nn.Linear(h, h), torch.nn.GELU(),
                                    torch.nn.Linear(h, h), torch.nn.GELU(),
                                    torch.nn.Linear(h, 1)).to(dev), device_ids=[local])
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.steps)
    run = loom.torch.Resumable(model=model, optimizer=opt, scheduler=sched)
    first = run.restore()
    if rank == 0:
        print("%d ranks, rank 0 on %s (%s); %s" % (
            size, dev, torch.cuda.get_device_name(dev),
            "resuming after step %d from %s" % (first - 1, run.path) if first else
            "starting"), flush=True)

    g = torch.Generator(device=dev)
    for step in range(first, a.steps):
        g.manual_seed(step * 1000 + rank)   # a step's data: a function of step and rank
        x = torch.randn(a.batch, h, device=dev, generator=g)
        y = x.mean(dim=1, keepdim=True).sin()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if rank == 0 and (step + 1) % a.log_every == 0:
            print("step %d/%d loss %.6f" % (step + 1, a.steps, loss.item()), flush=True)
        if step + 1 < a.steps and run.should_stop(step):
            if rank == 0:
                print("stop signal: step %d saved to %s, requeue requested" % (step, run.path)
                      if run.path else "stop signal at step %d: exiting without a checkpoint "
                      "(no --loom-ckpt)" % step, flush=True)
            run.close()
            dist.destroy_process_group()
            return 0 if run.path else 1

    if rank == 0:
        print("PASS: %d steps on %d GPUs" % (a.steps, size), flush=True)
    run.close()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
