"""The report's figures, drawn with matplotlib into PNG and SVG files.

Every figure has the same pixel size (FIG_INCHES x DPI = 800 x 500 PNG pixels) so reports line up
and tests can check it. matplotlib is imported only here; `require_matplotlib()` turns its absence
into a message naming the Debian package.
"""
import contextlib
import io
import os
import re
import statistics

from . import fmt
from .analysis import straggler_means
from .load import num
from .safe_files import Folder
from .series import label, pairs, scaling_entries, series_of

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


def workload_bars(jobs):
    """(label, compute p50 ms, exposed communication ms, step p50 ms, samples/s) per measured
    workload record, labelled by what differs between them."""
    recs = [(j, r) for j in jobs for r in j.cases
            if isinstance(r.get("workload"), dict) and r.get("status") == "ok"]
    fields = {
        "job": lambda j, r: j.label, "run": lambda j, r: r.get("run"),
        "backend": lambda j, r: r.get("backend"),
        "ranks": lambda j, r: fmt.ranks(r.get("world_size")),
        "model": lambda j, r: f"{r['workload'].get('model')} {r['workload'].get('sharding')}",
        "batch": lambda j, r: f"batch {r['workload'].get('batch_size')}",
        "overlap": lambda j, r: "overlap " + ("on" if r["workload"].get("overlap") else "off")}
    varying = [f for f, get in fields.items()
               if f in ("backend", "ranks", "overlap") or len({get(j, r) for j, r in recs}) > 1]
    out = []
    for j, r in recs:
        w = r["workload"]
        ms = lambda k: (w.get(k) or {}).get("p50")  # noqa: E731
        out.append((", ".join(str(fields[f](j, r)) for f in varying), ms("compute_ms") or 0.0,
                    w.get("exposed_comm_ms") or 0.0, ms("step_ms"), w.get("samples_per_s")))
    return out


def wrap_label(text, width):
    """`text` broken at its ", " separators into lines of at most `width` characters where it
    can be (a single part longer than that keeps its own line)."""
    lines = []
    for part in text.split(", "):
        if lines and len(lines[-1]) + 2 + len(part) <= width:
            lines[-1] += ", " + part
        else:
            lines.append(part)
    return "\n".join(lines)


# The most of the figure's width the y labels may take (the bars keep the rest).
MAX_LABEL_FRACTION = 0.45


def _widest_ytick(fig, ax):
    """(widest, tallest) y tick label in pixels, as drawn."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(r) for t in ax.get_yticklabels() if t.get_text()]
    return (max((b.width for b in boxes), default=0.0), max((b.height for b in boxes), default=0.0))


def fit_left_labels(fig, ax, labels, fontsize=7, pad_px=16):
    """Moves the axes' left edge right so that its y tick labels ("train-small-ddp, gloo, 1 rank,
    overlap on") fit inside the figure, which keeps its pixel size (no bbox_inches="tight").
    Labels wider than MAX_LABEL_FRACTION of the figure are wrapped at their commas, narrower
    and narrower, then set smaller, until they fit beside the bars and above each other (where
    nothing fits: the narrowest of those that do not overlap each other, the axes moved as far
    right as it takes). Returns the left edge, a fraction of the figure's width."""
    width_px = fig.get_figwidth() * fig.dpi
    longest = max((len(t) for t in labels), default=0)
    ticks = list(ax.get_yticks())
    tries = [(w, size) for size in (fontsize, fontsize - 1, fontsize - 2)
             for w in (None, 48, 40, 32, 26, 20) if w is None or w < longest]
    fig.subplots_adjust(left=MAX_LABEL_FRACTION)   # the narrowest the axes will be
    spacing = ax.get_window_extent().height / max(len(labels), 1)
    best = None
    for width, size in tries:
        ax.set_yticks(ticks)
        ax.set_yticklabels([t if width is None else wrap_label(t, width) for t in labels],
                           fontsize=size)
        widest, tallest = _widest_ytick(fig, ax)
        need = (widest + pad_px) / width_px
        if tallest <= spacing and (best is None or need < best[0]):
            best = (need, width, size)
        if need <= MAX_LABEL_FRACTION and tallest <= spacing:
            break
    else:
        if best is not None:
            need, width, size = best
            ax.set_yticks(ticks)
            ax.set_yticklabels([t if width is None else wrap_label(t, width) for t in labels],
                               fontsize=size)
    left = min(0.7, max(0.125, need))
    fig.subplots_adjust(left=left, right=max(0.9, min(0.97, left + 0.25)))
    return left


