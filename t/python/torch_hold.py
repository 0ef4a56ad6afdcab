"""One rank held before a DDP step on "loom", for loom-doctor: every rank
runs STEPS steps of DDP; before step HOLD_STEP the last rank writes
DIR/held and waits until DIR/release exists, while the others wait in the
step's gradient allreduce (the flight recorder, LOOM_FLIGHT_DIR, shows
them there). Each rank prints "rank R/N: STEPS steps" at the end.
Arguments: DIR [STEPS [HOLD_STEP]]."""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import loom.torch  # noqa: F401  registers "loom"


def main():
    d = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    hold = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    dist.init_process_group("loom", init_method="env://",
                            timeout=datetime.timedelta(seconds=300))
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    m = DDP(torch.nn.Linear(32, 32))
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for step in range(steps):
        if rank == size - 1 and step == hold:
            open(os.path.join(d, "held"), "w").close()
            while not os.path.exists(os.path.join(d, "release")):
                time.sleep(0.1)
        opt.zero_grad()
        m(torch.randn(8, 32)).square().sum().backward()
        opt.step()
    dist.barrier()
    print("rank %d/%d: %d steps" % (rank, size, steps), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
