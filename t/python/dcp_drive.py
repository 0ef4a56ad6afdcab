#!/usr/bin/env python3
"""t/python/dcp_drive.py: torch.distributed.checkpoint through
loom.torch.StorageWriter/StorageReader, for t5103. Run by srun
--loom-env=torch on any rank count (gloo).

    dcp_drive.py save DIR [--steps N] [--async] [--per-save]
                                                  N saves (values step-dependent);
                                                  --per-save: a new writer for each,
                                                  never closed (README's pattern)
    dcp_drive.py load DIR [--step S]              load and check every value

The state dict: a replicated tensor "w" (float32), "h" (bfloat16), an
int64 "i", a ShardedTensor "s" (rows split over the ranks: resharded on
load), and a Python value "meta". Values are functions of the saved
step, so a load checks which step it got. Each rank prints
"rank R/N: saved step S" or "rank R/N: loaded step S ok" (or what is
wrong), and rank 0 "PASS: ...".
"""
import argparse
import sys

import loom.torch
import torch
import torch.distributed as dist

ROWS, COLS = 12, 5


def spec(size):
    from torch.distributed._shard.sharding_spec import ChunkShardingSpec
    return ChunkShardingSpec(dim=0, placements=["rank:%d/cpu" % r for r in range(size)])


def expected(step):
    g = torch.arange(ROWS * COLS, dtype=torch.float32).reshape(ROWS, COLS) + 1000 * step
    return {"w": torch.arange(7, dtype=torch.float32) * (step + 1),
            "h": torch.linspace(0, 1, 9, dtype=torch.bfloat16) + step,
            "i": torch.tensor([step, -step, 1 << 40], dtype=torch.int64),
            "s": g, "meta": {"step": step, "name": "dcp_drive"}}


def state(step, size, rank, fill):
    from torch.distributed._shard import sharded_tensor
    e = expected(step)
    s = sharded_tensor.zeros(spec(size), ROWS, COLS)
    for sh in s.local_shards():
        o = sh.metadata.shard_offsets
        n = sh.metadata.shard_sizes
        if fill:
            sh.tensor.copy_(e["s"][o[0]:o[0] + n[0], o[1]:o[1] + n[1]])
    if not fill:
        return {"w": torch.zeros(7), "h": torch.zeros(9, dtype=torch.bfloat16),
                "i": torch.zeros(3, dtype=torch.int64), "s": s, "meta": None}
    return {"w": e["w"], "h": e["h"], "i": e["i"], "s": s, "meta": e["meta"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["save", "load"])
    ap.add_argument("dir")
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--step", type=int)
    ap.add_argument("--async", dest="async_save", action="store_true")
    ap.add_argument("--per-save", action="store_true")
    a = ap.parse_args()
    dist.init_process_group("gloo", init_method="env://")
    rank, size = dist.get_rank(), dist.get_world_size()
    D = loom.torch.dcp()
    bad = 0
    if a.mode == "save":
        w = loom.torch.StorageWriter(a.dir, async_save=a.async_save)
        for k in range(a.steps):
            if a.per_save and k:
                w = loom.torch.StorageWriter(a.dir, async_save=a.async_save)
            D.save_state_dict(state(k, size, rank, True), w)
            print("rank %d/%d: saved step %d" % (rank, size, w.saved), flush=True)
        if a.per_save:  # the exit closes the shared handle and world
            from loom import _dcp
            print("rank %d/%d: worlds %d handles %d" % (rank, size, _dcp._COUNTS["worlds"],
                                                       _dcp._COUNTS["handles"]), flush=True)
        else:
            w.close()
    else:
        r = loom.torch.StorageReader(a.dir, step=a.step)
        sd = state(0, size, rank, False)
        D.load_state_dict(sd, r)
        e = expected(r.step)
        for k in ("w", "h", "i"):
            if not torch.equal(sd[k], e[k]):
                print("rank %d: %s is %s, want %s" % (rank, k, sd[k], e[k]), flush=True)
                bad += 1
        for sh in sd["s"].local_shards():
            o, n = sh.metadata.shard_offsets, sh.metadata.shard_sizes
            if not torch.equal(sh.tensor, e["s"][o[0]:o[0] + n[0], o[1]:o[1] + n[1]]):
                print("rank %d: shard at %s wrong" % (rank, o), flush=True)
                bad += 1
        if sd["meta"] != e["meta"]:
            print("rank %d: meta is %r, want %r" % (rank, sd["meta"], e["meta"]), flush=True)
            bad += 1
        print("rank %d/%d: loaded step %d %s" % (rank, size, r.step, "ok" if not bad else
                                                   "WRONG"), flush=True)
        r.close()
    t = torch.tensor([bad])
    dist.all_reduce(t)
    if rank == 0 and not t.item():
        print("PASS: dcp_drive %s on %d ranks" % (a.mode, size), flush=True)
    dist.destroy_process_group()
    return 1 if t.item() else 0


if __name__ == "__main__":
    sys.exit(main())
