#!/usr/bin/env python3
"""bench/compare-report.py DIR: the tables and the SVG plot of a
bench/compare run from its raw rows: DIR/raw/<coll>-<shape>-loom-r<N>.json
(loom-bench --json's JSON Lines, one run after the other, Open MPI's and
memcpy's columns in its rows) and DIR/raw/<coll>-<shape>-gloo-r<N>.txt
(gloo-bench.py's nccl-tests rows), and with bench/compare --torch-loom
DIR/raw/<coll>-<shape>-torch-r<N>.txt (gloo-bench.py --backend loom: the
process group "loom" through torch.distributed), whose "torch (loom)"
columns the tables gain only when such files are there. Prints the report (Markdown) on stdout; the plot,
DIR/compare.svg, is drawn with matplotlib where it is installed
(python3-matplotlib), and the report says so in one line where not.

Best of N: for each size the lowest mean time over the rounds (its busbw
is then the highest). Ratios are speed-ups: a peer's time over loom's, so
> 1 means loom is faster; loom/memcpy is loom's busbw over single-core
memcpy bandwidth measured in the same step, loom/all over what each rank
copies while every rank copies at once (memcpy_all: the bound of a
2-rank allreduce in a node, where each rank reads its input and writes
its result). Best of each column can take loom and memcpy from different
rounds, so the allreduce's largest size is also shown round by round,
each ratio from the one round."""
import json
import os
import re
import statistics
import sys

SHAPES = {"1x2": "2 ranks, 1 node", "2x4": "4 ranks, 2 nodes x 2 tasks",
          "2x8": "8 ranks, 2 nodes x 4 tasks"}
COLLS = ("allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall", "reduce")
PEERS = ("loom", "mpi", "gloo")
NAME = {"loom": "loom", "mpi": "Open MPI", "gloo": "gloo", "torch": "torch (loom)", "memcpy": "memcpy"}
COLOUR = {"loom": "#1f77b4", "mpi": "#d62728", "gloo": "#2ca02c", "torch": "#9467bd",
          "memcpy": "#777777"}
FILE_RE = re.compile(r"^(%s)-(\d+x\d+)-(?:(loom)-r(\d+)\.json|(gloo|torch)-r(\d+)\.txt)$"
                     % "|".join(COLLS))
# the optional peer (bench/compare --torch-loom): in the tables only when
# the run has its rows, so a run without it reads as before
EXTRA = ()


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


def loom_runs(text):
    """the runs of a file of loom-bench --json output, one after the
    other, each JSON Lines: its settings (the line with "loom_bench"),
    one line a row (with "size"), its totals; each run as one dict, its
    settings and totals with its rows under "rows". A run cut short (no
    totals line, or a line unfinished) ends the list"""
    runs, run = [], None
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            o = json.loads(line)
        except ValueError:
            break
        if not isinstance(o, dict) or ("loom_bench" in o) != (run is None):
            break
        if run is None:
            run = dict(o, rows=[])
        elif "size" in o:
            run["rows"].append(o)
        else:
            run.update(o)
            runs.append(run)
            run = None
    return runs


def add_loom(d, text, rnd):
    """loom-bench --json: loom's rows, and Open MPI's and memcpy's beside"""
    nrows = 0
    for run in loom_runs(text):
        for r in run["rows"]:
            size = r["size"]
            if size == 0:   # 8 B split over more ranks than elements
                continue
            nrows += 1
            d.setdefault("loom", Series()).add(size, r["time"], r["busbw"], rnd)
            if "mpi_busbw" in r:
                d.setdefault("mpi", Series()).add(size, r["mpi_time"], r["mpi_busbw"], rnd)
            if "memcpy" in r:
                # the limit: the best memcpy seen, kept as a "time" of -bw
                d.setdefault("memcpy", Series()).add(size, -r["memcpy"], r["memcpy"], rnd)
                d.setdefault("memcpy_all", Series()).add(size, -r["memcpy_all"], r["memcpy_all"], rnd)
    return nrows


