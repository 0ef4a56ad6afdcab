#!/usr/bin/env python3
"""bench/compare-report.py DIR: the tables and the SVG plot of a
bench/compare run from its raw rows (DIR/raw/<coll>-<shape>-<peer>-r<N>.txt,
loom-bench's and gloo-bench.py's nccl-tests rows). Python 3 standard library
only. Writes DIR/compare.svg and prints the report (Markdown) on stdout.

Best of N: for each size the lowest mean time over the rounds (its busbw
is then the highest). Ratios are speed-ups: a peer's time over loom's, so
> 1 means loom is faster; loom/memcpy is loom's busbw over single-core
memcpy bandwidth measured in the same step, loom/all over what each rank
copies while every rank copies at once (memcpy_all: the bound of a
2-rank allreduce in a node, where each rank reads its input and writes
its result). Best of each column can take loom and memcpy from different
rounds, so the allreduce's largest size is also shown round by round,
each ratio from the one round."""
import math
import os
import re
import statistics
import sys

SHAPES = {"1x2": "2 ranks, 1 node", "2x4": "4 ranks, 2 nodes x 2 tasks",
          "2x8": "8 ranks, 2 nodes x 4 tasks"}
COLLS = ("allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall", "reduce")
PEERS = ("loom", "mpi", "gloo")
NAME = {"loom": "loom", "mpi": "Open MPI", "gloo": "gloo", "memcpy": "memcpy"}
COLOUR = {"loom": "#1f77b4", "mpi": "#d62728", "gloo": "#2ca02c", "memcpy": "#777777"}
FILE_RE = re.compile(r"^(%s)-(\d+x\d+)-(loom|gloo)-r(\d+)\.txt$" % "|".join(COLLS))


def fmt_size(b):
    for unit, m in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= m and b % m == 0:
            return "%d %siB" % (b // m, unit)
    return "%d B" % b


def fmt_us(t):
    if t is None:
        return "—"
    return "%.2f" % t if t < 100 else "%.0f" % t


def fmt_bw(b):
    return "—" if b is None else "%.3f" % b


def fmt_pct(a, b):
    if a is None or b is None or b <= 0:
        return "—"
    return "%.1f%%" % (100.0 * a / b)


def fmt_ratio(a, b):
    """a / b as a speed-up, '—' when either is missing"""
    if a is None or b is None or b <= 0:
        return "—"
    return "%.2fx" % (a / b)


class Series:
    """best-of-N per size for one peer: size -> [time_us, busbw]"""

    def __init__(self):
        self.best = {}
        self.by_round = {}   # round -> size -> busbw

    def add(self, size, t, bw, rnd=0):
        cur = self.best.get(size)
        if cur is None or t < cur[0]:
            self.best[size] = [t, bw]
        self.by_round.setdefault(rnd, {})[size] = bw

    def time(self, s):
        return self.best[s][0] if s in self.best else None

    def bw(self, s):
        return self.best[s][1] if s in self.best else None


def parse(dirname):
    """data[(coll, shape)][peer] = Series; status[(coll, shape)][peer] = note"""
    data, status, rounds = {}, {}, set()
    raw = os.path.join(dirname, "raw")
    for fn in sorted(os.listdir(raw)):
        m = FILE_RE.match(fn)
        if not m:
            continue
        coll, shape, who, rnd = m.group(1), m.group(2), m.group(3), int(m.group(4))
        rounds.add(rnd)
        d = data.setdefault((coll, shape), {})
        st = status.setdefault((coll, shape), {})
        with open(os.path.join(raw, fn)) as f:
            text = f.read()
        if "not supported by gloo" in text:
            st["gloo"] = "not supported"
        mpi_cols = "mpi_busbw" in text
        nrows = 0
        for line in text.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            v = line.split()
            try:
                size, t, bw = int(v[0]), float(v[5]), float(v[8])
            except (ValueError, IndexError):
                continue
            if size == 0:   # 8 B split over more ranks than elements
                continue
            nrows += 1
            d.setdefault(who, Series()).add(size, t, bw, rnd)
            if who == "loom":
                k = 10
                if mpi_cols and len(v) >= 12:
                    d.setdefault("mpi", Series()).add(size, float(v[10]), float(v[11]), rnd)
                    k = 12
                if len(v) > k:
                    mc = float(v[k])
                    # the limit: the best memcpy seen, kept as a "time" of -bw
                    d.setdefault("memcpy", Series()).add(size, -mc, mc, rnd)
                if len(v) > k + 1:
                    mc = float(v[k + 1])
                    d.setdefault("memcpy_all", Series()).add(size, -mc, mc, rnd)
        if nrows == 0 and who not in st:
            st[who] = "failed (see raw/%s.err)" % fn
    return data, status, len(rounds)


def peers_file(dirname):
    info = {}
    try:
        with open(os.path.join(dirname, "peers")) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition(" ")
                info[k] = v
    except OSError:
        pass
    return info


def table(coll, shape, d, st, nrounds):
    out = ["", "### %s, %s (best of %d)" % (coll, SHAPES.get(shape, shape), nrounds), ""]
    notes = ["%s: %s" % (NAME[p], st[p]) for p in PEERS if p in st]
    if notes:
        out += ["(" + "; ".join(notes) + ")", ""]
    out.append("| size | loom us | Open MPI us | gloo us | loom GB/s | Open MPI GB/s | gloo GB/s "
               "| memcpy GB/s | memcpy_all GB/s | vs Open MPI | vs gloo | loom/memcpy | loom/all |")
    out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    sizes = sorted(set().union(*[set(s.best) for s in d.values()]))
    g = {p: d.get(p, Series()) for p in PEERS + ("memcpy", "memcpy_all")}
    for s in sizes:
        lt = g["loom"].time(s)
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            fmt_size(s), fmt_us(lt), fmt_us(g["mpi"].time(s)), fmt_us(g["gloo"].time(s)),
            fmt_bw(g["loom"].bw(s)), fmt_bw(g["mpi"].bw(s)), fmt_bw(g["gloo"].bw(s)),
            fmt_bw(g["memcpy"].bw(s)), fmt_bw(g["memcpy_all"].bw(s)),
            fmt_ratio(g["mpi"].time(s), lt), fmt_ratio(g["gloo"].time(s), lt),
            fmt_pct(g["loom"].bw(s), g["memcpy"].bw(s)),
            fmt_pct(g["loom"].bw(s), g["memcpy_all"].bw(s))))
    return out


