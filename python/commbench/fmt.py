"""Number and size formatting shared by the report, the analysis and compare, so a number
printed in one place reads the same everywhere (and tests can recompute it)."""
import math


def size(nbytes):
    """4096 -> '4 KiB', 1536 -> '1.5 KiB', 0 -> '0 B' (binary units, as summary.md). Never an
    exponent: from 1000 of a unit up, two decimals as summary.md writes them (1,025,000 B ->
    '1000.98 KiB'), where three significant digits would read '1e+03 KiB'."""
    n = int(nbytes)
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            if v == int(v):
                return f"{v:.0f} {unit}"
            return f"{v:.2f} {unit}" if v >= 1000 else f"{num(v)} {unit}"
    return f"{n} B"


def num(x, digits=3):
    """Three significant digits, no exponent for everyday magnitudes: 0.000591, 12.5, 10391."""
    if x is None or not math.isfinite(x):
        return "n/a"
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    if mag >= digits - 1:
        return f"{x:.0f}"
    text = f"{x:.{digits - 1 - mag}f}"
    # 0.700 -> 0.7: the digits shown are significant ones, not padding.
    return text.rstrip("0").rstrip(".") if "." in text else text


def num_against(x, bound, digits=3):
    """`x` as num() writes it, with as many more significant digits as it takes to read on the
    same side of `bound` as `x` is (0.04096 against 0.04097: '0.04096', where num() gives
    '0.041', which reads as meeting '>= 0.04097')."""
    text = num(x, digits)
    if x is None or bound is None or not math.isfinite(x) or not math.isfinite(bound):
        return text
    side = (x > bound) - (x < bound)
    for d in range(digits, 18):
        text = num(x, d)
        shown = float(text)
        if (shown > bound) - (shown < bound) == side:
            return text
    return repr(x)


def count(n, what):
    """'1 case', '3 cases': a count in a sentence."""
    return f"{n} {what}" + ("" if n == 1 else "s")


def ranks(n):
    """'1 rank', '4 ranks': a world size in a sentence ("1 ranks" read as a typo)."""
    return count(n, "rank")


def pct(fraction, digits=3):
    return f"{num(fraction * 100, digits)} %"


def ratio(x):
    """Three significant digits whatever the magnitude: 0.00102×, 1.5×, 1020× (never 0.00×)."""
    return f"{num(x)}×"


def rate(per_s, unit="messages/s"):
    """A count per second with an SI prefix and three significant digits: 1.23 M messages/s."""
    if per_s is None or not math.isfinite(per_s):
        return "n/a"
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(per_s) >= scale:
            return f"{num(per_s / scale)} {prefix} {unit}"
    return f"{num(per_s)} {unit}"


def percentile(values, q):
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    v = sorted(values)
    if not v:
        return None
    pos = (len(v) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)
