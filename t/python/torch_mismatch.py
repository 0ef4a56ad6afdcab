"""Mismatched collectives on "loom" under LOOM_CHECK=1: rank 0 calls
allreduce while the others call broadcast; every rank must raise,
naming its own operation and LOOM_ERR_MISMATCH. Each rank prints
"rank R raised: MESSAGE", or "rank R: no error" (exit 1)."""
import datetime
import sys

import torch
import torch.distributed as dist

import loom.torch  # noqa: F401  registers "loom"


def main():
    dist.init_process_group("loom", init_method="env://", timeout=datetime.timedelta(seconds=30))
    rank = dist.get_rank()
    t = torch.ones(4)
    try:
        if rank == 0:
            dist.all_reduce(t)
        else:
            dist.broadcast(t, 0)
    except RuntimeError as e:
        print("rank %d raised: %s" % (rank, str(e).strip().splitlines()[0]), flush=True)
        return 0
    print("rank %d: no error" % rank, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
