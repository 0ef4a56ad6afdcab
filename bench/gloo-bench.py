#!/usr/bin/python3
"""bench/gloo-bench.py: PyTorch's gloo collectives (torch.distributed) on
loom-bench's shapes, printing loom-bench's nccl-tests rows, so that
bench/compare can put them side by side.

    srun -N2 -n4 /usr/bin/python3 bench/gloo-bench.py -o allreduce -b 8 -e 64M -f 2

Rendezvous is env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, as loom.so
writes them). Sizes, counts, time (mean over -n iterations, slowest rank),
best, algbw and busbw mean what they mean in loom-bench (bench/README.md).
allreduce, reduce and broadcast run in place, as torch users call them
(torch has no out-of-place form; loom-bench's calls are out of place).
A collective gloo lacks prints one "# not supported by gloo" line and exits 3.
--backend loom runs the same on the process group "loom" (loom.torch), for
torch-through-loom figures beside gloo's.
torch is optional: without it this prints "# not installed" and exits 4.
"""
import argparse
import math
import os
import sys
import time

COLLS = ("allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall", "reduce")
DTYPES = {"int8": 1, "int32": 4, "int64": 8, "float16": 2, "half": 2, "bfloat16": 2,
          "bf16": 2, "float32": 4, "float": 4, "float64": 8, "double": 8}
CANON = {"half": "float16", "bf16": "bfloat16", "float": "float32", "double": "float64"}


def parse_size(s):
    m = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
    t = s.rstrip("bB")
    mult = 1
    if t and t[-1].lower() in m:
        mult = m[t[-1].lower()]
        t = t[:-1]
    try:
        v = float(t) * mult
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a size (a number with an optional K, M or G suffix)" % s)
    if v < 0:
        raise argparse.ArgumentTypeError("'%s' is not a size" % s)
    return int(v)


