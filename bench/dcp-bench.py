#!/usr/bin/python3
"""bench/dcp-bench.py: torch.distributed.checkpoint saves of one state
through loom.torch.StorageWriter (blocking, and async) and through torch's
own FileSystemWriter, in interleaved rounds, on every rank of the job.

    srun -N2 -n4 --loom-env=torch /usr/bin/python3 bench/dcp-bench.py \\
         --size 1G --tensors 8 --rounds 3 --dir /scratch/dcp-bench

The state: --tensors float32 ShardedTensors (torch 1.13's DCP saves a
plain tensor from the coordinator only; a ShardedTensor from every rank
that holds a shard), --size bytes in all, rows split over the ranks
(ChunkShardingSpec on CPUs, gloo), so each rank saves its share.
Each round runs, one after the other, in an order turned by one each
round: a memcpy of the rank's share into touched memory (the bound for
the async copy), FileSystemWriter (a fresh directory, fsync on, its
default; removed after), loom (blocking), and loom-async (one writer for
the whole run: its first save is the job's first async save; made with
state_dict=, as the writer's documentation says, so its staging memory is
faulted in before round 1, in the background). Each time
is the slowest rank's, from a common start (a barrier):
  save_s     save_state_dict called until the data are durable (async:
             until writer.wait() returns)
  blocked_s  how long save_state_dict held the caller
  bytes/s    the state's bytes over save_s
Rows (one line each, space-separated):
  # ...                                  comments: the setting
  row ROUND WRITER SAVE_S BLOCKED_S BYTES_PER_S MEMCPY_S
  summary WRITER SAVE_S BLOCKED_S BYTES_PER_S    medians over the rounds
  first-async BLOCKED_S MEMCPY_S RATIO          round 1's async save over
                                                the median memcpy (round 1's
                                                runs beside the pre-faulting)
  async-blocked-over-memcpy RATIO               median of the later rounds
  throughput-over-torch-fs WRITER RATIO         loom and loom-async
  async-durable-over-blocking RATIO             median over the rounds of
                                                loom-async's save_s over loom's
                                                (an async save that copies, then
                                                writes: 1 + copy/save; one whose
                                                writes overlap its copy: about 1)
"""
import argparse
import os
import shutil
import statistics
import sys
import time

WRITERS = ("torch-fs", "loom", "loom-async")
COLS = 1024     # float32 columns: 4 KiB rows


