"""Every operation of the process group "loom" x every dtype x ReduceOp,
at a few sizes, in place and out of place, non-contiguous tensors too,
against gloo's results in the same job (a gloo group of every rank); where
gloo cannot do it (bfloat16, AVG...) against the value computed here from
every rank's input, which each rank can make. Inputs are small integers,
so every sum and product is exact in every dtype and the results must be
equal. Prints one line per failure and "PASS: torch_backend ..." at the
end; exit 1 on any failure. Launched with env:// (srun with loom.so, or
torchrun)."""
import sys
import time
import warnings

import torch
import torch.distributed as dist

import loom.torch  # noqa: F401  registers "loom"

warnings.filterwarnings("ignore", category=UserWarning)  # _allgather_base & co: "deprecated"
R = dist.ReduceOp
OPS = {"sum": R.SUM, "avg": R.AVG, "product": R.PRODUCT, "min": R.MIN, "max": R.MAX}
RDTYPES = [torch.int8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
           torch.float32, torch.float64]
DTYPES = RDTYPES + [torch.uint8, torch.bool]
SIZES = [1, 7, 1031]
fails = []
checks = 0


def value(rank, n, dtype, op="sum", salt=0):
    """rank's input: small integers (products: 1, 2, -1), exact anywhere"""
    i = torch.arange(n, dtype=torch.int64)
    if op == "product":
        v = torch.tensor([1, 2, 1, -1])[(i + rank + salt) % 4]
    else:
        v = (i * 3 + rank * 5 + salt) % 7 - 3
    if dtype == torch.uint8:
        v = v + 3
    return v.to(dtype)


def reduce_ref(xs, op, dtype):
    acc = torch.stack([x.double() for x in xs])
    r = {"sum": acc.sum(0), "product": acc.prod(0), "min": acc.min(0)[0],
         "max": acc.max(0)[0]}.get(op)
    if op == "avg":
        s = acc.sum(0)
        r = torch.trunc(s / len(xs)) if not dtype.is_floating_point else s / len(xs)
    return r.to(dtype)


def check(what, got, want):
    global checks
    checks += 1
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        fails.append(what)
        print("FAIL rank %d: %s: got %s want %s" % (dist.get_rank(), what, got.flatten()[:6],
                                                  want.flatten()[:6]), flush=True)


def noncontig(t):
    """a non-contiguous tensor holding t's values"""
    big = torch.zeros(t.numel(), 2, dtype=t.dtype)
    v = big[:, 1]
    v.copy_(t.flatten())
    return v


def gloo_or(fn, ref):
    """gloo's result of fn, else ref when gloo cannot do it"""
    try:
        return fn()
    except RuntimeError:
        return ref


