"""DDP on "loom" against DDP on gloo in one job: two copies of one MLP
(same seed) train the same steps on rank-dependent data, one wrapped in
DDP over the default group ("loom"), one over a gloo group of every rank;
at the end every rank prints the largest difference between their
parameters, which must be at most 1e-6 (the sums' order may differ).
"""
import argparse
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import loom.torch  # noqa: F401  registers "loom"


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    dist.init_process_group("loom", init_method="env://")
    rank, size = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    # small buckets: several allreduces a step, overlapping backward
    runs = {"loom": DDP(model(), bucket_cap_mb=0.1),
            "gloo": DDP(model(), process_group=gloo, bucket_cap_mb=0.1)}
    took = {}
    for name, m in runs.items():
        opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        g = torch.Generator().manual_seed(rank)
        t0 = time.time()
        for _ in range(a.steps):
            x = torch.randn(32, 64, generator=g)
            y = torch.randint(0, 10, (32,), generator=g)
            loss = torch.nn.functional.cross_entropy(m(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        took[name] = time.time() - t0
    diff = max(float((p - q).abs().max()) for p, q in
               zip(runs["loom"].parameters(), runs["gloo"].parameters()))
    # every rank holds the same parameters on each backend
    first = torch.cat([p.detach().flatten() for p in runs["loom"].parameters()])
    ref = first.clone()
    dist.broadcast(ref, 0)
    spread = float((first - ref).abs().max())
    print("ddp rank %d/%d: %d steps, max |loom - gloo| %.3g, max |rank - rank 0| %.3g, "
          "loom %.2f s, gloo %.2f s" % (rank, size, a.steps, diff, spread, took["loom"],
                                       took["gloo"]), flush=True)
    ok = diff <= 1e-6 and spread == 0.0
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