def per_round(coll, shape, d):
    """the largest size, round by round: loom against the memcpy of its
    own round (a bound moves with the host from round to round)"""
    loom = d.get("loom")
    if not loom or not loom.best:
        return []
    top = max(loom.best)
    g = {p: d.get(p, Series()) for p in PEERS + ("memcpy", "memcpy_all")}

    def bw(p, r):
        return g[p].by_round.get(r, {}).get(top)
    out = ["", "### %s, %s, %s, round by round" % (coll, SHAPES.get(shape, shape), fmt_size(top)),
           "", "| round | loom GB/s | Open MPI GB/s | gloo GB/s | memcpy GB/s | memcpy_all GB/s "
           "| vs Open MPI | vs gloo | loom/memcpy | loom/all |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    shares = {"memcpy": [], "memcpy_all": []}
    for r in sorted(loom.by_round):
        b = {p: bw(p, r) for p in g}
        lb = b["loom"]
        if lb is None:
            continue
        for m in shares:
            if b[m]:
                shares[m].append(lb / b[m])
        # busbw ratios: the same speed-ups as the time ratios above
        out.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r, fmt_bw(lb), fmt_bw(b["mpi"]), fmt_bw(b["gloo"]), fmt_bw(b["memcpy"]),
            fmt_bw(b["memcpy_all"]), fmt_ratio(lb, b["mpi"]), fmt_ratio(lb, b["gloo"]),
            fmt_pct(lb, b["memcpy"]), fmt_pct(lb, b["memcpy_all"])))
    if shares["memcpy"]:
        out += ["", "Median over %d round(s): loom/memcpy %.1f%%, loom/all %s." % (
            len(shares["memcpy"]), 100 * statistics.median(shares["memcpy"]),
            "%.1f%%" % (100 * statistics.median(shares["memcpy_all"]))
            if shares["memcpy_all"] else "—")]
    return out


def growth(data, nrounds):
    rows = []
    for shape in ("1x2", "2x4", "2x8"):
        d = data.get(("allreduce", shape))
        if not d or "loom" not in d:
            continue
        sizes = sorted(d["loom"].best)
        lo, hi = sizes[0], sizes[-1]
        g = {p: d.get(p, Series()) for p in PEERS}
        rows.append((shape, hi, lo, g))
    if not rows:
        return []
    hi = rows[0][1]
    out = ["", "### allreduce cost growth (best of %d): busbw at %s, latency at %s"
           % (nrounds, fmt_size(hi), fmt_size(rows[0][2])), "",
           "| ranks | loom GB/s | Open MPI GB/s | gloo GB/s | loom us | Open MPI us | gloo us |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for shape, h, lo, g in rows:
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            SHAPES[shape], fmt_bw(g["loom"].bw(h)), fmt_bw(g["mpi"].bw(h)), fmt_bw(g["gloo"].bw(h)),
            fmt_us(g["loom"].time(lo)), fmt_us(g["mpi"].time(lo)), fmt_us(g["gloo"].time(lo))))
    return out


