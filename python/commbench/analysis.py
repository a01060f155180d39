"""The analysis in words (seed 001's analysis.txt): plain sentences, every number taken from the
records. Nothing is said that the data cannot show: a sentence is left out when its inputs are
missing (no small sizes, one backend only, one world size only, no samples...)."""
import statistics

from . import fmt
from .load import num
from .series import SERIES_FIELDS, label, pairs, series_of

SMALL_BYTES = 64 * 1024   # "small message": up to 64 KiB per rank
HIGH_CV = 0.05            # the console's CV warning threshold (docs/output.md)
STRAGGLER_RATIO = 1.10    # a rank 10 % slower than the median rank


def floor(series):
    """(time µs, bytes) of the lowest mean time among the small sizes, None without any."""
    pts = [(num(r, "time_us", "mean"), r.get("bytes", 0)) for r in series.records
           if 0 < r.get("bytes", 0) <= SMALL_BYTES]
    pts = [p for p in pts if p[0] is not None]
    return min(pts) if pts else None


def peak(series):
    """(busbw, bytes) of the highest busbw, None when busbw is 0 everywhere (barrier, 1 rank)."""
    pts = [(num(r, "busbw_gbps"), r.get("bytes", 0)) for r in series.records]
    pts = [p for p in pts if p[0] is not None and p[0] > 0]
    if not pts:
        return None
    return max(pts, key=lambda p: (p[0], -p[1]))


def reach(series, fraction, peak_bw):
    """The smallest size whose busbw is at least `fraction` of the peak."""
    for r in series.records:
        bw = num(r, "busbw_gbps")
        if bw is not None and bw >= fraction * peak_bw:
            return r.get("bytes", 0)
    return None


def series_sentence(s, group):
    same_op = [g for g in group if g["op"] == s["op"]]
    always = ("backend", "world_size") + (("source",) if len({g["source"] for g in group}) > 1
                                          else ())
    head = f"**{s['op']}, {label(s, same_op, always=always)}**"
    parts = []
    fl = floor(s)
    if fl:
        parts.append(f"small-message latency floor {fmt.num(fl[0])} µs (lowest mean time up to "
                     f"{fmt.size(SMALL_BYTES)}, at {fmt.size(fl[1])})")
    pk = peak(s)
    if pk:
        largest = max(s.sizes)
        where = " — the largest size measured, so the peak may lie beyond it" \
            if pk[1] == largest and len(s.sizes) > 1 else ""
        parts.append(f"peak busbw {fmt.num(pk[0])} GB/s at {fmt.size(pk[1])}{where}")
        r50, r90 = reach(s, 0.5, pk[0]), reach(s, 0.9, pk[0])
        parts.append(f"50 % of the peak first at {fmt.size(r50)}, 90 % at {fmt.size(r90)}")
    if not parts:
        return None
    return f"{head}: " + "; ".join(parts) + f" ({len(s.records)} sizes)."


def _comparable_key(s):
    """Series that can be compared size by size: same op, world size, dtype, redop, placement."""
    return (s["op"], s["world_size"], s["dtype"], s["redop"], s["placement"], s["root"])


def crossovers(all_series):
    """Sentences on which configuration is faster, and where one overtakes another."""
    out = []
    groups = {}
    for s in all_series:
        groups.setdefault(_comparable_key(s), []).append(s)
    for key, group in groups.items():
        if len(group) < 2:
            continue
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                a, b = group[i], group[j]
                ta = {r["bytes"]: num(r, "time_us", "mean") for r in a.records}
                tb = {r["bytes"]: num(r, "time_us", "mean") for r in b.records}
                common = sorted(k for k in ta if k in tb and ta[k] and tb[k])
                if not common:
                    continue
                la, lb = label(a, group, never=("world_size",)), label(b, group, never=("world_size",))
                if a["memory"] != b["memory"]:
                    note = f" (different memory: {a['memory']} vs {b['memory']})"
                else:
                    note = ""
                where = f"{key[0]}, {key[1]} rank" + ("" if key[1] == 1 else "s")
                faster = ["a" if ta[k] < tb[k] else "b" for k in common]
                if len(set(faster)) == 1:
                    win, lose, tw, tl = (la, lb, ta, tb) if faster[0] == "a" else (lb, la, tb, ta)
                    ratios = [tl[k] / tw[k] for k in common]
                    out.append(f"{where}: {win} is faster than {lose} at all {len(common)} common "
                               f"sizes, by {fmt.ratio(min(ratios))} to {fmt.ratio(max(ratios))} "
                               f"(time ratio){note}.")
                    continue
                changes = []
                for k0, k1, f0, f1 in zip(common, common[1:], faster, faster[1:]):
                    if f0 != f1:
                        win = la if f1 == "a" else lb
                        t_w, t_l = (ta[k1], tb[k1]) if f1 == "a" else (tb[k1], ta[k1])
                        changes.append(f"{win} takes the lead from {fmt.size(k1)} "
                                       f"({fmt.num(t_w)} µs vs {fmt.num(t_l)} µs; at "
                                       f"{fmt.size(k0)} it was behind)")
                first = la if faster[0] == "a" else lb
                out.append(f"{where}: {first} is faster at {fmt.size(common[0])}; "
                           + "; ".join(changes) + f"{note}.")
    return out


