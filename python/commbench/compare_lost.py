"""Which cases NEW lost rather than left out, for `commbench compare` (compare.py): a case the
baseline measured that NEW planned and could not measure — as a whole, or in some of its
repeats — is a regression, with a note saying why (docs/reports.md, "Comparing jobs"). NEW's own
outcomes tell: an execution that `failed`, was `interrupted` or found its backend `unavailable`,
and a job that did not finish (no `job_end` record, no summary.json). A case NEW never planned (a
subset on purpose, fewer ranks launched: `skipped`) is not lost.
"""
from . import fmt


# Execution outcomes whose cases were lost, not left out: NEW planned them and could not measure
# them. A backend `unavailable` in NEW that the baseline measured is a regression a gate must
# see (the library broke, or the node lost its network); `skipped` (fewer ranks launched) is the
# launch's choice.
LOST = ("failed", "interrupted", "unavailable")


def why_not_measured(case, new_jobs):
    """Why NEW has no record of a case the baseline measured, when NEW's own outcomes say it was
    lost rather than left out: NEW's execution of the same backend and world size, of the same
    run or of a run that plans the case's op (a renamed run), failed or was interrupted (its
    cases were never run, so they left no record), or a NEW job of the same experiment did not
    finish. None otherwise: NEW did not plan the case (a subset, fewer ranks launched:
    `skipped`) — "only in baseline", not a failure."""
    for j in new_jobs:
        for e in j.executions:
            if (e.get("status") in LOST and e.get("backend") == case.get("backend")
                    and e.get("world_size") == case.get("world_size")
                    and (e.get("run") == case.get("run") or _run_plans(j, e.get("run"), case))):
                return (f"not measured: NEW's execution '{e.get('run')}' ({e.get('backend')}, "
                        f"{fmt.ranks(e.get('world_size'))}) was {e.get('status')}: "
                        f"{e.get('reason', '')}")
    for j in new_jobs:
        if (j.end is None and j.summary is None
                and j.header.get("experiment") == case.get("experiment")):
            return f"not measured: NEW's job {j.label} did not finish (no job_end record)"
    return None


def why_repeats_lost(recs, new_jobs, job_of=None):
    """Why NEW lacks a case it did measure in some repeat, when NEW's own outcomes say a repeat
    was lost rather than never planned; None otherwise. `recs`: NEW's records of the case. A
    repeat is lost as a whole case is (why_not_measured): in a job that measured the case, an
    execution of its backend and world size, of a run that measured it or plans it, that
    `failed`, was `interrupted` or found the backend `unavailable` and left no record of the case
    for its repeat; a job that did not finish and may not have reached every repeat
    (_may_lack_repeats); or a NEW job folder (each is a repeat) of the same experiment that lost
    it entirely. `job_of`: {id(record): its job} over new_jobs (made here when not given)."""
    job_of = job_of or {id(c): j for j in new_jobs for c in j.cases}
    for j in new_jobs:
        mine = [c for c in recs if job_of.get(id(c)) is j]
        if not mine:
            if j.name != recs[0].get("experiment"):
                continue
            why = why_not_measured(recs[0], [j])
            if why:
                return f"{why}; {len(recs)} repeat(s) measured in other job folders"
            continue
        have = {(c.get("run"), c.get("repeat") or 0) for c in mine}
        runs = {c.get("run") for c in mine}
        lost = [e for e in j.executions
                if e.get("status") in LOST and e.get("backend") == mine[0].get("backend")
                and e.get("world_size") == mine[0].get("world_size")
                and (e.get("run") in runs or _run_plans(j, e.get("run"), mine[0]))
                and (e.get("run"), e.get("repeat") or 0) not in have]
        if lost:
            e = lost[0]
            which = ", ".join(str((x.get("repeat") or 0) + 1) for x in lost)
            return (f"not measured in repeat {which} of NEW's {len(mine) + len(lost)}: NEW's "
                    f"execution '{e.get('run')}' ({e.get('backend')}, "
                    f"{fmt.ranks(e.get('world_size'))}) was {e.get('status')}: "
                    f"{e.get('reason', '')}")
        if j.end is None and j.summary is None and _may_lack_repeats(j, mine):
            return (f"not measured in every repeat: NEW's job {j.label} did not finish (no "
                    f"job_end record) and may have stopped before its last repeats of run "
                    f"'{mine[-1].get('run')}'; it holds {len(mine)} of this case")
    return None


def _may_lack_repeats(job, mine):
    """Whether a job that did not finish may have stopped before a repeat of the case whose
    records it holds (`mine`). Executions run in plan order (plan.cpp: per run, its repeats in
    rounds of backends x world sizes) and each numbers itself (`exec_index` of `exec_total`):
    none is missing when every one of them ended; a run is over when an execution of a later run
    ended; else the run may hold up to (exec_total - its first index) / (its backend x world
    size combinations seen) repeats, and the case must have a record of each. True where the
    records cannot tell (no execution numbers)."""
    execs = job.executions
    totals = [e.get("exec_total") for e in execs if isinstance(e.get("exec_total"), int)]
    if totals and len(execs) >= max(totals):
        return False
    for run in {c.get("run") for c in mine}:
        own = [e for e in execs if e.get("run") == run]
        index = [e.get("exec_index") for e in own if isinstance(e.get("exec_index"), int)]
        if len(index) < len(own) or not totals:
            return True
        if index and any(e.get("run") != run and isinstance(e.get("exec_index"), int)
                         and e["exec_index"] > max(index) for e in execs):
            continue  # a later run started: this one's executions all ended
        first = min(index) if index else len(execs)
        combos = {(e.get("backend"), e.get("world_size")) for e in own}
        combos.add((mine[0].get("backend"), mine[0].get("world_size")))
        most = (max(totals) - first) // len(combos)
        have = {c.get("repeat") or 0 for c in mine if c.get("run") == run}
        if any(i not in have for i in range(most)):
            return True
    return False


def _run_plans(job, run_name, case):
    """Whether `job`'s run `run_name` planned `case`: its op, dtype, reduce op, placement and,
    where the run lists its sizes in bytes per rank (weak scaling), its size. Cases match across
    run names, so a renamed run that crashed has lost the baseline's cases too; a run that never
    planned the case (a subset on purpose, another run's failure) has not. False when the job's
    experiment is not known (no summary.json: a killed job)."""
    runs = ((job.summary or {}).get("experiment") or {}).get("runs") or []
    for r in runs:
        if not isinstance(r, dict) or r.get("name") != run_name:
            continue
        if case.get("op") not in (r.get("ops") or []):
            return False
        for field, listed in (("dtype", "dtypes"), ("redop", "redops"), ("placement", "placements")):
            if r.get(listed) and case.get(field) and case.get(field) not in r[listed]:
                return False
        sizes = r.get("sizes")
        if (isinstance(sizes, list) and sizes and r.get("scaling") in (None, "weak")
                and all(isinstance(x, dict) and "bytes" in x for x in sizes)):
            return case.get("bytes") in {x["bytes"] for x in sizes}
        return True
    return False
