"""`commbench compare BASELINE NEW`: per case the ratio of each side's fastest repeat's time and
busbw, and a verdict a CI gate can act on without crying wolf.

Cases are matched by what they are (MATCH_FIELDS: backend, op, size, dtype, redop, placement,
memory, world size, method, peers, window, the backend's options, the run's env, ...), never by
the name of the run that measured them. Every record of a case on one side is one *repeat*: the
`repeats` of a run (docs/configuration.md), the same case in several runs of a job, or the same
case in several job folders under BASELINE or NEW. Two runs that differ in a setting that changes
what is measured (peers, window, options, env) are two cases; `--ignore FIELD` drops a field from
the match, to compare two configurations on purpose (NCCL_ALGO=Ring against Tree: `--ignore env`).

Noise model (docs/reports.md, "Comparing jobs"):
- run-to-run, when both sides have >= 2 repeats: each repeat's mean time is one value. On a
  shared machine noise only adds time (a preempted rank, a late wake-up, a neighbour's burst), so
  each side is represented by its **fastest repeat** (best of N, as Python's timeit); the noise
  scale is the repeats' robust spread — 1.4826 x the median absolute deviation of the log times
  around each side's median, the larger of this case's own and the one pooled over every case
  compared (a tight case is not judged on a tighter scale than the others'). From 4 repeats a
  side the median leaves one outlying repeat per side out; at 3 it leaves out one on one side,
  but one on each side is half the deviations and can hide a change; with 2, one slow repeat
  widens the case's scale and can hide a change (the note says so: two repeats cannot tell a
  slower library from one slow run). The test: t = (log best NEW - log best BASE) / (scale x
  sqrt(v(n_b) + v(n_n))), where v(n) is the variance of the fastest of n repeats in units of one
  repeat's (stats.min_normal_variance: 0.68 at 2, 0.45 at 5; the fastest varies more than the
  mean of n, whose 1/n made identical jobs of 5 repeats fail ~7 % of gates), one-sided in the
  direction of the change, Student's t with n_b + n_n - 2 degrees of freedom, Holm-corrected
  over every case tested, holding the family-wise false-alarm rate to `alpha` (simulated:
  tests/python/test_compare_noise.py, quoted in docs/reports.md). A case changed when the ratio
  of the best times is beyond `min_change` AND the test is significant AND the effect size |d|
  (the change over the scale) is at least `min_effect`.
- iterations only, when a side has a single repeat: the per-iteration spread of each run (the
  standard error of the difference of the two means), which does not see run-to-run variation
  and so understates the noise on a shared machine; the output says so.
"""
import json
import math
import os

from . import fmt, stats
from .compare_lost import LOST, why_not_measured, why_repeats_lost  # noqa: F401 (API)
from .load import ResultsError, num, read_jobs

MIN_CHANGE = 0.05   # a change of the compared time smaller than this is never a verdict
ALPHA = 0.05        # family-wise false-alarm rate of the run-to-run test (Holm)
MIN_EFFECT = 0.8    # |change| / noise scale: "large" (Cohen 1988); small shifts in large spreads are noise
MAD_TO_SD = 1.4826  # a normal sample's standard deviation from its median absolute deviation
SIGMA = 3.0         # iterations-only mode: standard errors a change must exceed

# What a case is. The run's name is not among them: the same measurement under another run name
# is the same case. `workload` cases (docs/workloads.md) add their model/sharding/overlap.
MATCH_FIELDS = ("backend", "op", "bytes", "dtype", "redop", "placement", "memory", "staging",
                "world_size", "root", "src", "dst", "method", "rank_aggregation", "timing",
                "cpu_binding", "peers", "window", "options", "env")
WORKLOAD_FIELDS = ("model", "sharding", "overlap", "batch_size")
# Fields `--ignore` may drop: what a user may deliberately vary between the two sides.
IGNORABLE = ("cpu_binding", "peers", "window", "options", "env", "staging", "timing", "method",
             "rank_aggregation")


def parse_threshold(text):
    """'5%' or '5' -> 0.05."""
    t = str(text).strip().rstrip("%").strip()
    try:
        v = float(t)
    except ValueError:
        raise ValueError(f"--min-change '{text}': expected a percentage such as 5% or 2.5") \
            from None
    if not (0 <= v < 1000):
        raise ValueError(f"--min-change '{text}': expected a percentage between 0 and 1000")
    return v / 100.0


def parse_ignore(values):
    """`--ignore env,options --ignore peers` -> a set of MATCH_FIELDS; ValueError names the bad one."""
    out = set()
    for v in values or []:
        for f in (x.strip() for x in str(v).split(",")):
            if f not in IGNORABLE:
                raise ValueError(f"--ignore '{f}': expected one of {', '.join(IGNORABLE)}")
            out.add(f)
    return out