def scaling(all_series):
    """Weak-scaling efficiency (fixed bytes per rank): throughput_N = N × bytes / time_N and
    efficiency = (throughput_N / throughput_base) / (N / base), base = smallest world size."""
    out = []
    configs = {}
    for s in all_series:
        k = tuple(s[f] for f in SERIES_FIELDS if f != "world_size")
        configs.setdefault(k, []).append(s)
    for k, ss in configs.items():
        if len(ss) < 2:
            continue
        common = set.intersection(*(set(s.sizes) for s in ss))
        common.discard(0)
        if not common:
            continue
        size = max(common)
        ss = sorted(ss, key=lambda s: s["world_size"])
        base = ss[0]
        tb = next(num(r, "time_us", "mean") for r in base.records if r["bytes"] == size)
        effs = []
        for s in ss[1:]:
            t = next(num(r, "time_us", "mean") for r in s.records if r["bytes"] == size)
            if not t or not tb:
                continue
            n, b = s["world_size"], base["world_size"]
            eff = ((n * size / t) / (b * size / tb)) / (n / b)
            effs.append(f"{n} ranks {fmt.pct(eff)}")
        if effs:
            out.append(f"**{base['op']}, {label(base, all_series, never=('world_size', 'op', 'redop'))}** at {fmt.size(size)} per rank, "
                       f"relative to {base['world_size']} rank(s): " + ", ".join(effs)
                       + " (efficiency = (throughput_N / throughput_base) / (N / base), "
                       "throughput = ranks × bytes / mean time).")
    return out


def quality(jobs):
    """Failed checks, failed/unsupported cases, not-ok executions, high CV."""
    out = []
    for j in jobs:
        for e in j.executions:
            if e.get("status") not in (None, "ok"):
                rank = e.get("failed_rank", -1)
                who = f" (rank {rank})" if isinstance(rank, int) and rank >= 0 else ""
                out.append(f"Execution {e.get('run')} {e.get('backend')} {e.get('world_size')} "
                           f"ranks in {j.label}: {e.get('status')}{who} — {e.get('reason', '')}")
    cases = [(j.label, c) for j in jobs for c in j.cases]
    wrong = [(lb, c) for lb, c in cases if isinstance(c.get("wrong"), int) and c["wrong"] > 0]
    for lb, c in wrong:
        first = c.get("first_wrong")
        if isinstance(first, dict):
            first = ", ".join(f"{k} {v}" for k, v in first.items())
        extra = f"; first mismatch: {first}" if first else ""
        out.append(f"Check failed: {c.get('op')} {fmt.size(c.get('bytes', 0))} "
                   f"{c.get('backend')} {c.get('world_size')} ranks ({lb}) — {c['wrong']} wrong "
                   f"elements{extra}.")
    failed = [(lb, c) for lb, c in cases if c.get("status") == "failed"]
    for lb, c in failed:
        if c in [w[1] for w in wrong]:
            continue
        out.append(f"Case failed: {c.get('op')} {fmt.size(c.get('bytes', 0))} {c.get('backend')} "
                   f"{c.get('world_size')} ranks ({lb}) — {c.get('reason', '')}.")
    checked = [c for _, c in cases if isinstance(c.get("wrong"), int) and c["wrong"] >= 0]
    if checked and not wrong:
        out.append(f"All {len(checked)} checked cases returned correct results (#wrong 0).")
    unsupported = [c for _, c in cases if c.get("status") == "unsupported"]
    if unsupported:
        out.append(f"{len(unsupported)} case(s) unsupported by their backend, e.g. "
                   f"{unsupported[0].get('op')} on {unsupported[0].get('backend')}: "
                   f"{unsupported[0].get('reason', '')}.")
    ok = [(lb, c) for lb, c in cases if c.get("status") == "ok"
          and num(c, "time_us", "cv") is not None]
    noisy = sorted(((num(c, "time_us", "cv"), lb, c) for lb, c in ok
                    if num(c, "time_us", "cv") > HIGH_CV), key=lambda t: -t[0])
    if noisy:
        cv, lb, c = noisy[0]
        out.append(f"{len(noisy)} of {len(ok)} measured cases have a CV above "
                   f"{fmt.pct(HIGH_CV)}; the highest is {c.get('op')} {fmt.size(c.get('bytes', 0))} "
                   f"{c.get('backend')} {c.get('world_size')} ranks at {fmt.pct(cv)} — more "
                   "iterations or a quieter machine would narrow them.")
    elif ok:
        out.append(f"All {len(ok)} measured cases have a CV of at most {fmt.pct(HIGH_CV)}.")
    return out