def bus_factor(coll, n):
    # the same factors as loom-bench (nccl-tests')
    if coll == "allreduce":
        return 2.0 * (n - 1) / n
    if coll in ("allgather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def shape_of(coll, nbytes, esize, n):
    """(count, nsend, nrecv, bytes, total) as loom-bench's shape_of"""
    per = nbytes // esize
    blk = per // n
    if coll == "allgather":
        count, ns, nr = blk, blk, blk * n
    elif coll == "reduce_scatter":
        count, ns, nr = blk, blk * n, blk
    elif coll == "alltoall":
        count, ns, nr = blk, blk * n, blk * n
    else:
        count, ns, nr = per, per, per
    total = max(ns, nr)
    return count, ns, nr, total * esize, total


def sizes(a):
    b = a.minbytes
    while True:
        yield b
        nxt = b + a.stepbytes if a.stepbytes else int(math.ceil(b * a.stepfactor))
        if nxt <= b:
            nxt = b + 1
        if b >= a.maxbytes:
            return
        b = min(nxt, a.maxbytes)


def main():
    p = argparse.ArgumentParser(description="gloo (torch.distributed) in loom-bench's format")
    p.add_argument("-o", "--op-name", dest="coll", default="allreduce", choices=COLLS)
    p.add_argument("-b", "--minbytes", type=parse_size, default=8)
    p.add_argument("-e", "--maxbytes", type=parse_size, default=64 * 1024 * 1024)
    p.add_argument("-f", "--stepfactor", type=float, default=2.0)
    p.add_argument("-i", "--stepbytes", type=parse_size, default=0)
    p.add_argument("-d", "--datatype", default="float32", choices=sorted(DTYPES))
    p.add_argument("--op", default="sum", choices=("sum", "prod", "min", "max", "avg"))
    p.add_argument("-r", "--root", type=int, default=0)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup", type=int, default=5)
    p.add_argument("--backend", default="gloo", choices=("gloo", "loom"))
    a = p.parse_args()
    if a.minbytes > a.maxbytes:
        p.error("-b is larger than -e")
    if a.iters < 1 or a.warmup < 0 or a.stepfactor <= 1 and not a.stepbytes:
        p.error("-n must be >= 1, -w >= 0, -f > 1")
    dname = CANON.get(a.datatype, a.datatype)

    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print("# gloo-bench: not installed (python3-torch: %s)" % e)
        return 4
    if not dist.is_available() or not dist.is_gloo_available():
        print("# gloo-bench: not installed (this torch has no gloo backend)")
        return 4
    for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        if v not in os.environ:
            sys.stderr.write("gloo-bench: %s is not set: run under srun with loom.so "
                             "(env=torch) or set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT\n" % v)
            return 2
    if a.backend == "loom":
        import loom.torch  # noqa: F401  registers "loom"
    torch.set_num_threads(1)
    dist.init_process_group(a.backend, init_method="env://")
    me, n = dist.get_rank(), dist.get_world_size()
    if a.root < 0 or a.root >= n:
        sys.stderr.write("gloo-bench: -r '%d': not a rank of the %d-rank world\n" % (a.root, n))
        return 2
    tt = getattr(torch, dname)
    esize = DTYPES[dname]
    red = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
           "max": dist.ReduceOp.MAX, "avg": dist.ReduceOp.SUM}[a.op]
    reduction = a.coll in ("allreduce", "reduce_scatter", "reduce")
    rooted = a.coll in ("broadcast", "reduce")
    maxel = a.maxbytes // esize + n
    send = torch.zeros(maxel, dtype=tt)
    recv = torch.zeros(maxel, dtype=tt)

    def one(count, ns, nr):
        s, r = send[:ns], recv[:nr]
        if a.coll == "allreduce":
            dist.all_reduce(r, op=red)   # in place, as torch users call it
            if a.op == "avg":
                r.div_(n)
        elif a.coll == "allgather":
            dist.all_gather(list(r.split(count)) if count else [r[:0]] * n, s)
        elif a.coll == "reduce_scatter":
            dist.reduce_scatter(r, list(s.split(count)) if count else [s[:0]] * n, op=red)
        elif a.coll == "broadcast":
            dist.broadcast(r, a.root)
        elif a.coll == "alltoall":
            dist.all_to_all_single(r, s)
        elif a.coll == "reduce":
            dist.reduce(r, a.root, op=red)

    # gloo in torch 1.13 lacks some collectives (reduce_scatter): say so once
    try:
        c0 = shape_of(a.coll, max(a.minbytes, esize * n), esize, n)
        one(c0[0], c0[1], c0[2])
    except (RuntimeError, NotImplementedError, AttributeError) as e:
        msg = str(e).lower()
        if "support" not in msg and "implemented" not in msg and not isinstance(e, AttributeError):
            raise   # a real failure (a peer lost, a timeout), not a missing collective
        if me == 0:
            print("# gloo-bench: %s not supported by %s (torch %s): %s"
                  % (a.coll, a.backend, torch.__version__, str(e).splitlines()[0][:120]))
        dist.destroy_process_group()
        return 3

    if me == 0:
        hdr = "# gloo-bench torch %s: %s, %d ranks, backend %s, dtype %s" % (
            torch.__version__, a.coll, n, a.backend, dname)
        if reduction:
            hdr += ", op " + a.op
        if rooted:
            hdr += ", root %d" % a.root
        print(hdr + ", iters %d, warmup %d" % (a.iters, a.warmup))
        if os.environ.get("SLURM_STEP_TASKS_PER_NODE"):
            print("# tasks per node: %s" % os.environ["SLURM_STEP_TASKS_PER_NODE"])
        print("# cpus rank 0 may run on: %d" % len(os.sched_getaffinity(0)))
        print("# busbw = algbw * %s" % ("2(n-1)/n" if a.coll == "allreduce" else
                                       "1" if rooted else "(n-1)/n"))
        print("#%11s %12s %9s %6s %5s %11s %11s %9s %9s %7s" % (
            "size", "count", "type", "redop", "root", "time", "best", "algbw", "busbw", "#wrong"))
        print("#%11s %12s %9s %6s %5s %11s %11s %9s %9s %7s" % (
            "(B)", "(elements)", "", "", "", "(us)", "(us)", "(GB/s)", "(GB/s)", ""))
        sys.stdout.flush()
    bw_sum, rows = 0.0, 0
    tmax = torch.zeros(2, dtype=torch.float64)
    first = True
    for nbytes in sizes(a):
        count, ns, nr, sbytes, total = shape_of(a.coll, nbytes, esize, n)
        if count == 0 and a.coll in ("allgather", "reduce_scatter", "alltoall"):
            continue    # fewer elements than ranks: gloo dies of SIGFPE on empty blocks
        # the first size ten times the warm-up, as loom-bench does for
        # every peer: the first row otherwise paid the cold start
        for _ in range(a.warmup * (10 if first else 1)):
            one(count, ns, nr)
        first = False
        dist.barrier()
        # the mean with no clock inside the loop, then the best of a few
        # calls timed one by one (as loom-bench does)
        t0 = time.perf_counter()
        for _ in range(a.iters):
            one(count, ns, nr)
        mean = (time.perf_counter() - t0) / a.iters
        best = 1e30
        for _ in range(min(16, max(1, a.iters // 4 if a.iters >= 4 else a.iters))):
            t1 = time.perf_counter()
            one(count, ns, nr)
            best = min(best, time.perf_counter() - t1)
        tmax[0], tmax[1] = mean, best
        dist.all_reduce(tmax, op=dist.ReduceOp.MAX)   # the slowest rank, as loom-bench
        mean, best = float(tmax[0]), float(tmax[1])
        algbw = sbytes / mean / 1e9 if mean > 0 else 0.0
        busbw = algbw * bus_factor(a.coll, n)
        bw_sum += busbw
        rows += 1
        if me == 0:
            print("%12d %12d %9s %6s %5d %11.2f %11.2f %9.3f %9.3f %7s" % (
                sbytes, total, dname, a.op if reduction else "none", a.root if rooted else -1,
                mean * 1e6, best * 1e6, algbw, busbw, "N/A"))
            sys.stdout.flush()
    if me == 0:
        print("# Avg bus bandwidth    : %.3f GB/s" % (bw_sum / rows if rows else 0))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