def _hashable(v):
    """Lists and objects (peers, options, env) as canonical text, so they can be a key."""
    if isinstance(v, (list, dict)):
        return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return v


# Records written before peers, window, options and env were recorded ran with the run settings'
# defaults where they apply (core/src/experiment/run_settings.cpp: peers [0, 1], window 64, no
# options or env): read so, an old baseline still matches a new job that ran the same.
TWO_PEER_OPS = ("pingpong", "unidir_bw", "bidir_bw")
WINDOWED_OPS = ("unidir_bw", "bidir_bw", "msg_rate")


def _with_defaults(c):
    op = c.get("op")
    return {"peers": [0, 1] if op in TWO_PEER_OPS else None,
            "window": 64 if op in WINDOWED_OPS else None, "options": {}, "env": {}}


def match_key(c, ignore=()):
    w = c.get("workload") if isinstance(c.get("workload"), dict) else {}
    defaults = _with_defaults(c)

    def value(k):
        v = c.get(k)
        return defaults.get(k) if v is None else v
    return (tuple(None if k in ignore else _hashable(value(k)) for k in MATCH_FIELDS)
            + tuple(w.get(k) for k in WORKLOAD_FIELDS))


def cases_by_key(path, ignore=(), jobs=None):
    """{match key: [records]} over every job folder under `path` (or of `jobs`, already read),
    in the order measured."""
    out = {}
    for j in read_jobs([path]) if jobs is None else jobs:
        for c in j.cases:
            out.setdefault(match_key(c, ignore), []).append(c)
    return out


def read_sides(baseline, new):
    """(BASELINE's jobs, NEW's jobs). A job folder on both sides (NEW's folder inside BASELINE's
    folder of jobs) would count as repeats of both and hide any change: refused. Both sides the
    very same folders (`compare JOB JOB`, a self-check: every case unchanged) are not."""
    base, new_jobs = read_jobs([baseline]), read_jobs([new])
    b = {os.path.realpath(j.path) for j in base}
    n = {os.path.realpath(j.path) for j in new_jobs}
    shared = sorted(b & n)
    if shared and b != n:
        more = f" (and {len(shared) - 1} more)" if len(shared) > 1 else ""
        raise ResultsError(f"the job folder {shared[0]}{more} is on both sides: in BASELINE "
                           f"{baseline} and in NEW {new}; its records would be repeats of both "
                           "and hide any change. Pass BASELINE and NEW folders that share no job")
    return base, new_jobs


def experiments(jobs):
    """{experiment name: job folders} of one side's jobs, in the order read."""
    out = {}
    for j in jobs:
        out[j.name or "(unnamed)"] = out.get(j.name or "(unnamed)", 0) + 1
    return out


def _settings_words(c, ignore=()):
    """The run settings beyond the op that tell a case apart, as words: 'peers 0-2', 'window 1',
    'bound core', 'NCCL_ALGO=Ring', 'algorithm=ring'."""
    out = []
    if isinstance(c.get("peers"), list) and len(c["peers"]) == 2 and "peers" not in ignore:
        out.append(f"peers {c['peers'][0]}-{c['peers'][1]}")
    if c.get("window") and "window" not in ignore:
        out.append(f"window {c['window']}")
    if c.get("cpu_binding") and "cpu_binding" not in ignore:
        out.append(f"bound {c['cpu_binding']}")
    for field in ("options", "env"):
        if isinstance(c.get(field), dict) and field not in ignore:
            out.extend(f"{k}={v}" for k, v in sorted(c[field].items()))
    return out


def describe_key(c, ignore=()):
    """Every dimension that can tell two cases apart, defaults left out: 'allreduce 4 KiB gloo
    4r (f32 sum in-place, per_iteration)'."""
    pair = f" {c.get('src')}→{c.get('dst')}" if c.get("op") == "all_pairs" else ""
    method = c.get("method")
    agg = c.get("rank_aggregation")
    how = ""
    if method and (method != "batch" or agg not in (None, "avg")):
        how = method + (f"/{agg}" if agg and (method != "per_iteration" or agg != "slowest_per_iteration") else "")
    w = c.get("workload") if isinstance(c.get("workload"), dict) else {}
    extra = [v for v in (c.get("dtype"), c.get("redop"),
                         "in-place" if c.get("placement") == "in_place" else "",
                         c.get("memory") if c.get("memory") not in (None, "host") else "",
                         f"staged via {c['staging']}" if c.get("staging") else "",
                         f"root {c['root']}" if c.get("root") not in (None, 0) else "",
                         f"clock {c['timing']}" if c.get("timing") not in (None, "host") else "",
                         how, *(f"{k} {w[k]}" for k in WORKLOAD_FIELDS if k in w),
                         *_settings_words(c, ignore)) if v]
    return (f"{c.get('op')} {fmt.size(c.get('bytes', 0))}{pair} {c.get('backend')} "
            f"{c.get('world_size')}r" + (f" ({' '.join(str(x) for x in extra)})" if extra else ""))


