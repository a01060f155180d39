"""`commbench compare BASELINE NEW`: per matching case the ratio of time and busbw, sorted by
change; a case regresses when its mean time grew by more than the threshold AND by more than
the noise of the two measurements.

Noise: the standard error of the difference of the two means, from each side's sample standard
deviation and sample count (Welch): se = sqrt(sd_b²/n_b + sd_n²/n_n). A change of at least
SIGMA standard errors is called real; smaller ones are "within noise" whatever their size. With
one sample per side (n < 2) there is no spread to judge by and the threshold alone decides.
"""
import math

from . import fmt
from .load import CASE_KEY, num, read_jobs

SIGMA = 3.0  # about a 0.1 % chance per case that pure noise is called a regression


def parse_threshold(text):
    """'5%' or '5' -> 0.05."""
    t = str(text).strip().rstrip("%").strip()
    try:
        v = float(t)
    except ValueError:
        raise ValueError(f"--threshold '{text}': expected a percentage such as 5% or 2.5") \
            from None
    if not (0 <= v < 1000):
        raise ValueError(f"--threshold '{text}': expected a percentage between 0 and 1000")
    return v / 100.0


def cases_by_key(path):
    """{case key: (job label, record)} over every job folder under `path` (later folders win)."""
    out = {}
    for j in read_jobs([path]):
        for c in j.cases:
            out[tuple(c.get(k) for k in CASE_KEY)] = (j.label, c)
    return out


def describe_key(c):
    pair = f" {c.get('src')}→{c.get('dst')}" if c.get("op") == "all_pairs" else ""
    extra = [v for v in (c.get("dtype"), c.get("redop"),
                         "in-place" if c.get("placement") == "in_place" else "",
                         c.get("memory") if c.get("memory") != "host" else "") if v]
    return (f"{c.get('run')}: {c.get('op')} {fmt.size(c.get('bytes', 0))}{pair} "
            f"{c.get('backend')} {c.get('world_size')}r" + (f" ({' '.join(extra)})" if extra
                                                            else ""))


class Row:
    def __init__(self, key, base, new):
        self.key, self.base, self.new = key, base, new
        self.time_ratio = self.bw_ratio = self.z = None
        self.verdict = ""
        self.note = ""

    @property
    def name(self):
        return describe_key(self.new or self.base)


def _z(b, n):
    tb, tn = num(b, "time_us", "mean"), num(n, "time_us", "mean")
    sb, sn = num(b, "time_us", "stddev"), num(n, "time_us", "stddev")
    nb, nn = num(b, "time_us", "n") or 0, num(n, "time_us", "n") or 0
    if nb < 2 or nn < 2 or sb is None or sn is None:
        return None
    se = math.sqrt(sb * sb / nb + sn * sn / nn)
    if se == 0:
        return math.inf if tn != tb else 0.0
    return (tn - tb) / se


def compare(baseline, new, threshold, sigma=SIGMA):
    """Rows for every case key in either side, most regressed first."""
    b, n = cases_by_key(baseline), cases_by_key(new)
    rows = []
    for key in list(b) + [k for k in n if k not in b]:
        rb = b.get(key, (None, None))[1]
        rn = n.get(key, (None, None))[1]
        row = Row(key, rb, rn)
        rows.append(row)
        if rn is None:
            row.verdict, row.note = "only in baseline", "not run in NEW"
            continue
        if rb is None:
            row.verdict, row.note = "only in new", "not in the baseline"
            continue
        ok_b, ok_n = rb.get("status") == "ok", rn.get("status") == "ok"
        if ok_b and not ok_n:
            row.verdict = "regressed"
            row.note = f"NEW is {rn.get('status')}: {rn.get('reason', '')}"
            continue
        if not ok_b:
            row.verdict = "newly measured" if ok_n else "not measured"
            row.note = f"baseline was {rb.get('status')}"
            continue
        if isinstance(rn.get("wrong"), int) and rn["wrong"] > 0:
            row.verdict, row.note = "regressed", f"NEW has {rn['wrong']} wrong elements"
            continue
        tb, tn = num(rb, "time_us", "mean"), num(rn, "time_us", "mean")
        if not tb or tn is None:
            row.verdict, row.note = "not measured", "no mean time"
            continue
        row.time_ratio = tn / tb
        bb, bn = num(rb, "busbw_gbps"), num(rn, "busbw_gbps")
        if bb and bn is not None:
            row.bw_ratio = bn / bb
        row.z = _z(rb, rn)
        change = row.time_ratio - 1
        real = row.z is None or abs(row.z) >= sigma
        if abs(change) <= threshold:
            row.verdict = "unchanged"
        elif not real:
            row.verdict = "within noise"
            row.note = f"{fmt.num(abs(row.z), 2)} standard errors (< {fmt.num(sigma)})"
        else:
            row.verdict = "regressed" if change > 0 else "improved"
            if row.z is not None:
                row.note = f"{fmt.num(abs(row.z), 2)} standard errors"
            else:
                row.note = "fewer than 2 samples: threshold only"
    order = {"regressed": 0, "within noise": 2, "improved": 3, "unchanged": 1}
    rows.sort(key=lambda r: (r.time_ratio is None, -(r.time_ratio or 0), order.get(r.verdict, 4)))
    rows.sort(key=lambda r: 0 if r.verdict == "regressed" else 1)
    return rows


def table(rows):
    headers = ["case", "time base (µs)", "time new (µs)", "time ×", "busbw ×", "verdict", "note"]
    out = []
    for r in rows:
        tb = num(r.base, "time_us", "mean") if r.base else None
        tn = num(r.new, "time_us", "mean") if r.new else None
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


def render_text(rows, threshold, sigma):
    headers, body = table(rows)
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *body)] if body else []
    lines = []
    for i, line in enumerate([headers] + body):
        lines.append("  ".join(str(v).ljust(w) if j in (0, 5, 6) else str(v).rjust(w)
                               for j, (v, w) in enumerate(zip(line, widths))).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    c = counts(rows)
    summary = ", ".join(f"{v} {k}" for k, v in sorted(c.items(), key=lambda kv: kv[0]))
    lines.append("")
    lines.append(f"{len(rows)} cases: {summary}. Threshold {fmt.num(threshold * 100)} % on the "
                 f"mean time; changes under {fmt.num(sigma)} standard errors are within noise.")
    return "\n".join(lines)
