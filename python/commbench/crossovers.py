"""The analysis' comparisons of configurations (analysis.md, "Backends and memory types
compared"): series that share every dimension but the backend, memory type, job, run or a
workload's overlap, compared size by size — which is faster beyond noise (noise.py), where one
overtakes the other, and where the repeats were too few to decide."""
from . import fmt, noise
from .load import num
from .series import label


# Series compared size by size: the same op, world size, dtype, redop, placement, root, method,
# rank aggregation and workload (model, sharding, batch) — only the backend, memory, job, run or
# a workload's overlap may differ.
COMPARABLE = ("op", "world_size", "dtype", "redop", "placement", "root", "method",
              "rank_aggregation", "variant")


def _where(s):
    """Every dimension the compared series share, in words."""
    parts = [s["op"]]
    parts += [str(s[f]) for f in ("dtype", "redop") if s[f]]
    if s["placement"] == "in_place":
        parts.append("in-place")
    if s["root"] not in (None, 0) and s["op"] in ("broadcast", "reduce", "gather", "scatter"):
        parts.append(f"root {s['root']}")
    if s["method"]:
        parts.append(f"method {s['method']}" + (f"/{s['rank_aggregation']}"
                                                if s["rank_aggregation"] else ""))
    w = s["world_size"]
    return " ".join(parts) + f", {w} rank" + ("" if w == 1 else "s")


def _cv_words(recs):
    cvs = [num(r, "time_us", "cv") for r in recs]
    cvs = [c for c in cvs if c is not None]
    return f"CV up to {fmt.pct(max(cvs))}" if cvs else "no spread recorded"


def _pair_sentence(where, la, lb, a, b, note):
    ra = {r["bytes"]: r for r in a.records}
    rb = {r["bytes"]: r for r in b.records}
    common = sorted(k for k in ra if k in rb)
    if not common:
        return None
    verdicts = [(k, noise.faster(ra[k], rb[k])) for k in common]
    real = [(k, v) for k, v in verdicts if v]
    name = {"a": la, "b": lb}
    # Sizes where one side won every repeat but too few repeats let the test decide: said as
    # such, never as noise.
    undecided = {k: u for k, v in verdicts if not v
                 for u in [noise.unresolved_by_repeats(ra[k], rb[k])] if u}
    noisy = [k for k, v in verdicts if not v and k not in undecided]
    within = (f"; at {len(noisy)} of {len(common)} sizes the difference is within noise "
              f"({_cv_words([ra[k] for k in noisy] + [rb[k] for k in noisy])})" if noisy else "")
    if undecided:
        sides = {u[0] for u in undecided.values()}
        who = name[next(iter(sides))] if len(sides) == 1 else "one side"
        n = min(u[1] for u in undecided.values())
        within += (f"; at {len(undecided)} of {len(common)} sizes {who} was faster in every repeat, "
                   f"but {n} repeats per side were too few for the test to establish it "
                   f"(p ≥ {noise.ALPHA:g}; more repeats can)")
    if not real and not undecided:
        return (f"{where}: {la} and {lb} differ by no more than noise can explain at any of the "
                f"{len(common)} common sizes ({_cv_words([ra[k] for k in common] + [rb[k] for k in common])}){note}.")
    if not real:
        return f"{where}: {la} and {lb}: no difference established{within.replace('; at', ': at', 1)}{note}."
    ratio = {k: (num(rb[k], "time_us", "mean") / num(ra[k], "time_us", "mean")) if v == "a"
             else (num(ra[k], "time_us", "mean") / num(rb[k], "time_us", "mean"))
             for k, v in real}
    if len({v for _, v in real}) == 1:
        w = real[0][1]
        rs = [ratio[k] for k, _ in real]
        lo, hi = fmt.ratio(min(rs)), fmt.ratio(max(rs))
        span = lo if lo == hi else f"{lo} to {hi}"
        # "all" only when every common size was established: an undecided size is not one.
        at = f"all {len(common)} common sizes" if len(real) == len(common) else \
            f"{len(real)} of {len(common)} common sizes"
        other = lb if w == "a" else la
        return (f"{where}: {name[w]} is faster than {other} at {at}, by {span} (time ratio)"
                f"{within}{note}.")
    changes = []
    for (k0, v0), (k1, v1) in zip(real, real[1:]):
        if v0 != v1:
            t_w = num((ra if v1 == "a" else rb)[k1], "time_us", "mean")
            t_l = num((rb if v1 == "a" else ra)[k1], "time_us", "mean")
            changes.append(f"{name[v1]} takes the lead by {fmt.size(k1)} ({fmt.num(t_w)} µs vs "
                           f"{fmt.num(t_l)} µs; at {fmt.size(k0)} it was slower, beyond noise)")
    return (f"{where}: {name[real[0][1]]} is faster at {fmt.size(real[0][0])}; "
            + "; ".join(changes) + f"{within}{note}.")


def compared_series(all_series):
    """(group, a, b) for every two series the analysis compares: the same COMPARABLE values."""
    groups = {}
    for s in all_series:
        groups.setdefault(tuple(s[f] for f in COMPARABLE), []).append(s)
    for group in groups.values():
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                yield group, group[i], group[j]


def compared_records(all_series):
    """(record a, record b) for every size two compared series share: each comparison
    noise.faster() judges, for the sentence that says by which rule (noise.describe_rule)."""
    out = []
    for _, a, b in compared_series(all_series):
        rb = {r["bytes"]: r for r in b.records}
        out += [(r, rb[r["bytes"]]) for r in a.records if r["bytes"] in rb]
    return out


def crossovers(all_series):
    """Sentences on which configuration is faster, and where one overtakes another — each claim
    only where noise cannot explain it (noise.py)."""
    out = []
    for group, a, b in compared_series(all_series):
        never = COMPARABLE
        la, lb = label(a, group, never=never), label(b, group, never=never)
        note = f" (different memory: {a['memory']} vs {b['memory']})" \
            if a["memory"] != b["memory"] else ""
        text = _pair_sentence(_where(a), la, lb, a, b, note)
        if text:
            out.append(text)
    return out