def _times(recs):
    return [t for t in (num(r, "time_us", "mean") for r in recs if r.get("status") == "ok")
            if t is not None and t > 0]


class Row:
    def __init__(self, key, base, new, ignore=()):
        self.key, self.base, self.new = key, base or [], new or []
        self.ignore = ignore
        self.time_ratio = self.bw_ratio = None
        self.p = self.d = self.z = None
        self.logs = None          # (base, new) log times of the repeats
        self.mode = None          # "repeats" or "iterations": the noise model that judged it
        self.verdict = ""
        self.note = ""

    @property
    def name(self):
        return describe_key((self.new or self.base)[0], self.ignore)

    @property
    def matched(self):
        return bool(self.base) and bool(self.new)

    def time(self, side):
        """The time a side is judged by: its fastest repeat with several repeats, else its one
        record's mean."""
        t = _times(self.base if side == "base" else self.new)
        return min(t) if t else None


def _status_verdict(row):
    """Verdicts that need no statistics: a case that stopped working, or never worked."""
    ok_b = any(r.get("status") == "ok" for r in row.base)
    bad_n = [r for r in row.new if r.get("status") != "ok"]
    wrong = [r for r in row.new if isinstance(r.get("wrong"), int) and r["wrong"] > 0]
    if wrong:
        return "regressed", f"NEW has {wrong[0]['wrong']} wrong elements"
    if ok_b and bad_n:
        return "regressed", f"NEW is {bad_n[0].get('status')}: {bad_n[0].get('reason', '')}"
    if not ok_b:
        ok_n = any(r.get("status") == "ok" for r in row.new)
        return ("newly measured" if ok_n else "not measured",
                f"baseline was {row.base[0].get('status')}")
    return None


def _fastest(recs):
    """The measured record with the smallest mean time (what Row.time judges a side by)."""
    ok = [r for r in recs if r.get("status") == "ok" and (num(r, "time_us", "mean") or 0) > 0]
    return min(ok, key=lambda r: num(r, "time_us", "mean"))


def _iteration_z(b, n):
    """z of the difference of two single runs' means from their iterations' spread."""
    tb, tn = num(b, "time_us", "mean"), num(n, "time_us", "mean")
    sb, sn = num(b, "time_us", "stddev"), num(n, "time_us", "stddev")
    nb, nn = num(b, "time_us", "n") or 0, num(n, "time_us", "n") or 0
    if nb < 2 or nn < 2 or sb is None or sn is None:
        return None
    se = math.sqrt(sb * sb / nb + sn * sn / nn)
    if se == 0:
        return math.copysign(math.inf, tn - tb) if tn != tb else 0.0
    return (tn - tb) / se


def _deviations(logs):
    """Deviations of log times from their median, the median itself left out (odd counts)."""
    m = stats.median(logs)
    devs = sorted((x - m for x in logs), key=abs)
    return devs[1:] if len(devs) % 2 == 1 else devs


def _scale(devs):
    return MAD_TO_SD * stats.median([abs(d) for d in devs]) if devs else 0.0


def _measure(row):
    """Ratios and, where both sides have repeats, their log times; judge() tests them."""
    tb, tn = _times(row.base), _times(row.new)
    if not tb or not tn:
        row.verdict, row.note = "not measured", "no mean time"
        return
    row.time_ratio = min(tn) / min(tb)
    bb = [x for x in (num(r, "busbw_gbps") for r in row.base) if x]
    bn = [x for x in (num(r, "busbw_gbps") for r in row.new) if x is not None]
    if bb and bn:
        row.bw_ratio = max(bn) / max(bb)
    if len(tb) >= 2 and len(tn) >= 2:
        row.mode = "repeats"
        row.logs = ([math.log(x) for x in tb], [math.log(x) for x in tn])
    else:
        # The records whose times make the ratio (each side's fastest), so the test and the
        # ratio speak of the same two runs whatever order the job folders were read in.
        row.mode = "iterations"
        row.z = _iteration_z(_fastest(row.base), _fastest(row.new))


