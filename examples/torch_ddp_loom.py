"""examples/torch_ddp_loom.py: PyTorch DDP on loom's collectives.

The one-line switch from gloo: `import loom.torch`, then
init_process_group("loom") instead of "gloo". Launched by srun with
loom.so (which writes RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and
LOOM_JOB_SECRET) or by torchrun (export the same random LOOM_JOB_SECRET
to every rank). CPU tensors. A small MLP on synthetic data; every rank
prints its loss now and then, rank 0 the step time and a digest of the
final parameters (the same on every rank, and the same as on gloo up to
the order of the sums). --backend gloo runs the same on gloo."""
import argparse
import hashlib
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import loom.torch  # noqa: F401  registers the backend "loom"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="loom", help="loom (default) or gloo")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--width", type=int, default=512, help="hidden layer width")
    ap.add_argument("--log-every", type=int, default=10)
    a = ap.parse_args()

    dist.init_process_group(a.backend, init_method="env://")
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(
        torch.nn.Linear(256, a.width), torch.nn.ReLU(),
        torch.nn.Linear(a.width, a.width), torch.nn.ReLU(),
        torch.nn.Linear(a.width, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data = torch.Generator().manual_seed(1000 + rank)   # each rank its own shard
    t0 = time.time()
    for step in range(1, a.steps + 1):
        x = torch.randn(64, 256, generator=data)
        y = torch.randint(0, 10, (64,), generator=data)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()            # gradients averaged over the ranks by "loom"
        opt.step()
        if step % a.log_every == 0:
            print("rank %d/%d step %d loss %.4f" % (rank, size, step, loss.item()), flush=True)
    took = time.time() - t0
    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    if rank == 0:
        print("%s: %d ranks, %d steps, %.1f ms a step" % (a.backend, size, a.steps,
                                                         1000 * took / a.steps))
        print("final parameters: sha256 %s" % hashlib.sha256(params.numpy().tobytes()).hexdigest(),
              flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
