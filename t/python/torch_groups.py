"""Groups of a subset of the ranks on the process group "loom"
(dist.new_group(ranks=...)), 4 ranks, against gloo's groups of the same
ranks in the same job: every rank takes part in creating each group, the
ranks outside it get torch's GroupMember.NON_GROUP_MEMBER as gloo's do,
and the members' collectives equal gloo's. Two disjoint groups run their
collectives at the same time, and a rank in two groups keeps operations
in flight on both at once. Then loom.torch.cpu_world() beside the group.

  torch_groups.py [--default loom|gloo]

--default gloo: the default group is gloo's and a loom group of every
rank (new_group(backend="loom")) forms libloom's world first; the
subsets are split from it all the same, and cpu_world() forms its own
world through torch's Store. Prints one line per failure and, on every rank, "rank R/4:
torch_groups ... N checks, F failed" at the end; exit 1 on any failure."""
import argparse
import datetime
import sys
import warnings

import torch
import torch.distributed as dist

import loom.torch

warnings.filterwarnings("ignore", category=UserWarning)
R = dist.ReduceOp
fails = []
checks = 0
# the groups: two disjoint ones inside the nodes (srun places 0,1 on n1
# and 2,3 on n2), one across the nodes, one of three ranks
SUBSETS = {"a": [0, 1], "b": [2, 3], "x": [1, 2], "t": [0, 2, 3]}


def check(what, ok, detail=""):
    global checks
    checks += 1
    if not ok:
        fails.append(what)
        print("FAIL rank %d: %s %s" % (dist.get_rank(), what, detail), flush=True)


def same(what, got, want):
    check(what, got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want),
          "got %s want %s" % (got.flatten()[:6], want.flatten()[:6]))


def data(rank, n, dtype=torch.float32, salt=0):
    return ((torch.arange(n) * 3 + rank * 5 + salt) % 7 - 3).to(dtype)


def ops(name, ranks, g, ref):
    """every collective on group g (loom) and on ref (gloo's group of the
    same ranks), compared; ranks are global, as torch's calls take them"""
    me = dist.get_rank()
    k = len(ranks)
    for n in (1, 1031):
        for dtype, op in ((torch.float32, R.SUM), (torch.int64, R.MAX), (torch.float64, R.MIN)):
            a, b = data(me, n, dtype), data(me, n, dtype)
            dist.all_reduce(a, op=op, group=g)
            dist.all_reduce(b, op=op, group=ref)
            same("%s allreduce n=%d %s %s" % (name, n, dtype, op), a, b)
        root = ranks[-1]
        a, b = data(me, n), data(me, n)
        dist.broadcast(a, src=root, group=g)
        dist.broadcast(b, src=root, group=ref)
        same("%s broadcast n=%d" % (name, n), a, b)
        a, b = data(me, n), data(me, n)
        dist.reduce(a, dst=root, group=g)
        dist.reduce(b, dst=root, group=ref)
        if me == root:
            same("%s reduce n=%d" % (name, n), a, b)
        x = data(me, n, torch.int32)
        la = [torch.empty(n, dtype=torch.int32) for _ in range(k)]
        lb = [torch.empty(n, dtype=torch.int32) for _ in range(k)]
        dist.all_gather(la, x, group=g)
        dist.all_gather(lb, x, group=ref)
        same("%s allgather n=%d" % (name, n), torch.cat(la), torch.cat(lb))
        ga = [torch.empty(n) for _ in range(k)] if me == root else None
        gb = [torch.empty(n) for _ in range(k)] if me == root else None
        dist.gather(data(me, n), ga, dst=root, group=g)
        dist.gather(data(me, n), gb, dst=root, group=ref)
        if me == root:
            same("%s gather n=%d" % (name, n), torch.cat(ga), torch.cat(gb))
        src = [data(j, n, salt=1) for j in range(k)] if me == root else None
        a, b = torch.empty(n), torch.empty(n)
        dist.scatter(a, src, src=root, group=g)
        dist.scatter(b, src, src=root, group=ref)
        same("%s scatter n=%d" % (name, n), a, b)
        a, b = torch.empty(k * n), torch.empty(k * n)
        dist.all_to_all_single(a, data(me, k * n), group=g)
        dist.all_to_all_single(b, data(me, k * n), group=ref)
        same("%s alltoall n=%d" % (name, n), a, b)
        # gloo (torch 1.13) has no reduce_scatter: the sum computed here
        out = torch.empty(n)
        dist.reduce_scatter(out, [data(me, n, salt=j) for j in range(k)], group=g)
        i = ranks.index(me)
        want = sum(data(r, n, salt=i) for r in ranks)
        same("%s reduce_scatter n=%d" % (name, n), out, want)
    # send/recv around the group's ring, global ranks as torch takes them
    i = ranks.index(me)
    nxt, prv = ranks[(i + 1) % k], ranks[(i - 1) % k]
    got = torch.empty(5)
    s = dist.isend(data(me, 5), dst=nxt, group=g)
    dist.recv(got, src=prv, group=g)
    s.wait()
    same("%s send/recv" % name, got, data(prv, 5))
    dist.barrier(group=g)
    check("%s rank and size" % name, dist.get_rank(g) == i and dist.get_world_size(g) == k,
          "%d/%d" % (dist.get_rank(g), dist.get_world_size(g)))