def workload_figure(plt, jobs, out_dir, written):
    """data_parallel steps: per record, the compute and the communication the compute did not
    hide (exposed), stacked, with the whole step's p50 marked and samples/s beside it."""
    bars = workload_bars(jobs)
    if not bars:
        return
    fig = workload_steps_figure(plt, bars)
    _save(plt, fig, out_dir, "workload-steps", "data_parallel: step time, compute and exposed "
          "communication per configuration", "workload", written)


def workload_steps_figure(plt, bars):
    """The figure of workload_figure for `bars` (workload_bars), its labels fitted beside it."""
    fig, ax = plt.subplots(figsize=FIG_INCHES)
    ys = list(range(len(bars)))[::-1]
    compute = [b[1] for b in bars]
    exposed = [b[2] for b in bars]
    ax.barh(ys, compute, color=COLOURS[0], label="compute (p50)")
    ax.barh(ys, exposed, left=compute, color=COLOURS[1], label="exposed communication")
    ax.plot([b[3] for b in bars], ys, "k|", markersize=14, label="whole step (p50)")
    for y, b in zip(ys, bars):
        if b[4]:
            ax.annotate(f"{fmt.num(b[4])} samples/s", (max(b[1] + b[2], b[3] or 0), y),
                        xytext=(6, 0), textcoords="offset points", va="center", fontsize=7)
    ax.set_yticks(ys)
    ax.set_yticklabels([b[0] for b in bars], fontsize=7)
    ax.set_xlabel("milliseconds per step")
    ax.margins(x=0.25)
    ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle("data_parallel: step time, compute and exposed communication", fontsize=11)
    handles, texts = ax.get_legend_handles_labels()
    legend_outside(fig, handles, texts)
    fit_left_labels(fig, ax, [b[0] for b in bars])
    return fig


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


def pair_matrix(records, world):
    """src x dst matrices of bandwidth (GB/s, from the mean) and p50 latency (µs); None where a
    pair was not measured."""
    bw = [[None] * world for _ in range(world)]
    lat = [[None] * world for _ in range(world)]
    for r in records:
        s, d = r.get("src", -1), r.get("dst", -1)
        if 0 <= s < world and 0 <= d < world and r.get("status") == "ok":
            bw[s][d] = num(r, "algbw_gbps")
            lat[s][d] = num(r, "time_us", "p50")
    return bw, lat


def pair_figures(plt, jobs, out_dir, written):
    """all_pairs: per size, heat maps of bandwidth and p50 latency, src rows x dst columns."""
    import numpy as np
    groups = pairs(jobs)
    many_sources = len({k[0] for k in groups}) > 1
    dtypes = len({k[6] for k in groups}) > 1  # each dtype its own figure, named so
    for (source, run, backend, memory, world, nbytes, dtype), recs in groups.items():
        if not world:
            continue
        bw, lat = pair_matrix(recs, world)
        fig, axes = plt.subplots(1, 2, figsize=FIG_INCHES)
        for ax, m, title, cmap in ((axes[0], bw, "bandwidth (GB/s, mean)", "viridis"),
                                   (axes[1], lat, "latency (µs, p50)", "magma_r")):
            a = np.array([[np.nan if v is None else v for v in row] for row in m], dtype=float)
            im = ax.imshow(np.ma.masked_invalid(a), cmap=cmap)
            fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
            ax.set_title(title, fontsize=10)
            ax.set_xlabel("dst rank")
            ax.set_ylabel("src rank")
            ax.set_xticks(range(world))
            ax.set_yticks(range(world))
            if world <= 8:
                for i in range(world):
                    for j in range(world):
                        if m[i][j] is not None:
                            ax.text(j, i, fmt.num(m[i][j]), ha="center", va="center",
                                    fontsize=7, color="white",
                                    bbox=dict(boxstyle="round,pad=0.1", fc="black", alpha=0.4,
                                              lw=0))
        where = f"{source}: " if many_sources else ""
        which = f" {dtype}" if dtypes else ""
        fig.suptitle(f"{where}all_pairs {backend} ({memory}), {world} ranks, {fmt.size(nbytes)}{which}",
                     fontsize=11)
        fig.tight_layout()
        _save(plt, fig, out_dir,
              slug("pairs", source if many_sources else "", run, backend, memory, f"w{world}",
                   f"{nbytes}B", dtype if dtypes else ""),
              f"all_pairs {backend} {world} ranks {fmt.size(nbytes)}{which}: src × dst", "pairs", written)


