"""The report's figures, drawn with matplotlib into PNG and SVG files.

Every figure has the same pixel size (FIG_INCHES x DPI = 800 x 500 PNG pixels) so reports line up
and tests can check it. matplotlib is imported only here; `require_matplotlib()` turns its absence
into a message naming the Debian package.
"""
import contextlib
import io
import os
import re

from . import fmt
from .load import num
from .safe_files import Folder
from .series import label, scaling_entries, series_of

FIG_INCHES = (8, 5)
DPI = 100
PNG_SIZE = (FIG_INCHES[0] * DPI, FIG_INCHES[1] * DPI)

MISSING_MATPLOTLIB = (
    "commbench report: plotting needs matplotlib, which this Python ({python}) cannot import.\n"
    "Install it with: apt-get install python3-matplotlib (Debian/Ubuntu; scripts/install-deps.sh "
    "does this), or pip install matplotlib, or point COMMBENCH_PYTHON at a Python that has it.\n"
    "Use --no-plots for the report without figures.")


class MissingMatplotlib(Exception):
    pass


def require_matplotlib():
    """Imports matplotlib with the file-only Agg backend; raises MissingMatplotlib otherwise."""
    try:
        import matplotlib
        # matplotlib read ./matplotlibrc (and the user's config) when imported: whoever owns
        # the folder commbench runs in could set savefig.dpi 3000 or bbox "tight" there. Back to
        # the installed defaults only; the figures set their own sizes and DPI.
        matplotlib.rcdefaults()
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: F401
    except ImportError:
        import sys
        raise MissingMatplotlib(MISSING_MATPLOTLIB.format(python=sys.executable)) from None
    return plt


class Figure:
    """A figure written to disk: `name` is the file stem under plots/, `title` its caption."""

    def __init__(self, name, title, kind):
        self.name, self.title, self.kind = name, title, kind
        self.png_data = None  # the PNG's bytes, once written

    def png(self):
        return f"plots/{self.name}.png"

    def svg(self):
        return f"plots/{self.name}.svg"


def slug(*parts):
    s = "-".join(str(p) for p in parts if p not in (None, ""))
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_")


def _save(plt, fig, out, name, title, kind, written):
    """Writes the figure as plots/<name>.png and .svg of the output folder `out` (a
    safe_files.Folder, or its path): through its descriptor, never following a planted link.
    The PNG's bytes stay on the Figure (`png_data`) for report.html, which embeds them."""
    if not isinstance(out, Folder):  # a folder path (the figure functions called on their own)
        with Folder.open(out) as o:
            return _save(plt, fig, o, name, title, kind, written)
    f = Figure(name, title, kind)
    plots = out.sub("plots")
    png = io.BytesIO()
    # No bbox_inches="tight": it would change the pixel size from figure to figure.
    fig.savefig(png, format="png", dpi=DPI)
    f.png_data = png.getvalue()
    plots.write(os.path.basename(f.png()), f.png_data)
    with plots.create(os.path.basename(f.svg()), binary=True) as fh:
        fig.savefig(fh, format="svg")
    plt.close(fig)
    written.append(f)
    return None


def _band(record):
    """(p5, p95) of the per-iteration samples, None when there are fewer than 2."""
    s = [x for x in record.get("samples_us") or [] if isinstance(x, (int, float))]
    if len(s) < 2:
        return None
    return fmt.percentile(s, 5), fmt.percentile(s, 95)


# At most this many labelled sizes on a size axis: an op figure's axes are each under half the
# figure wide, and a LogLocator(base=4) over 4 KiB..16 MiB put 7 labels there ("16 KiB" and
# "256 KiB" ran into each other).
MAX_SIZE_TICKS = 5
# Tick spacings, in powers of 2: every size, every 4x, 16x, 32x, 1024x (B, KiB, MiB, GiB)...
SIZE_TICK_STEPS = (1, 2, 4, 5, 10, 20, 30)