def concurrently(groups):
    """both disjoint groups (a, b) at once, many operations in flight; a
    rank in a and x keeps operations in flight on both"""
    me = dist.get_rank()
    mine = [n for n in ("a", "b", "x") if me in SUBSETS[n]]
    works, want = [], []
    for it in range(40):
        for n in mine:
            t = torch.full((4096,), float(me + it))
            works.append((n, it, t, dist.all_reduce(t, group=groups[n], async_op=True)))
    for n, it, t, w in works:
        w.wait()
        v = float(sum(r + it for r in SUBSETS[n]))
        if not torch.equal(t, torch.full((4096,), v)):
            check("concurrent %s allreduce %d" % (n, it), False, "got %s want %s" % (t[:3], v))
            return
    check("concurrent allreduces on %s" % "+".join(mine), True)


def cpu_world(default):
    w = loom.torch.cpu_world()
    try:
        want = "_GroupWorld" if default == "loom" else "World"
        check("cpu_world is a %s" % want, type(w).__name__ == want, type(w).__name__)
        x = torch.full((8,), float(dist.get_rank()))
        w.allreduce(x.numpy())
        same("cpu_world allreduce", x, torch.full((8,), 6.0))
        check("cpu_world rank and size", (w.rank, w.size) == (dist.get_rank(), 4))
    finally:
        w.close()
    x = torch.ones(3)
    dist.all_reduce(x)
    same("default group after cpu_world", x, torch.full((3,), 4.0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--default", choices=("loom", "gloo"), default="loom")
    args = ap.parse_args()
    dist.init_process_group(args.default, init_method="env://")
    me = dist.get_rank()
    if dist.get_world_size() != 4:
        print("torch_groups: wants 4 ranks", file=sys.stderr)
        return 2
    if args.default == "gloo":
        everyone = dist.new_group(backend="loom")
        check("new_group(backend=loom) of every rank", dist.get_backend(everyone) == "loom")
    groups, refs = {}, {}
    for n, ranks in SUBSETS.items():
        groups[n] = dist.new_group(ranks, backend="loom")
        refs[n] = dist.new_group(ranks, backend="gloo")
        inside = me in ranks
        nm = dist.GroupMember.NON_GROUP_MEMBER
        check("group %s: a member's is a group, an outsider's NON_GROUP_MEMBER, as gloo's" % n,
              (groups[n] is not nm) == inside and (refs[n] is not nm) == inside)
        if inside:
            check("group %s on loom" % n, dist.get_backend(groups[n]) == "loom")
    for n, ranks in SUBSETS.items():
        if me in ranks:
            ops(n, ranks, groups[n], refs[n])
    concurrently(groups)
    x = torch.full((3,), float(me))
    dist.all_reduce(x)
    same("the default group after the subsets", x, torch.full((3,), 6.0))
    cpu_world(args.default)
    # torch's own new_group, not loom.torch's: the members raise at once
    # (the others never take part in the split), the others time out in
    # torch's barrier of new_group
    try:
        loom.torch._torch_new_group([0, 1], backend="loom", timeout=datetime.timedelta(seconds=10))
        check("a subset group past loom.torch's new_group raises", False, "it did not")
    except RuntimeError as e:
        if me in (0, 1):
            check("a subset group past loom.torch's new_group names the way",
                  "create it through torch.distributed.new_group" in str(e), str(e))
    dist.barrier()
    print("rank %d/4: torch_groups, default %s, %d checks, %d failed" %
          (me, args.default, checks, len(fails)), flush=True)
    dist.destroy_process_group()
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