def parse_size(s):
    m = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = s.rstrip("bB")
    mult = 1
    if t and t[-1].lower() in m:
        mult, t = m[t[-1].lower()], t[:-1]
    try:
        v = int(float(t) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a size (a number with an optional "
                                         "K, M or G suffix)" % s)
    if v <= 0:
        raise argparse.ArgumentTypeError("'%s' is not a positive size" % s)
    return v


def positive(s):
    try:
        v = int(s)
    except ValueError:
        v = 0
    if v <= 0:
        raise argparse.ArgumentTypeError("'%s' is not a positive integer" % s)
    return v


def make_state(torch, size_bytes, tensors, world_size, rank):
    """tensors ShardedTensors of about size_bytes in all, and their bytes"""
    from torch.distributed._shard import sharded_tensor
    from torch.distributed._shard.sharding_spec import ChunkShardingSpec
    spec = ChunkShardingSpec(dim=0, placements=["rank:%d/cpu" % r for r in range(world_size)])
    rows = max(world_size, size_bytes // (tensors * COLS * 4))
    g = torch.Generator().manual_seed(1234 + rank)
    sd = {}
    for k in range(tensors):
        s = sharded_tensor.empty(spec, rows, COLS)
        for sh in s.local_shards():
            sh.tensor.uniform_(generator=g)
        sd["layer%d.weight" % k] = s
    return sd, tensors * rows * COLS * 4


def shards(sd):
    return [sh.tensor for t in sd.values() for sh in t.local_shards()]


def slowest(torch, dist, *vals):
    t = torch.tensor(vals, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("1G"),
                    help="the state's bytes in all, K/M/G suffixes (default 1G)")
    ap.add_argument("--tensors", type=positive, default=8,
                    help="sharded tensors the state is made of (default 8)")
    ap.add_argument("--rounds", type=positive, default=3, help="rounds (default 3)")
    ap.add_argument("--dir", required=True,
                    help="a directory every rank sees (made; the checkpoints are removed after)")
    a = ap.parse_args()

    import loom.torch
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)    # ranks share the node's cores, as the copies do
    dist.init_process_group("gloo", init_method="env://")
    rank, size = dist.get_rank(), dist.get_world_size()
    D = loom.torch.dcp()
    world = loom.torch.cpu_world()      # made once, outside every timing
    sd, total = make_state(torch, a.size, a.tensors, size, rank)
    mine = shards(sd)
    share = sum(t.numel() * t.element_size() for t in mine)
    dst = [torch.zeros_like(t) for t in mine]   # touched: a copy, not page faults
    base = os.path.abspath(a.dir)
    if rank == 0:
        os.makedirs(base, exist_ok=True)
        nodes = os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or "?"
        print("# dcp-bench: %d ranks on %s nodes, state %d bytes (%d tensors of %d x %d "
              "float32, sharded by rows), rank 0's share %d bytes, %d rounds, torch %s, dir %s"
              % (size, nodes, total, a.tensors, total // (a.tensors * COLS * 4), COLS, share,
                 a.rounds, torch.__version__, base), flush=True)
        print("# row ROUND WRITER SAVE_S BLOCKED_S BYTES_PER_S MEMCPY_S", flush=True)
    dist.barrier()
    loom_w = loom.torch.StorageWriter(os.path.join(base, "loom"), world=world)
    async_w = loom.torch.StorageWriter(os.path.join(base, "loom-async"), async_save=True,
                                       world=world, state_dict=sd)
    got = {w: [] for w in WRITERS}      # (save_s, blocked_s) a round
    memcpy = []

    def timed_memcpy():
        dist.barrier()
        t0 = time.perf_counter()
        for d, s in zip(dst, mine):
            d.copy_(s)
        return slowest(torch, dist, time.perf_counter() - t0)[0]

    def timed_save(name, rnd):
        if name == "torch-fs":
            path = os.path.join(base, "torch-fs-%d" % rnd)
            writer = D.FileSystemWriter(path)
        else:
            writer = loom_w if name == "loom" else async_w
        dist.barrier()
        t0 = time.perf_counter()
        D.save_state_dict(sd, writer)
        t1 = time.perf_counter()
        if name == "loom-async":
            writer.wait()
        t2 = time.perf_counter()
        save_s, blocked_s = slowest(torch, dist, t2 - t0, t1 - t0)
        if name == "torch-fs":
            dist.barrier()
            if rank == 0:
                shutil.rmtree(path)
        return save_s, blocked_s

    for rnd in range(1, a.rounds + 1):
        order = ("memcpy",) + WRITERS
        k = (rnd - 1) % len(order)
        order = order[k:] + order[:k]
        times = {}
        for name in order:
            if name == "memcpy":
                memcpy.append(timed_memcpy())
            else:
                times[name] = timed_save(name, rnd)
        for name in WRITERS:
            save_s, blocked_s = times[name]
            got[name].append((save_s, blocked_s))
            if rank == 0:
                print("row %d %s %.4f %.4f %.4g %.4f" % (rnd, name, save_s, blocked_s,
                                                         total / save_s, memcpy[-1]), flush=True)

    loom_w.close()
    async_w.close()
    world.close()
    if rank == 0:
        print("# summary WRITER SAVE_S BLOCKED_S BYTES_PER_S (medians over the rounds)")
        med = {}
        for name in WRITERS:
            s = statistics.median(x[0] for x in got[name])
            b = statistics.median(x[1] for x in got[name])
            med[name] = s
            print("summary %s %.4f %.4f %.4g" % (name, s, b, total / s))
        first, mc = got["loom-async"][0][1], statistics.median(memcpy)
        print("first-async %.4f %.4f %.3f" % (first, mc, first / mc))
        later = [got["loom-async"][i][1] / memcpy[i] for i in range(1, a.rounds)]
        print("async-blocked-over-memcpy %.3f" % statistics.median(later) if later else
              "async-blocked-over-memcpy %.3f" % (first / mc))
        for name in ("loom", "loom-async"):
            print("throughput-over-torch-fs %s %.3f" % (name, med["torch-fs"] / med[name]))
        print("async-durable-over-blocking %.3f" % statistics.median(
            x[0] / y[0] for x, y in zip(got["loom-async"], got["loom"])))
        sys.stdout.flush()
        shutil.rmtree(os.path.join(base, "loom"), ignore_errors=True)
        shutil.rmtree(os.path.join(base, "loom-async"), ignore_errors=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
