"""The report's data_parallel figure: per configuration, the step's compute and the
communication it did not hide, with labels fitted beside the bars (plots.py draws it)."""
from . import fmt
from .plots import COLOURS, FIG_INCHES, _save, legend_outside


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
