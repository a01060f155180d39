"""Expectations for cluster qualification: `expect` in a [[run]] (docs/configuration.md).

The experiment loader validates them and writes them, normalised, into summary.json's
experiment: a list of entries, each with an optional scope (`ops`, `min_bytes`, `max_bytes`)
and one or more conditions `metric: "<op> <number>"` (e.g. "busbw_gbps": ">= 180"). Every
case of the run inside the scope must meet every condition; a case in scope that was not
measured misses it, and so does a scope that matches no case.
"""
import operator
import re

from . import fmt
from .load import num
from .series import workload_variant

# metric name -> (record field, sub-field, unit, the statistic in words where the name alone
# does not say it); one table, shared with docs/configuration.md.
METRICS = {
    "busbw_gbps": ("busbw_gbps", None, "GB/s", None),
    "algbw_gbps": ("algbw_gbps", None, "GB/s", None),
    "time_us": ("time_us", "mean", "µs", "the mean"),
    "time_us_p50": ("time_us", "p50", "µs", "the median"),
    "time_us_p99": ("time_us", "p99", "µs", "the 99th percentile"),
    "msg_rate_mps": ("msg_rate_mps", None, "M msg/s", None),
}
SCOPE_KEYS = ("ops", "min_bytes", "max_bytes")
_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
_COND = re.compile(r"^\s*(>=|<=|>|<)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


def parse_condition(text):
    """'>= 180' -> ('>=', 180.0); ValueError with what is expected otherwise."""
    m = _COND.match(str(text))
    if not m:
        raise ValueError(f"'{text}' is not a condition; write a comparison and a number, "
                         "e.g. \">= 180\" or \"<= 25.5\"")
    return m.group(1), float(m.group(2))


class Outcome:
    def __init__(self, run, scope, metric, condition, case=None, value=None, ok=False,
                 reason=""):
        self.run, self.scope, self.metric, self.condition = run, scope, metric, condition
        self.case, self.value, self.ok, self.reason = case, value, ok, reason

    job = None  # the job's label, set by evaluate: `check` names it when it reads several
    repeats = 1  # the run's `repeats`, set by evaluate: with more, each case line says which

    def where(self):
        c = self.case
        if c is None:
            return f"run '{self.run}' ({self.scope})"
        pair = f" {c.get('src')}→{c.get('dst')}" if c.get("op") == "all_pairs" else ""
        # 1-based, as summary.md counts them: two repeats' lines were otherwise identical.
        repeat = (f" repeat {int(c.get('repeat') or 0) + 1} of {self.repeats}"
                  if isinstance(self.repeats, int) and self.repeats > 1 else "")
        share = (f" (a share of {fmt.size(c['job_bytes'])} job-wide)"
                 if isinstance(c.get("job_bytes"), int) and c["job_bytes"] > 0 else "")
        # A workload's steps with overlap on and off were otherwise two identical lines.
        variant, overlap = workload_variant(c)
        steps = "".join(f", {w}" for w in (variant, overlap) if w)
        return (f"{self.run}: {c.get('op')} {fmt.size(c.get('bytes', 0))}{share}{pair}{steps} "
                f"{c.get('backend')} {fmt.ranks(c.get('world_size'))}{repeat}")

    def value_text(self):
        """The value measured, with enough digits to read on its side of the bound (a miss of
        '>= 0.04097' by 0.04096 is never printed '0.041'); None without a value."""
        if self.value is None:
            return None
        try:
            bound = parse_condition(self.condition)[1]
        except ValueError:
            bound = None
        return fmt.num_against(self.value, bound)

    def describe(self, with_job=False):
        field, stat, unit, words = METRICS[self.metric]
        if self.value is not None:
            got = f"{self.value_text()} {unit}"
            # A mean checked against a table of medians (a workload's step table) read as a
            # wrong number: say which statistic, and the median beside the mean.
            p50 = ((self.case or {}).get(field) or {}).get("p50") if stat == "mean" else None
            if words:
                got += f", {words}" + (f" (p50 {fmt.num(p50)} {unit})"
                                       if isinstance(p50, (int, float)) else "")
        else:
            got = self.reason
        verdict = "met" if self.ok else "MISSED"
        job = f"[{self.job}] " if with_job and self.job else ""
        return f"{verdict}: {job}{self.where()} — {self.metric} {self.condition}, got {got}"


def scope_text(entry):
    parts = []
    if entry.get("ops"):
        parts.append("/".join(entry["ops"]))
    lo, hi = entry.get("min_bytes"), entry.get("max_bytes")
    if lo is not None or hi is not None:
        parts.append(f"{fmt.size(lo) if lo is not None else '0 B'} .. "
                     f"{fmt.size(hi) if hi is not None else '∞'}")
    return ", ".join(parts) or "every case"


def in_scope(entry, case):
    if entry.get("ops") and case.get("op") not in entry["ops"]:
        return False
    # The size as the run's `sizes` wrote it: per rank (weak scaling), or the job-wide total a
    # strong-scaling case is a share of, as validate reads min_size and max_size.
    b = case.get("job_bytes") or case.get("bytes", 0)
    if entry.get("min_bytes") is not None and b < entry["min_bytes"]:
        return False
    if entry.get("max_bytes") is not None and b > entry["max_bytes"]:
        return False
    return True


def entries(run):
    e = run.get("expect")
    if isinstance(e, dict):
        return [e]
    return list(e or [])


def lost_cases(job, run):
    """Why cases of `run` may be missing from the records: its executions that did not end `ok`
    having measured fewer cases than planned, and a job that wrote neither its `job_end` record
    nor its summary (killed: executions it never started left no record at all)."""
    out = []
    for e in job.executions:
        # A skipped execution (a world larger than the launch) or an unavailable backend planned
        # cases too: a qualification that never measured them must not pass on the rest.
        if e.get("run") != run or e.get("status") not in ("failed", "interrupted", "skipped",
                                                          "unavailable"):
            continue
        done, total = e.get("cases_done"), e.get("case_total")
        if isinstance(done, int) and isinstance(total, int) and done >= total:
            continue
        counted = f"{done} of {total} cases recorded" if isinstance(total, int) else "cases missing"
        out.append(f"not measured: {e.get('backend')} {fmt.ranks(e.get('world_size'))} "
                   f"{e.get('status')} ({counted}; {e.get('reason', '')})")
    if job.end is None and job.summary is None:
        out.append("not measured: the job did not finish (no job_end record), so cases it had not "
                   "reached are missing")
    return out


def evaluate(job):
    """Outcomes for every expectation of every run of the job, in file order."""
    outcomes = []
    for run in job.experiment.get("runs", []):
        name = run.get("name")
        cases = [c for c in job.cases if c.get("run") == name]
        for entry in entries(run):
            scope = scope_text(entry)
            matched = [c for c in cases if in_scope(entry, c)]
            for metric, cond in entry.items():
                if metric in SCOPE_KEYS:
                    continue
                if metric not in METRICS:
                    outcomes.append(Outcome(name, scope, "time_us", str(cond),
                                            reason=f"unknown metric '{metric}'"))
                    continue
                op_text, bound = parse_condition(cond)
                if not matched:
                    # Say why when the run's executions failed before measuring anything.
                    lost = lost_cases(job, name)
                    for why in lost or ["no case of the run is in this scope"]:
                        outcomes.append(Outcome(name, scope, metric, cond, reason=why))
                    continue
                field, sub = METRICS[metric][:2]
                # Cases the job never recorded (an execution that failed or was interrupted
                # before them, a job that stopped early) may be in scope: the gate cannot pass
                # on what was not measured (docs/configuration.md, "Expectations").
                for why in lost_cases(job, name):
                    outcomes.append(Outcome(name, scope, metric, cond, reason=why))
                for c in matched:
                    if c.get("status") != "ok":
                        outcomes.append(Outcome(name, scope, metric, cond, c, reason=(
                            f"not measured ({c.get('status')}: {c.get('reason', '')})")))
                        continue
                    v = num(c, field, sub)
                    if v is None:
                        outcomes.append(Outcome(name, scope, metric, cond, c,
                                                reason="no value in the record"))
                        continue
                    outcomes.append(Outcome(name, scope, metric, cond, c, v,
                                            _OPS[op_text](v, bound)))
        for o in outcomes:
            if o.run == name:
                o.repeats = run.get("repeats", 1)
    for o in outcomes:
        o.job = job.label
    return outcomes