def _test_repeats(tested):
    """p and d of every row with repeats: the noise scale is the larger of the row's own robust
    spread and the one pooled over all of them."""
    pooled = _scale([d for r in tested for side in r.logs for d in _deviations(side)])
    for r in tested:
        lb, ln = r.logs
        scale = max(_scale(_deviations(lb) + _deviations(ln)), pooled)
        diff = min(ln) - min(lb)
        if scale == 0:
            r.d = 0.0 if diff == 0 else math.copysign(math.inf, diff)
            r.p = 0.5 if diff == 0 else 0.0
            continue
        r.d = diff / scale
        # The fastest of n varies by more than the mean of n: its own variance (0.45 at 5,
        # not 1/5), or identical jobs of 5 repeats were flagged ~7 % of the time.
        t = diff / (scale * math.sqrt(stats.min_normal_variance(len(lb))
                                      + stats.min_normal_variance(len(ln))))
        r.p = stats.t_sf(abs(t), len(lb) + len(ln) - 2)


def judge(rows, min_change, alpha=ALPHA, min_effect=MIN_EFFECT, sigma=SIGMA):
    """Verdicts of measured rows. The run-to-run p-values are Holm-corrected over every row
    that has them, so that `alpha` bounds the chance of any false alarm in the comparison."""
    tested = [r for r in rows if r.mode == "repeats"]
    _test_repeats(tested)
    significant = stats.holm([r.p for r in tested], alpha)
    for r, sig in zip(tested, significant):
        change = r.time_ratio - 1
        big = abs(change) > min_change
        large = r.d is not None and abs(r.d) >= min_effect
        if not big:
            r.verdict = "unchanged"
        elif sig and large:
            r.verdict = "regressed" if change > 0 else "improved"
        else:
            r.verdict = "within noise"
        nb, nn = len(_times(r.base)), len(_times(r.new))
        r.note = (f"p {fmt.num(r.p, 2)}{' (significant)' if sig else ''}, d {fmt.num(r.d, 2)}, "
                  f"{nb}+{nn} repeats")
        # Two repeats cannot tell a real change from one slow repeat: said where it matters, the
        # verdict is not forced (that would break the false-alarm bound, `alpha`).
        if r.verdict == "within noise" and min(nb, nn) == 2:
            r.note += "; 2 repeats on a side cannot tell this change from one slow repeat: use 3 or more"
    for r in rows:
        if r.mode != "iterations":
            continue
        change = r.time_ratio - 1
        real = r.z is None or abs(r.z) >= sigma
        if abs(change) <= min_change:
            r.verdict = "unchanged"
        elif not real:
            r.verdict = "within noise"
        else:
            r.verdict = "regressed" if change > 0 else "improved"
        nb, nn = len(_times(r.base)), len(_times(r.new))
        r.note = ("1 repeat: " if nb == nn == 1 else
                  f"{nb}+{nn} repeats, fewer than 2 on a side; the fastest of each: ") + (
                      f"{fmt.num(abs(r.z), 2)} standard errors of the iterations"
                      if r.z is not None else "fewer than 2 samples, min change only")


def compare(baseline, new, min_change=MIN_CHANGE, alpha=ALPHA, min_effect=MIN_EFFECT, sigma=SIGMA,
            ignore=(), sides=None):
    """Rows for every case on either side: matched ones judged, regressions first (cases NEW lost
    among them), then by time ratio; unmatched ones last. `ignore`: MATCH_FIELDS left out of the
    match (parse_ignore). `sides`: read_sides(baseline, new), when already read."""
    base_jobs, new_jobs = sides or read_sides(baseline, new)
    b, n = cases_by_key(baseline, ignore, base_jobs), cases_by_key(new, ignore, new_jobs)
    job_of = {id(c): j for j in new_jobs for c in j.cases}
    rows = [Row(k, b.get(k), n.get(k), ignore) for k in list(b) + [k for k in n if k not in b]]
    for row in rows:
        measured = [r for r in row.base if r.get("status") == "ok"]
        lost = why_not_measured(measured[0], new_jobs) if measured and not row.new else None
        if lost:
            row.verdict, row.note = "regressed", lost
        elif not row.new:
            row.verdict, row.note = "only in baseline", "no case of NEW is this one"
        elif not row.base:
            row.verdict, row.note = "only in new", "no case of BASELINE is this one"
        else:
            s = _status_verdict(row)
            lost = None if s else why_repeats_lost(row.new, new_jobs, job_of)
            if s:
                row.verdict, row.note = s
            elif lost:
                # One repeat lost to a crash is lost as the whole case is: what NEW measured in
                # its other repeats is not the experiment it planned.
                row.verdict, row.note = "regressed", lost
            else:
                _measure(row)
    judge(rows, min_change, alpha, min_effect, sigma)
    order = {"regressed": 0, "unchanged": 1, "within noise": 2, "improved": 3}
    rows.sort(key=lambda r: (r.verdict != "regressed", not r.matched, r.time_ratio is None,
                             -(r.time_ratio or 0), order.get(r.verdict, 4)))
    return rows


