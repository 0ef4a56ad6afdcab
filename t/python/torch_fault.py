"""A rank lost during a DDP step on "loom": in its third step, before
backward, the last rank SIGKILLs itself (kill) or stops for three
timeouts (hang); every other rank must raise from the step (the gradient
allreduce's Work) within the timeout given to init_process_group (with
a second of slack for hang, whose verdict comes at the deadline), naming
the operation and loom's verdict. Each surviving rank prints "rank R
raised after S s (timeout T s): MESSAGE" and exits 0 when in time, 1
when late, 2 when nothing raised.  Arguments: TIMEOUT kill|hang."""
import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import loom.torch  # noqa: F401  registers "loom"

TIMEOUT = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
MODE = sys.argv[2] if len(sys.argv) > 2 else "kill"


def main():
    dist.init_process_group("loom", init_method="env://",
                            timeout=datetime.timedelta(seconds=TIMEOUT))
    rank, size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    m = DDP(torch.nn.Linear(32, 32))
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for step in range(1000):
        loss = m(torch.randn(8, 32)).square().sum()
        if rank == size - 1 and step == 2:
            if MODE == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(3 * TIMEOUT)
            os._exit(0)
        t0 = time.time()
        try:
            opt.zero_grad()
            loss.backward()
            opt.step()
        except RuntimeError as e:
            took = time.time() - t0
            msg = str(e).strip().splitlines()[0]
            print("rank %d raised after %.1f s (timeout %.0f s): %s" % (rank, took, TIMEOUT, msg),
                  flush=True)
            os._exit(0 if took < TIMEOUT + (1 if MODE == "hang" else 0) else 1)
    print("rank %d: nothing raised" % rank, flush=True)
    return 2


if __name__ == "__main__":
    sys.exit(main())
