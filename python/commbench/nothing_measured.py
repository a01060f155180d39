"""The analysis' first warning (analysis.md, "Nothing measured"): runs of a job that measured
nothing — every backend unavailable, every case unsupported, every execution failed — said
plainly, where the report would otherwise show no table for them."""
from . import fmt


def _ranks_list(worlds):
    """'2 ranks', '1 and 2 ranks', '1, 2 and 4 ranks'."""
    ws = sorted(set(worlds), key=lambda w: (not isinstance(w, int), w if isinstance(w, int) else 0))
    if len(ws) == 1:
        return fmt.ranks(ws[0])
    return ", ".join(str(w) for w in ws[:-1]) + f" and {ws[-1]} ranks"


def _measured_anything(j, run):
    """Whether run `run` of job `j` has a measured case (all_pairs and workload steps included)
    or a memory record that was measured."""
    return (any(c.get("run") == run and c.get("status") == "ok" for c in j.cases)
            or any(m.get("run") == run and m.get("status", "ok") == "ok" for m in j.memory))


def nothing_measured(jobs):
    """One sentence per run that measured nothing — every backend unavailable, every case
    unsupported, every execution failed — saying so plainly, where the report would otherwise
    show no table for it and the console only counts what was not run."""
    out = []
    for j in jobs:
        runs = []
        for x in list(j.executions) + list(j.cases) + list(j.memory):
            if x.get("run") is not None and x.get("run") not in runs:
                runs.append(x.get("run"))
        whole = runs and not any(_measured_anything(j, r) for r in runs)
        if whole and len(runs) > 1:
            out.append(f"Nothing was measured in {j.label}, in any of its {len(runs)} runs.")
        for run in runs:
            if _measured_anything(j, run):
                continue
            execs = [e for e in j.executions if e.get("run") == run]
            cases = [c for c in j.cases if c.get("run") == run]
            backends = []
            for x in execs + cases:
                if x.get("backend") not in backends:
                    backends.append(x.get("backend"))
            parts, see_quality = [], False
            for b in backends:
                by_status = {}
                for e in execs:
                    if e.get("backend") == b and e.get("status") not in (None, "ok"):
                        by_status.setdefault(e.get("status"), []).append(e.get("world_size"))
                for status, worlds in by_status.items():
                    parts.append(f"{b} was {status} at {_ranks_list(worlds)}")
                    see_quality = True
                mine = [c for c in cases if c.get("backend") == b]
                for status in ("unsupported", "skipped", "failed"):
                    these = [c for c in mine if c.get("status") == status]
                    if not these:
                        continue
                    reasons = []
                    for c in these:
                        if c.get("reason") and c["reason"] not in reasons:
                            reasons.append(c["reason"])
                    why = (f" ({reasons[0]}" + (f"; and {len(reasons) - 1} other reason(s)"
                                                 if len(reasons) > 1 else "") + ")") if reasons else ""
                    every = "its" if len(these) == len(mine) else f"{len(these)} of its"
                    parts.append(f"{every} {fmt.count(len(these), 'case')} on {b} "
                                 f"{'were' if len(these) != 1 else 'was'} {status}{why}")
                if not by_status and not mine:
                    worlds = [e.get("world_size") for e in execs if e.get("backend") == b]
                    parts.append(f"{b} recorded no case at {_ranks_list(worlds)}")
            if whole and len(runs) == 1:
                text = f"Nothing was measured in {j.label} (its one run, {run}): "
            else:
                text = f"Nothing was measured for run {run} in {j.label}: "
            text += "; ".join(parts) + "."
            if see_quality:
                text += " Result quality, below, says why."
            out.append(text)
    return out