def straggler_rows(records, world):
    """(case label, [rank mean / median of the participating ranks' means]) per measured case
    with one mean per rank and at least 2 ranks that took part; values above 1 mark ranks slower
    than the typical rank. A rank that took no part (analysis.rank_means: its mean is 0, or it is
    not one of a two-peer pattern's `peers`) is NaN, no data, rather than 0 (the fastest)."""
    rows = []
    for r in records:
        if r.get("world_size") != world:
            continue
        part = straggler_means(r)
        if part is None:
            continue
        med = statistics.median(x for _, x in part)
        if med <= 0:
            continue
        ratios = [float("nan")] * world
        for i, x in part:
            ratios[i] = x / med
        rows.append((f"{r.get('op')} {fmt.size(r.get('bytes', 0))}", ratios))
    return rows


def straggler_figures(plt, jobs, out_dir, written):
    """Per execution with 2+ ranks: each rank's own mean time over the median rank's, per case."""
    import numpy as np
    for j in jobs:
        execs = {}
        for c in j.cases:
            # One figure per execution: with `repeats`, each repeat is an execution of its own
            # (pooled, a case's repeats overwrote each other's column).
            key = (c.get("run"), c.get("backend"), c.get("memory"), c.get("world_size"), c.get("repeat") or 0)
            execs.setdefault(key, []).append(c)
        repeated = any(k[4] for k in execs)
        for (run, backend, memory, world, repeat), recs in execs.items():
            if not world or world < 2:
                continue
            which = f", repeat {repeat + 1}" if repeated else ""
            rows = straggler_rows(recs, world)
            if not rows:
                continue
            a = np.array([v for _, v in rows], dtype=float).T  # ranks x cases
            fig, ax = plt.subplots(figsize=FIG_INCHES)
            spread = max(0.05, float(np.nanmax(np.abs(a - 1.0))))
            # Ranks that took no part in a case are NaN: blank cells, no colour, no number.
            cmap = plt.get_cmap("coolwarm").copy()
            cmap.set_bad("white", 0.0)
            im = ax.imshow(np.ma.masked_invalid(a), cmap=cmap, vmin=1 - spread, vmax=1 + spread,
                           aspect="auto")
            fig.colorbar(im, ax=ax, label="rank mean / median of participating ranks (blank: no part)")
            ax.set_yticks(range(world))
            ax.set_ylabel("rank")
            ax.set_xticks(range(len(rows)))
            ax.set_xticklabels([t for t, _ in rows], rotation=60, ha="right", fontsize=7)
            if world * len(rows) <= 160:
                for x in range(len(rows)):
                    for y in range(world):
                        if not np.isnan(a[y, x]):
                            ax.text(x, y, f"{a[y, x]:.2f}", ha="center", va="center", fontsize=6)
            ax.set_title(f"{j.label}: {run} {backend} ({memory}), {world} ranks{which} — each rank's "
                         "mean time per case", fontsize=9)
            fig.tight_layout()
            parts = ["stragglers", j.label, run, backend, memory, f"w{world}"] + ([f"r{repeat + 1}"] if repeated else [])
            _save(plt, fig, out_dir, slug(*parts),
                  f"stragglers: {run} {backend} {world} ranks{which} (rank_mean_us)", "stragglers",
                  written)


def draw_all(jobs, out_dir):
    """Writes every figure under plots/ of `out_dir` (a folder path, or an open
    safe_files.Folder); returns the Figure list in report order."""
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