def size_ticks(sizes, most=MAX_SIZE_TICKS):
    """The sizes to label on a log-2 size axis spanning `sizes` (bytes > 0): powers of 2 on the
    finest grid of SIZE_TICK_STEPS that gives at most `most` of them ("4 KiB, 64 KiB, 1 MiB,
    16 MiB"), or, when no power of 2 lies in the span (one size, odd sizes), up to `most` of
    the sizes themselves, evenly picked."""
    import math
    pos = sorted({b for b in sizes if b and b > 0})
    if not pos:
        return []
    lo, hi = math.log2(pos[0]), math.log2(pos[-1])
    for step in SIZE_TICK_STEPS:
        first = math.ceil(lo / step - 1e-9) * step
        ticks = [2.0 ** e for e in range(int(first), int(math.floor(hi + 1e-9)) + 1, step)]
        if 0 < len(ticks) <= most:
            return ticks
        if not ticks:
            break
    if len(pos) <= most:
        return [float(b) for b in pos]
    return [float(pos[round(i * (len(pos) - 1) / (most - 1))]) for i in range(most)]


def _size_axis(ax, sizes=()):
    """A log-2 message-size axis labelled at size_ticks(sizes) ("4 KiB", "1 MiB"), minor ticks at
    the powers of 2 between them."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter
    ax.set_xscale("log", base=2)
    ticks = size_ticks(sizes)
    if ticks:
        ax.xaxis.set_major_locator(FixedLocator(ticks))
    else:
        ax.xaxis.set_major_locator(LogLocator(base=4, numticks=MAX_SIZE_TICKS))
    ax.xaxis.set_minor_locator(LogLocator(base=2, numticks=64))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: fmt.size(x) if x >= 1 else ""))
    ax.tick_params(axis="x", labelsize=9)
    ax.set_xlabel("message size per rank")
    ax.grid(True, which="both", alpha=0.3)


# What one sample of an op is (docs/metrics.md, "Point-to-point patterns"): the time axis says
# it, so a windowed pattern's time per message is not read as the time of a whole operation.
PER_MESSAGE_OPS = ("unidir_bw", "bidir_bw", "msg_rate")


def time_axis_label(op):
    """The y label of an op figure's time panel."""
    if op in PER_MESSAGE_OPS:
        return "time per message (µs, mean)"
    if op == "pingpong":
        return "one-way time: half a round trip (µs, mean)"
    return "time per operation (µs, mean)"


# Many series on one axes stay readable when each visual channel carries one dimension: the
# colour says which backend (and memory type, job), the marker which dtype and redop, the line
# style which world size and placement — never a colour cycle that repeats after 10 lines.
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#7f7f7f", "#393b79", "#637939", "#843c39", "#7b4173"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p"]
LINESTYLES = ["-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)),
              (0, (8, 2, 2, 2))]
COLOUR_FIELDS = ("source", "run", "backend", "memory", "staging", "method", "rank_aggregation")
MARKER_FIELDS = ("dtype", "redop", "root")
STYLE_FIELDS = ("world_size", "placement")


def _index(values, v):
    if v not in values:
        values.append(v)
    return values.index(v)


def styles(group):
    """{id(series): (colour, marker, linestyle)} for the series drawn together: one colour per
    backend (with its memory type, job, run), one marker per dtype/redop, one line style per
    world size/placement."""
    colours, markers, lines = [], [], []
    out = {}
    for s in group:
        c = _index(colours, tuple(s[f] for f in COLOUR_FIELDS))
        m = _index(markers, tuple(s[f] for f in MARKER_FIELDS))
        ls = _index(lines, tuple(s[f] for f in STYLE_FIELDS))
        out[id(s)] = (COLOURS[c % len(COLOURS)], MARKERS[m % len(MARKERS)],
                      LINESTYLES[ls % len(LINESTYLES)])
    return out