def stragglers(jobs):
    """Per execution: the rank that most often has the highest own mean time, when it is
    STRAGGLER_RATIO above the median rank in at least half of the cases."""
    out = []
    for j in jobs:
        execs = {}
        for c in j.cases:
            if c.get("status") != "ok" or c.get("op") == "all_pairs":
                continue
            m = c.get("rank_mean_us") or []
            if len(m) < 2 or len(m) != c.get("world_size") or \
                    not all(isinstance(x, (int, float)) for x in m):
                continue
            execs.setdefault((c.get("run"), c.get("backend"), c.get("world_size")), []).append(m)
        for (run, backend, world), rows in execs.items():
            counts = {}
            worst = {}
            for m in rows:
                med = statistics.median(m)
                if med <= 0:
                    continue
                r = max(range(len(m)), key=lambda i: m[i])
                ratio = m[r] / med
                if ratio >= STRAGGLER_RATIO:
                    counts[r] = counts.get(r, 0) + 1
                    worst[r] = max(worst.get(r, 0), ratio)
            if not counts:
                continue
            r = max(counts, key=lambda k: counts[k])
            if counts[r] * 2 >= len(rows):
                out.append(f"{run} {backend} {world} ranks ({j.label}): rank {r} is the slowest "
                           f"rank, at least {fmt.pct(STRAGGLER_RATIO - 1)} above the median rank, "
                           f"in {counts[r]} of {len(rows)} cases (up to "
                           f"{fmt.ratio(worst[r])} the median; rank_mean_us).")
    return out


def links(jobs):
    """all_pairs: per size the fastest and slowest directed pair by bandwidth."""
    out = []
    for (source, run, backend, memory, world, nbytes), recs in pairs(jobs).items():
        bw = [(num(r, "algbw_gbps"), r.get("src"), r.get("dst")) for r in recs
              if r.get("status") == "ok" and num(r, "algbw_gbps")]
        if len(bw) < 2:
            continue
        lo, hi = min(bw), max(bw)
        med = statistics.median(b[0] for b in bw)
        out.append(f"all_pairs {backend} {world} ranks, {fmt.size(nbytes)}: fastest pair "
                   f"{hi[1]}→{hi[2]} {fmt.num(hi[0])} GB/s, slowest {lo[1]}→{lo[2]} "
                   f"{fmt.num(lo[0])} GB/s ({fmt.ratio(lo[0] / med)} the median pair, "
                   f"{fmt.num(med)} GB/s; {len(bw)} pairs).")
    return out


def analyse(jobs):
    """[(section title, [sentences])], sections without sentences left out."""
    all_series = series_of(jobs)
    per = [t for t in (series_sentence(s, all_series) for s in all_series) if t]
    sections = [
        ("Per backend and op", per),
        ("Backends and memory types compared", crossovers(all_series)),
        ("Scaling across world sizes", scaling(all_series)),
        ("Links (all_pairs)", links(jobs)),
        ("Stragglers", stragglers(jobs)),
        ("Result quality", quality(jobs)),
    ]
    return [(t, s) for t, s in sections if s]


def markdown(jobs):
    lines = ["# Analysis", ""]
    names = ", ".join(j.label for j in jobs)
    lines.append(f"From {sum(len(j.cases) for j in jobs)} case records in {names}. Times are the "
                 "mean over iterations of the slowest rank (docs/metrics.md).")
    lines.append("")
    for title, sentences in analyse(jobs):
        lines += [f"## {title}", ""]
        lines += [f"- {s}" for s in sentences]
        lines.append("")
    return "\n".join(lines)


def console(jobs):
    """The same sentences for the end of the console summary: '# ' lines, no Markdown bold."""
    out = ["#", "# Analysis (analysis.md):"]
    for title, sentences in analyse(jobs):
        out.append(f"# {title}:")
        out += [f"#   - {s.replace('**', '')}" for s in sentences]
    return "\n".join(out)