def add_text(d, who, text, rnd):
    """gloo-bench.py's nccl-tests rows: size count type redop root time best algbw busbw"""
    nrows = 0
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        v = line.split()
        try:
            size, t, bw = int(v[0]), float(v[5]), float(v[8])
        except (ValueError, IndexError):
            continue
        if size == 0:
            continue
        nrows += 1
        d.setdefault(who, Series()).add(size, t, bw, rnd)
    return nrows


def parse(dirname):
    """data[(coll, shape)][peer] = Series; status[(coll, shape)][peer] = note"""
    data, status, rounds = {}, {}, set()
    raw = os.path.join(dirname, "raw")
    for fn in sorted(os.listdir(raw)):
        m = FILE_RE.match(fn)
        if not m:
            continue
        coll, shape = m.group(1), m.group(2)
        who = m.group(3) or m.group(5)
        rnd = int(m.group(4) or m.group(6))
        rounds.add(rnd)
        d = data.setdefault((coll, shape), {})
        st = status.setdefault((coll, shape), {})
        with open(os.path.join(raw, fn)) as f:
            text = f.read()
        if who == "loom":
            nrows = add_loom(d, text, rnd)
        else:
            if "not supported by gloo" in text:
                st["gloo"] = "not supported"
            if "not supported by loom" in text:
                st["torch"] = "not supported"
            nrows = add_text(d, who, text, rnd)
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
    notes = ["%s: %s" % (NAME[p], st[p]) for p in PEERS + EXTRA if p in st]
    if notes:
        out += ["(" + "; ".join(notes) + ")", ""]
    xt = "".join(" %s us |" % NAME[p] for p in EXTRA)
    xb = "".join(" %s GB/s |" % NAME[p] for p in EXTRA)
    xv = "".join(" vs %s |" % NAME[p] for p in EXTRA)
    ncol = 13 + 3 * len(EXTRA)
    out.append("| size | loom us | Open MPI us | gloo us |" + xt + " loom GB/s | Open MPI GB/s | gloo GB/s |"
               + xb + " memcpy GB/s | memcpy_all GB/s | vs Open MPI | vs gloo |" + xv
               + " loom/memcpy | loom/all |")
    out.append("|" + "---:|" * ncol)
    sizes = sorted(set().union(*[set(s.best) for s in d.values()]))
    g = {p: d.get(p, Series()) for p in PEERS + EXTRA + ("memcpy", "memcpy_all")}
    for s in sizes:
        lt = g["loom"].time(s)
        cells = ([fmt_size(s)] + [fmt_us(g[p].time(s)) for p in PEERS + EXTRA]
                 + [fmt_bw(g[p].bw(s)) for p in PEERS + EXTRA]
                 + [fmt_bw(g["memcpy"].bw(s)), fmt_bw(g["memcpy_all"].bw(s))]
                 + [fmt_ratio(g[p].time(s), lt) for p in ("mpi", "gloo") + EXTRA]
                 + [fmt_pct(g["loom"].bw(s), g["memcpy"].bw(s)),
                    fmt_pct(g["loom"].bw(s), g["memcpy_all"].bw(s))])
        out.append("| " + " | ".join(cells) + " |")
    return out


