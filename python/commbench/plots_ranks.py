"""The report's per-rank figures: all_pairs heat maps (src x dst bandwidth and latency) and
stragglers (each rank's mean time over the median rank's); plots.py draws them."""
import statistics

from . import fmt
from .analysis import straggler_means
from .load import num
from .plots import FIG_INCHES, _save, slug
from .series import pairs


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
