#!/usr/bin/env python3
"""examples/numpy_allreduce.py: libloom's collectives and checkpoint from
Python (the package loom) on numpy arrays, each checked against the value
computed here from the rank and size alone.

    srun -N2 -n4 python3 numpy_allreduce.py [--ckpt DIR] [--n N]

Every rank prints one line of results; rank 0 ends with "PASS: ..." (exit
0) or "FAIL: ..." (exit 1). With --ckpt DIR (default $LOOM_CKPT_DIR, none:
skipped) the ranks save a sharded tensor, overwrite it, restore it and
check it.
"""
import argparse
import os
import sys

import numpy as np

import loom


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000, help="elements per array (default 1000)")
    ap.add_argument("--ckpt", default=os.environ.get("LOOM_CKPT_DIR"),
                    help="checkpoint directory (default $LOOM_CKPT_DIR)")
    a = ap.parse_args()
    world = loom.init()
    r, p, n = world.rank, world.size, a.n
    bad = []

    def expect(what, got, want):
        if not np.array_equal(got, want):
            bad.append(what)

    base = np.arange(n, dtype=np.float64)
    for op, want in (("sum", base * (p * (p + 1) // 2)), ("max", base * p), ("min", base),
                     ("avg", base * (p + 1) / 2)):
        x = base * (r + 1)
        world.allreduce(x, op=op)
        expect("allreduce " + op, x, want)
    ranks = np.array([r + 1], dtype=np.int64)
    world.allreduce(ranks)
    f32 = np.full(n, r + 1, dtype=np.float32)
    world.allreduce(f32, op="prod")
    expect("allreduce prod float32", f32, np.full(n, np.prod(np.arange(1, p + 1)), np.float32))
    b = np.full(n, r, dtype=np.int32)
    world.broadcast(b, root=p - 1)
    expect("broadcast", b, np.full(n, p - 1, np.int32))
    g = np.zeros((p, 3), dtype=np.int64)
    g[r] = [r, 10 * r, 100 * r]
    world.allgather(g)
    expect("allgather", g, np.array([[i, 10 * i, 100 * i] for i in range(p)]))
    world.barrier()
    line = "rank %d/%d local %d: allreduce sum of rank+1 %d, allgather %s" % (
        r, p, world.local_rank, ranks[0], g[:, 0].tolist())

    if a.ckpt:
        shard = np.arange(r * n, (r + 1) * n, dtype=np.float32).reshape(1, n)
        with loom.Checkpoint(world, a.ckpt) as ck:
            ck.tensor("shards", shard, global_shape=(p, n), offset=(r, 0))
            ck.save(7)
            shard[:] = -1
            step = ck.restore()
        expect("checkpoint restore", shard, np.arange(r * n, (r + 1) * n).reshape(1, n))
        if step != 7:
            bad.append("restore gave step %r, not 7" % step)
        line += ", checkpoint step %s restored" % step
    print(line, flush=True)

    fails = np.array([len(bad)], dtype=np.int32)
    world.allreduce(fails)
    if bad:
        print("rank %d: FAIL: %s" % (r, ", ".join(bad)), flush=True)
    if r == 0:
        print("%s: numpy_allreduce, %d ranks, %d failed checks" % (
            "PASS" if fails[0] == 0 else "FAIL", p, fails[0]), flush=True)
    world.close()
    return 0 if fails[0] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