def per_round(coll, shape, d):
    """the largest size, round by round: loom against the memcpy of its
    own round (a bound moves with the host from round to round)"""
    loom = d.get("loom")
    if not loom or not loom.best:
        return []
    top = max(loom.best)
    g = {p: d.get(p, Series()) for p in PEERS + EXTRA + ("memcpy", "memcpy_all")}

    def bw(p, r):
        return g[p].by_round.get(r, {}).get(top)
    out = ["", "### %s, %s, %s, round by round" % (coll, SHAPES.get(shape, shape), fmt_size(top)),
           "", "| round | loom GB/s | Open MPI GB/s | gloo GB/s |"
           + "".join(" %s GB/s |" % NAME[p] for p in EXTRA) + " memcpy GB/s | memcpy_all GB/s "
           "| vs Open MPI | vs gloo |" + "".join(" vs %s |" % NAME[p] for p in EXTRA)
           + " loom/memcpy | loom/all |",
           "|" + "---:|" * (10 + 2 * len(EXTRA))]
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
        cells = ([str(r), fmt_bw(lb)] + [fmt_bw(b[p]) for p in ("mpi", "gloo") + EXTRA]
                 + [fmt_bw(b["memcpy"]), fmt_bw(b["memcpy_all"])]
                 + [fmt_ratio(lb, b[p]) for p in ("mpi", "gloo") + EXTRA]
                 + [fmt_pct(lb, b["memcpy"]), fmt_pct(lb, b["memcpy_all"])])
        out.append("| " + " | ".join(cells) + " |")
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
        g = {p: d.get(p, Series()) for p in PEERS + EXTRA}
        rows.append((shape, hi, lo, g))
    if not rows:
        return []
    hi = rows[0][1]
    out = ["", "### allreduce cost growth (best of %d): busbw at %s, latency at %s"
           % (nrounds, fmt_size(hi), fmt_size(rows[0][2])), "",
           "| ranks | loom GB/s | Open MPI GB/s | gloo GB/s |" + "".join(" %s GB/s |" % NAME[p] for p in EXTRA)
           + " loom us | Open MPI us | gloo us |" + "".join(" %s us |" % NAME[p] for p in EXTRA),
           "|---|" + "---:|" * (6 + 2 * len(EXTRA))]
    for shape, h, lo, g in rows:
        out.append("| " + " | ".join([SHAPES[shape]] + [fmt_bw(g[p].bw(h)) for p in PEERS + EXTRA]
                                     + [fmt_us(g[p].time(lo)) for p in PEERS + EXTRA]) + " |")
    return out


def plot(panels, path):
    """one panel per collective and shape: busbw against size (log2),
    with matplotlib; None when drawn, else why not"""
    try:
        import matplotlib
        matplotlib.use("Agg")
        # names as SVG text, not glyph outlines: a reader (and a test) finds them
        matplotlib.rcParams["svg.fonttype"] = "none"
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed (python3-matplotlib)"
    cols = 2
    nrow = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrow, cols, figsize=(7.6, 2.5 * nrow), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (coll, shape, d) in zip(axes.flat, panels):
        ax.set_title("%s, %s" % (coll, SHAPES.get(shape, shape)), fontsize=9, loc="left")
        for p in PEERS + EXTRA + ("memcpy",):
            s = d.get(p)
            if not s or not s.best:
                continue
            xs = sorted(s.best)
            ax.plot(xs, [s.best[z][1] for z in xs], color=COLOUR[p], label=NAME[p],
                    linestyle="--" if p == "memcpy" else "-", linewidth=1.4,
                    gid="curve-%s-%s-%s" % (coll, shape, p))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("size (B)", fontsize=8)
        ax.set_ylabel("busbw GB/s", fontsize=8)
        ax.set_ylim(bottom=0)
        ax.tick_params(labelsize=7)
        ax.grid(True, color="#eeeeee")
        ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, format="svg")
    plt.close(fig)
    return None


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: bench/compare-report.py DIR (a bench/compare output directory)\n")
        return 2
    dirname = sys.argv[1]
    if not os.path.isdir(os.path.join(dirname, "raw")):
        sys.stderr.write("compare-report: %s/raw: no such directory (not a bench/compare output)\n" % dirname)
        return 2
    global EXTRA
    data, status, nrounds = parse(dirname)
    info = peers_file(dirname)
    if "torch" in info or any("torch" in d for d in data.values()):
        EXTRA = ("torch",)
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
    if EXTRA:
        out.append("| torch (loom) | %s |" % (
            info.get("torch", "?").replace("ok ", "the process group \"loom\" through torch.distributed "
                                           "(gloo-bench.py --backend loom), ")
            if info.get("torch", "").startswith("ok") else info.get("torch", "?")))
        if info.get("torch", "").startswith("not"):
            for st in status.values():
                st.setdefault("torch", info["torch"].split(" (")[0])
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
        why = plot(panels, svgpath)
        out += ["", "Plot: %s" % svgpath if why is None else "No plot: %s." % why]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