def svg(panels, path):
    """one panel per collective and shape: busbw against size (log2)"""
    pw, ph, ml, mb, mt, mr = 380, 250, 52, 38, 26, 12
    cols = 2
    nrow = (len(panels) + cols - 1) // cols
    W, H = cols * pw, max(1, nrow) * ph + 10
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
         'font-size="10">' % (W, H), '<rect width="100%" height="100%" fill="white"/>']
    for i, (coll, shape, d) in enumerate(panels):
        x0, y0 = (i % cols) * pw, (i // cols) * ph
        sizes = sorted(set().union(*[set(s.best) for s in d.values()]))
        lx = [math.log2(s) for s in sizes]
        xmin, xmax = min(lx), max(lx)
        if xmax == xmin:
            xmax = xmin + 1
        ymax = max([b for s in d.values() for _, b in s.best.values()] + [1e-3]) * 1.1
        iw, ih = pw - ml - mr, ph - mt - mb

        def X(s):
            return x0 + ml + (math.log2(s) - xmin) / (xmax - xmin) * iw

        def Y(b):
            return y0 + mt + ih - b / ymax * ih
        o.append('<text x="%d" y="%d" font-size="12" font-weight="bold">%s, %s</text>'
                 % (x0 + ml, y0 + 16, coll, SHAPES.get(shape, shape)))
        o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>'
                 % (x0 + ml, y0 + mt, iw, ih))
        for k in range(6):
            b = ymax * k / 5
            o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>'
                     % (x0 + ml, Y(b), x0 + ml + iw, Y(b)))
            o.append('<text x="%d" y="%.1f" text-anchor="end">%.2f</text>' % (x0 + ml - 4, Y(b) + 3, b))
        step = max(1, len(sizes) // 6)
        for s in sizes[::step]:
            o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                     % (X(s), y0 + mt + ih + 13, fmt_size(s).replace(" ", "")))
        o.append('<text x="%d" y="%d" text-anchor="middle">size</text>' % (x0 + ml + iw // 2, y0 + ph - 8))
        o.append('<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle">busbw GB/s</text>'
                 % (x0 + 12, y0 + mt + ih // 2))
        ly = y0 + mt + 12
        for p in PEERS + ("memcpy",):
            s = d.get(p)
            if not s or not s.best:
                continue
            pts = " ".join("%.1f,%.1f" % (X(z), Y(s.best[z][1])) for z in sorted(s.best))
            dash = ' stroke-dasharray="4,3"' if p == "memcpy" else ""
            o.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="1.6"%s/>'
                     % (pts, COLOUR[p], dash))
            o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>'
                     % (x0 + ml + 8, ly - 3, x0 + ml + 26, ly - 3, COLOUR[p], dash))
            o.append('<text x="%d" y="%d">%s</text>' % (x0 + ml + 30, ly, NAME[p]))
            ly += 12
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: bench/compare-report.py DIR (a bench/compare output directory)\n")
        return 2
    dirname = sys.argv[1]
    if not os.path.isdir(os.path.join(dirname, "raw")):
        sys.stderr.write("compare-report: %s/raw: no such directory (not a bench/compare output)\n" % dirname)
        return 2
    data, status, nrounds = parse(dirname)
    info = peers_file(dirname)
    out = ["## loom vs Open MPI vs gloo", ""]
    if "host" in info:
        out.append("%s; float32, sum; %s." % (info["host"], info.get("sizes", "")))
        if "tasks" in info:
            out.append("Tasks %s." % info["tasks"])
        out.append("Times are the mean per call on the slowest rank (us); busbw as nccl-tests; "
                   "\"vs X\" is X's time over loom's (> 1: loom faster); loom/memcpy is loom's "
                   "busbw as a share of single-core memcpy in the same step, loom/all of what "
                   "each rank copies while all copy at once.")
    out += ["", "| peer | status |", "|---|---|",
            "| loom | %s |" % info.get("loom", "?"),
            "| Open MPI | %s |" % {"ok": "MPI called directly (loom-bench --peer mpi): "
                                         "btl self,vader in a node, self,tcp on lo across nodes"}
            .get(info.get("mpi", "?"), info.get("mpi", "?")),
            "| gloo | %s |" % (info.get("gloo", "?").replace("ok ", "torch.distributed, ")
                               if info.get("gloo", "").startswith("ok") else info.get("gloo", "?"))]
    if info.get("gloo", "").startswith("not installed"):
        for st in status.values():
            st.setdefault("gloo", "not installed")
    if info.get("mpi", "").startswith("not installed"):
        for st in status.values():
            st.setdefault("mpi", "not installed")
    panels = []
    for coll in COLLS:
        for shape in ("1x2", "2x4"):
            d = data.get((coll, shape))
            if not d or not any(s.best for s in d.values()):
                continue
            out += table(coll, shape, d, status[(coll, shape)], nrounds)
            if coll == "allreduce" and shape == "1x2":
                out += per_round(coll, shape, d)
            # a curve needs a few sizes; one or two are read in the table
            if any(len(s.best) > 2 for s in d.values()):
                panels.append((coll, shape, d))
    out += growth(data, nrounds)
    if panels:
        svgpath = os.path.join(dirname, "compare.svg")
        svg(panels, svgpath)
        out += ["", "Plot: %s" % svgpath]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