def main():
    global checks
    dist.init_process_group("loom", init_method="env://")
    gloo = dist.new_group(backend="gloo")
    rank, size = dist.get_rank(), dist.get_world_size()
    t0 = time.time()
    for n in SIZES:
        for dtype in RDTYPES:
            for name, op in OPS.items():
                xs = [value(r, n, dtype, name) for r in range(size)]
                ref = reduce_ref(xs, name, dtype)
                tag = "%s %s n=%d" % (name, dtype, n)
                # allreduce: contiguous, async with its future, non-contiguous
                a = xs[rank].clone()
                w = dist.all_reduce(a, op=op, async_op=True)
                fut = w.get_future().wait()
                g = gloo_or(lambda: (lambda t: (dist.all_reduce(t, op=op, group=gloo), t)[1])(
                    xs[rank].clone()), ref)
                check("allreduce " + tag, a, g)
                check("allreduce future " + tag, fut[0], g)
                check("allreduce vs reference " + tag, a, ref)
                nc = noncontig(xs[rank])
                dist.all_reduce(nc, op=op)
                check("allreduce non-contiguous " + tag, nc.clone(), ref)
                # allreduce_coalesced
                b = [xs[rank].clone(), xs[rank].clone()[: max(1, n // 2)]]
                dist.all_reduce_coalesced(b, op=op)
                check("allreduce_coalesced " + tag, b[0], ref)
                check("allreduce_coalesced[1] " + tag, b[1], ref[: max(1, n // 2)])
                # reduce at the last rank
                root = size - 1
                c = xs[rank].clone()
                dist.reduce(c, root, op=op)
                if rank == root:
                    check("reduce " + tag, c, ref)
                # reduce_scatter (list) and _reduce_scatter_base
                ins = [value(r, size * n, dtype, name, salt=1) for r in range(size)]
                rs_ref = reduce_ref(ins, name, dtype)[rank * n:(rank + 1) * n]
                o = torch.empty(n, dtype=dtype)
                dist.reduce_scatter(o, list(ins[rank].chunk(size)), op=op)
                check("reduce_scatter " + tag, o, rs_ref)
                o2 = torch.empty(n, dtype=dtype)
                dist._reduce_scatter_base(o2, ins[rank].clone(), op=op)
                check("_reduce_scatter_base " + tag, o2, rs_ref)
        for dtype in DTYPES:
            tag = "%s n=%d" % (dtype, n)
            xs = [value(r, n, dtype) for r in range(size)]
            if dtype == torch.bool:
                xs = [x != 0 for x in xs]
            mine = xs[rank]
            # broadcast from every root, one of them non-contiguous
            for root in range(size):
                b = mine.clone() if root % 2 else noncontig(mine)
                dist.broadcast(b, root)
                check("broadcast root %d %s" % (root, tag), b.clone(), xs[root])
            # allgather (list, one output non-contiguous) and _allgather_base
            outs = [torch.empty_like(mine) for _ in range(size)]
            outs[0] = noncontig(torch.zeros_like(mine))
            dist.all_gather(outs, mine)
            for r in range(size):
                check("allgather[%d] %s" % (r, tag), outs[r].clone(), xs[r])
            flat = torch.empty(size * n, dtype=dtype)
            dist._all_gather_base(flat, mine)
            check("_allgather_base " + tag, flat, torch.cat(xs))
            g = gloo_or(lambda: (lambda l: (dist.all_gather(l, mine, group=gloo), l)[1])(
                [torch.empty_like(mine) for _ in range(size)]), xs)
            check("allgather vs gloo " + tag, torch.cat(outs), torch.cat(g))
            # gather and scatter at root 1 % size
            root = 1 % size
            gl = [torch.empty_like(mine) for _ in range(size)] if rank == root else None
            dist.gather(mine, gl, dst=root)
            if rank == root:
                check("gather " + tag, torch.cat(gl), torch.cat(xs))
            s = torch.empty_like(mine)
            dist.scatter(s, [x.clone() for x in xs] if rank == root else None, src=root)
            check("scatter " + tag, s, xs[rank])
            # alltoall: equal blocks, split sizes, lists
            src = torch.cat([value(rank * size + j, n, dtype) for j in range(size)])
            if dtype == torch.bool:
                src = src != 0
            want = torch.cat([value(j * size + rank, n, dtype) for j in range(size)])
            if dtype == torch.bool:
                want = want != 0
            out = torch.empty_like(src)
            dist.all_to_all_single(out, src)
            check("alltoall_base " + tag, out, want)
            # split sizes: rank r sends j+1 rows of n to rank j... rows of 2 columns
            ins = [torch.full((j + 1 + rank, 2), rank * 10 + j).to(dtype) for j in range(size)]
            wants = [torch.full((rank + 1 + j, 2), j * 10 + rank).to(dtype) for j in range(size)]
            out = torch.empty(sum(w.shape[0] for w in wants), 2, dtype=dtype)
            dist.all_to_all_single(out, torch.cat(ins), [w.shape[0] for w in wants],
                                   [i.shape[0] for i in ins])
            check("alltoall_base splits " + tag, out, torch.cat(wants))
            lo = [torch.empty_like(w) for w in wants]
            dist.all_to_all(lo, ins)
            check("alltoall list " + tag, torch.cat(lo), torch.cat(wants))
            # send/recv in a ring, async
            nxt, prv = (rank + 1) % size, (rank - 1) % size
            r = torch.empty_like(mine)
            rq = dist.irecv(r, prv)
            sq = dist.isend(mine, nxt)
            sq.wait()
            rq.wait()
            check("send/recv " + tag, r, xs[prv])
    # one large one: 16 MiB of float32
    big = torch.full((4 << 20,), float(rank + 1))
    dist.all_reduce(big)
    check("allreduce 16 MiB", big, torch.full((4 << 20,), float(size * (size + 1) // 2)))
    dist.barrier()
    # what loom cannot do raises, naming it
    for what, fn in [("uint8 sum", lambda: dist.all_reduce(torch.zeros(2, dtype=torch.uint8))),
                     ("BAND", lambda: dist.all_reduce(torch.zeros(2, dtype=torch.int32),
                                                      op=R.BAND)),
                     ("tag", lambda: dist.send(torch.zeros(1), (rank + 1) % size, tag=3))]:
        try:
            fn()
            fails.append("no error for " + what)
            print("FAIL rank %d: no error for %s" % (rank, what), flush=True)
        except RuntimeError as e:
            checks += 1
            if rank == 0:
                print("raises as it should: %s" % e, flush=True)
    dist.barrier()
    ok = torch.tensor([len(fails)])
    dist.all_reduce(ok)
    if rank == 0:
        print("%s: torch_backend, %d ranks, %d checks a rank, %d failed, %.1f s" % (
            "PASS" if int(ok) == 0 else "FAIL", size, checks, int(ok), time.time() - t0),
            flush=True)
    dist.destroy_process_group()
    return 0 if int(ok) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