def why_nothing_matches(baseline, new, ignore=(), sides=None):
    """(field, text) for each field whose values the two sides do not share (what tells their
    cases apart)."""
    base_jobs, new_jobs = sides or (None, None)
    b, n = cases_by_key(baseline, ignore, base_jobs), cases_by_key(new, ignore, new_jobs)
    names = MATCH_FIELDS + WORKLOAD_FIELDS
    out = []
    for i, f in enumerate(names):
        vb, vn = {k[i] for k in b}, {k[i] for k in n}
        if vb and vn and not (vb & vn):
            out.append((f, f"{f}: BASELINE has {', '.join(map(str, sorted(vb, key=str)))}; "
                           f"NEW has {', '.join(map(str, sorted(vn, key=str)))}"))
    return out


def table(rows):
    headers = ["case", "time base (µs)", "time new (µs)", "time ×", "busbw ×", "verdict", "note"]
    out = []
    for r in rows:
        tb, tn = r.time("base"), r.time("new")
        out.append([r.name, fmt.num(tb) if tb is not None else "-",
                    fmt.num(tn) if tn is not None else "-",
                    fmt.num(r.time_ratio) if r.time_ratio else "-",
                    fmt.num(r.bw_ratio) if r.bw_ratio else "-", r.verdict, r.note])
    return headers, out


def counts(rows):
    c = {}
    for r in rows:
        c[r.verdict] = c.get(r.verdict, 0) + 1
    return c


def method_text(rows, min_change, alpha=ALPHA, min_effect=MIN_EFFECT, sigma=SIGMA):
    """What judged the verdicts, in words (printed under the table and in the JUnit suite)."""
    rep = [r for r in rows if r.mode == "repeats"]
    it = [r for r in rows if r.mode == "iterations"]
    out = [f"A verdict needs the time to change by more than {fmt.num(min_change * 100)} %."]
    if rep:
        lo = min(min(len(_times(r.base)), len(_times(r.new))) for r in rep)
        out.append(f"{len(rep)} case(s) judged by run-to-run noise (>= {lo} repeats per side; each "
                   "repeat's mean time one value, each side's fastest repeat compared — noise only "
                   "adds time): a t-test on the fastest log times, the noise scale the repeats' "
                   "robust spread (MAD) times that of the fastest of n, Holm-corrected over "
                   f"{len(rep)} cases for a family-wise "
                   f"false-alarm rate of {fmt.num(alpha * 100)} %, and effect size "
                   f"|d| >= {fmt.num(min_effect)}.")
    if it:
        out.append(f"{len(it)} case(s) have 1 repeat on a side: judged by the iterations' spread "
                   f"({fmt.num(sigma)} standard errors), which does not see run-to-run variation "
                   "and can call noise a regression on a shared machine; run with `repeats = 3` "
                   "or more (or several job folders per side) for a gate.")
    return " ".join(out)


def render_text(rows, min_change, alpha=ALPHA, min_effect=MIN_EFFECT, sigma=SIGMA):
    headers, body = table(rows)
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *body)] if body else []
    lines = []
    for i, line in enumerate([headers] + body):
        lines.append("  ".join(str(v).ljust(w) if j in (0, 5, 6) else str(v).rjust(w)
                               for j, (v, w) in enumerate(zip(line, widths))).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    c = counts(rows)
    matched = sum(1 for r in rows if r.matched)
    summary = ", ".join(f"{v} {k}" for k, v in sorted(c.items(), key=lambda kv: kv[0]))
    lines.append("")
    lines.append(f"{len(rows)} cases ({matched} matched): {summary}.")
    only_b = c.get("only in baseline", 0)
    only_n = c.get("only in new", 0)
    if only_b or only_n:
        lines.append(f"Not compared: {only_b} case(s) only in BASELINE, {only_n} only in NEW "
                     "(matched by backend, op, size, dtype, redop, placement, memory, world size, "
                     "method, peers, window, options, env; not by run name; `--ignore FIELD` "
                     "drops a field from the match).")
    lines.append(method_text(rows, min_change, alpha, min_effect, sigma))
    return "\n".join(lines)
