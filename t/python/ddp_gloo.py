"""A plain PyTorch DDP program over gloo, as users write it: it reads only
RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (env://), nothing of loom.
Two SGD steps of a linear model on rank-dependent data; every rank prints
its parameters' sum, which DDP's gradient averaging makes identical, and
the expected all_reduce of the ranks."""
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo", init_method="env://")
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        x = torch.full((4, 8), float(rank + step + 1))
        loss = model(x).square().sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    want = size * (size + 1) / 2
    psum = sum(float(p.detach().double().sum()) for p in model.parameters())
    print("ddp rank %d/%d master %s:%s allreduce %g (want %g) params %.9e" % (
        rank, size, os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"],
        float(t), want, psum), flush=True)
    dist.destroy_process_group()
    return 0 if float(t) == want else 1


if __name__ == "__main__":
    sys.exit(main())