def legend_outside(fig, handles, labels, axes_bottom=0.14):
    """One legend for the whole figure, below the axes (never over the data): as many columns
    as fit, the axes shrunk to leave it room."""
    if not handles:
        return None
    longest = max(len(t) for t in labels)
    ncol = max(1, min(len(labels), int(110 // max(longest + 4, 10))))
    rows = -(-len(labels) // ncol)
    height = min(0.45, 0.035 * rows + 0.02)
    fig.subplots_adjust(bottom=axes_bottom + height, top=0.88, wspace=0.35)
    return fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7, frameon=False,
                      bbox_to_anchor=(0.5, 0.0))


def op_figure(plt, op, group):
    """Time and busbw against size for the series of one op; returns the matplotlib figure."""
    fig, (ax_t, ax_b) = plt.subplots(1, 2, figsize=FIG_INCHES)
    has_bw = False
    look = styles(group)
    handles, texts = [], []
    for s in group:
        pts = [(r["bytes"], num(r, "time_us", "mean"), num(r, "busbw_gbps"), _band(r))
               for r in s.records if r.get("bytes", 0) > 0]
        text = label(s, group)
        colour, marker, ls = look[id(s)]
        line, = ax_t.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, ms=4,
                          color=colour, linestyle=ls, label=text)
        handles.append(line)
        texts.append(text)
        bands = [(p[0], p[3]) for p in pts if p[3]]
        if len(bands) >= 1:
            ax_t.fill_between([b[0] for b in bands], [b[1][0] for b in bands],
                              [b[1][1] for b in bands], color=colour, alpha=0.12, linewidth=0)
        bw = [(p[0], p[2], p[1], p[3]) for p in pts if p[2] and p[2] > 0]
        if bw:
            has_bw = True
            ax_b.plot([b[0] for b in bw], [b[1] for b in bw], marker=marker, ms=4,
                      color=colour, linestyle=ls, label=text)
            # busbw is bytes over the mean time: the band is the same formula at p95 and p5.
            bb = [b for b in bw if b[3] and b[3][0] > 0]
            if bb:
                ax_b.fill_between([b[0] for b in bb], [b[1] * b[2] / b[3][1] for b in bb],
                                  [b[1] * b[2] / b[3][0] for b in bb],
                                  color=colour, alpha=0.12, linewidth=0)
    sizes = [b for s in group for b in s.sizes]
    for ax in (ax_t, ax_b):
        _size_axis(ax, sizes)
        ax.set_yscale("log")
    ax_t.set_ylabel(time_axis_label(op))
    ax_t.set_title("time per message" if op in PER_MESSAGE_OPS else "time", fontsize=10)
    ax_b.set_ylabel("bus bandwidth (GB/s)")
    ax_b.set_title("busbw" if has_bw else "busbw (0 for this op / world size)", fontsize=10)
    fig.suptitle(f"{op}: time and bus bandwidth vs size (band: p5–p95 of iterations)",
                 fontsize=11)
    legend_outside(fig, handles, texts)
    return fig


def op_figures(plt, jobs, out_dir, written):
    """Per op: time and busbw against size, one line per series, p5–p95 band from the samples."""
    all_series = series_of(jobs)
    ops = []
    for s in all_series:
        if s["op"] not in ops:
            ops.append(s["op"])
    for op in ops:
        group = [s for s in all_series if s["op"] == op and any(b > 0 for b in s.sizes)
                 and not s["variant"]]
        if not group:
            continue  # barrier: no size axis; workloads: their steps' figure
        fig = op_figure(plt, op, group)
        _save(plt, fig, out_dir, slug("op", op), f"{op}: time and busbw against size", "op",
              written)


def scaling_amount(e):
    """What stays fixed along a scaling line: '1 MiB per rank', '4 MiB in total', 'batch 8 per
    rank', 'global batch 64'."""
    weak = e.get("mode", "weak") == "weak"
    if e.get("throughput") == "samples_per_s":
        return f"batch {e.get('batch_size')} per rank" if weak else f"global batch {e.get('batch_size')}"
    return fmt.size(e.get("bytes", 0)) + (" per rank" if weak else " in total")


SCALING_LABEL_FIELDS = ("run", "backend", "workload", "dtype", "redop", "placement", "memory", "mode")


def scaling_lines(jobs):
    """{op: [(label, entry)]}: the lines of the scaling figures, one per configuration of
    summary.json's `scaling` (series.scaling_entries), labelled by what differs between the lines
    of one figure (the job when several are shown) and what stays fixed along each."""
    by_op = {}
    for j in jobs:
        for e in scaling_entries(j):
            by_op.setdefault(e.get("op"), []).append((j.label, dict(e, _source=j.label)))
    out = {}
    for op, group in by_op.items():
        varying = [f for f in SCALING_LABEL_FIELDS
                   if f == "backend" or len({str(e.get(f)) for _, e in group}) > 1]
        lines = []
        for source, e in group:
            words = ([source] if len(jobs) > 1 else []) + [
                str(e[f]) if f != "mode" else f"{e[f]} scaling"
                for f in varying if e.get(f) not in (None, "")]
            lines.append((", ".join(words) + f", {scaling_amount(e)}", e))
        out[op] = lines
    return out


def scaling_looks(entries, sources=None):
    """matplotlib line keywords per scaling entry: the colour says who ran it (job, run, backend,
    memory), the marker the data (dtype, redop), the line style the mode, placement and workload
    variant (overlap on and off never look alike). `sources`: each entry's job, when several."""
    colours, markers, styles_ = [], [], []
    out = []
    for i, e in enumerate(entries):
        source = sources[i] if sources else None
        c = _index(colours, (source, e.get("run"), e.get("backend"), e.get("memory")))
        m = _index(markers, (e.get("dtype"), e.get("redop")))
        ls = _index(styles_, (e.get("mode"), e.get("placement"), e.get("workload")))
        out.append(dict(color=COLOURS[c % len(COLOURS)], marker=MARKERS[m % len(MARKERS)],
                        linestyle=LINESTYLES[ls % len(LINESTYLES)]))
    return out


def scaling_figures(plt, jobs, out_dir, written):
    """Per op run at several world sizes: throughput and scaling efficiency against world size,
    the numbers the job computed (summary.json `scaling`: weak, strong and workload runs each by
    their own formula), one line per configuration at its largest size."""
    for op, lines in scaling_lines(jobs).items():
        fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=FIG_INCHES)
        handles, texts, worlds = [], [], set()
        workload = any(e.get("throughput") == "samples_per_s" for _, e in lines)
        looks = scaling_looks([e for _, e in lines], [e.get("_source") for _, e in lines])
        for (text, e), look in zip(lines, looks):
            pts = sorted(e["points"], key=lambda p: p.get("world_size", 0))
            xs = [p["world_size"] for p in pts]
            worlds.update(xs)
            tp = [p.get("samples_per_s") if workload else p.get("throughput_gbps") for p in pts]
            line, = ax_t.plot(xs, tp, **look)
            ax_e.plot(xs, [100 * p["efficiency"] for p in pts], **look)
            handles.append(line)
            texts.append(text)
        ax_e.axhline(100, color="#7f7f7f", linewidth=0.8, linestyle=":")
        ax_t.set_ylabel("throughput (samples/s)" if workload else "throughput (GB/s)")
        ax_e.set_ylabel("scaling efficiency (%)")
        ax_e.set_ylim(bottom=0)
        for ax in (ax_t, ax_e):
            ax.set_xlabel("world size (ranks)")
            ax.set_xticks(sorted(worlds))
            ax.grid(True, alpha=0.3)
        fig.suptitle(f"{op}: scaling with world size (efficiency against the smallest)", fontsize=11)
        legend_outside(fig, handles, texts)
        _save(plt, fig, out_dir, slug("scaling", op), f"{op}: throughput and scaling efficiency "
              "against world size", "scaling", written)


def draw_all(jobs, out_dir):
    """Writes every figure under plots/ of `out_dir` (a folder path, or an open
    safe_files.Folder); returns the Figure list in report order."""
    # The workload and per-rank figures build on this module's axes and files: imported here.
    from .plots_ranks import pair_figures, straggler_figures
    from .plots_workload import workload_figure
    plt = require_matplotlib()
    if isinstance(out_dir, Folder):
        out = contextlib.nullcontext(out_dir)
    else:
        out = Folder.open(out_dir)
    written = []
    with out as o:
        op_figures(plt, jobs, o, written)
        workload_figure(plt, jobs, o, written)
        scaling_figures(plt, jobs, o, written)
        pair_figures(plt, jobs, o, written)
        straggler_figures(plt, jobs, o, written)
    return written
