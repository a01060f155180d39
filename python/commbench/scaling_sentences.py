"""The analysis' scaling sentences: the efficiency each job computed (summary.json `scaling`,
docs/metrics.md), said with the formula of the run's mode."""
from . import fmt
from .series import scaling_entries


_SCALING_FORMULA = {
    ("op", "weak"): "efficiency = time(base) / time(N), the bytes per rank fixed",
    ("op", "strong"): "efficiency = (time(base) / time(N)) × (base / N), the total fixed",
    ("workload", "weak"): "efficiency = (samples/s(N) / samples/s(base)) / (N / base), the batch "
                          "per rank fixed",
    ("workload", "strong"): "efficiency = (step(base) / step(N)) × (base / N), the global batch "
                            "fixed",
}


_GROUP_FIELDS = ("run", "dtype", "redop", "placement", "memory")


def _kind(e):
    return "workload" if e.get("throughput") == "samples_per_s" else "op"


def _subject(e):
    """What a sentence is about before anything else is named: the op (or workload) and backend."""
    kind = _kind(e)
    return kind, e.get("workload") if kind == "workload" else e.get("op"), e.get("backend")


def _differing(jobs):
    """{subject: fields whose values differ between the sentences of that op (or workload) and
    backend, over every job}: two runs of one op and backend (a window of 64 and one of 1) once
    read as two identical sentences with different numbers."""
    values = {}
    for j in jobs:
        if j.summary is None:
            continue
        for e in scaling_entries(j):
            per = values.setdefault(_subject(e), {f: set() for f in _GROUP_FIELDS})
            for f in _GROUP_FIELDS:
                per[f].add(str(e.get(f)))
    return {k: [f for f in _GROUP_FIELDS if len(v[f]) > 1] for k, v in values.items()}


def scaling(jobs):
    """Scaling efficiency as the job computed it (summary.json `scaling`, docs/metrics.md): weak,
    strong and workload runs each by their own formula, so the report says what the console and
    summary.json say. One sentence per configuration, at its largest size measured at every
    world size; where one op (or workload) and backend has several, each names what tells it
    apart — the run, dtype, reduce op, placement or memory — in series.label's order, and the
    job when there are several."""
    differing = _differing(jobs)
    out = []
    for j in jobs:
        if j.summary is None:
            worlds = {c.get("world_size") for c in j.cases if c.get("status") == "ok"}
            if len(worlds) > 1:
                out.append(f"{j.label} did not finish, so it has no scaling table (the job "
                           "computes it into summary.json at the end).")
            continue
        entries = scaling_entries(j)
        for e in entries:
            kind = _kind(e)
            mode = e.get("mode", "weak")
            named = differing.get(_subject(e), [])
            run = [str(e["run"])] if "run" in named and e.get("run") not in (None, "") else []
            if kind == "workload":
                varying = [f for f in named if f != "run" and e.get(f)]
                what = ", ".join([str(e.get("workload"))] + run + [str(e.get("backend"))]
                                 + [str(e[f]) for f in varying])
                amount = (f"batch {e.get('batch_size')} per rank" if mode == "weak"
                          else f"global batch {e.get('batch_size')}")
            else:
                ops = [x for x in entries if x.get("throughput") != "samples_per_s"]
                varying = [f for f in ("dtype", "redop", "placement", "memory")
                           if (len({x.get(f) for x in ops}) > 1 or f in named) and e.get(f)]
                what = ", ".join([e.get("op")] + run + [e.get("backend")]
                                 + [str(e[f]) for f in varying])
                amount = fmt.size(e.get("bytes", 0)) + (" per rank" if mode == "weak" else " in total")
            src = f" in {j.label}" if len(jobs) > 1 else ""
            pts = sorted(e["points"], key=lambda p: p.get("world_size", 0))
            effs = ", ".join(f"{fmt.ranks(p['world_size'])} {fmt.pct(p['efficiency'])}" for p in pts[1:]
                             if p.get("efficiency") is not None)
            formula = _SCALING_FORMULA.get((kind, mode), "docs/metrics.md")
            if kind == "op" and mode == "weak" and e.get("op") == "msg_rate":
                # Its ⌊N/2⌋ pairs do the work, not N ranks (docs/metrics.md): the plain
                # time ratio would overstate it at odd N.
                formula = ("efficiency = (⌊N/2⌋ / ⌊base/2⌋) × (time(base) / time(N)) × (base / N), "
                           "the bytes per pair fixed")
            out.append(f"**{what}**{src}, {mode} scaling of {amount}, relative to "
                       f"{e.get('base_world_size')} rank(s): {effs} ({formula}).")
    return out
