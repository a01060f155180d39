"""Whether two measurements of a time differ by more than noise can explain — the one rule the
analysis uses before it says "faster", "takes the lead" or "overtakes" (compare has its own,
family-wise version for its gate: compare.py).

With >= 2 repeats on both sides (`repeats` in the experiment): Welch's t-test on the logarithms
of the repeats' mean times. With one repeat: the standard error of the difference of the two
means from their iterations, which does not see run-to-run variation — so both also need the
times to differ by more than MIN_CHANGE."""
import math

from . import stats
from .load import num

MIN_CHANGE = 0.05   # smaller relative differences are never called real
ALPHA = 0.01        # two-sided, per comparison (a sentence is a claim; be strict)
SIGMA = 3.0         # one repeat: standard errors of the iterations


def repeat_means(record):
    """The mean time of each repeat of a case (one value without `repeats`)."""
    means = record.get("repeat_means_us")
    if isinstance(means, list) and len(means) >= 1:
        return [m for m in means if isinstance(m, (int, float)) and m > 0]
    m = num(record, "time_us", "mean")
    return [m] if m else []


def _iteration_z(a, b):
    ta, tb = num(a, "time_us", "mean"), num(b, "time_us", "mean")
    sa, sb = num(a, "time_us", "stddev"), num(b, "time_us", "stddev")
    na, nb = num(a, "time_us", "n") or 0, num(b, "time_us", "n") or 0
    if na < 2 or nb < 2 or sa is None or sb is None:
        return None
    se = math.sqrt(sa * sa / na + sb * sb / nb)
    if se == 0:
        return math.inf if ta != tb else 0.0
    return (tb - ta) / se


def faster(a, b):
    """'a' or 'b' when that record's time is lower beyond noise, None when noise can explain
    the difference (or there is nothing to judge it by)."""
    ma, mb = repeat_means(a), repeat_means(b)
    if not ma or not mb:
        return None
    ta, tb = stats.median(ma), stats.median(mb)
    if abs(tb / ta - 1) <= MIN_CHANGE and abs(ta / tb - 1) <= MIN_CHANGE:
        return None
    if len(ma) >= 2 and len(mb) >= 2:
        _, _, up, down = stats.welch([math.log(x) for x in ma], [math.log(x) for x in mb])
        if 2 * min(up, down) >= ALPHA:
            return None
    else:
        z = _iteration_z(a, b)
        if z is None or abs(z) < SIGMA:
            return None
    return "a" if ta < tb else "b"


def unresolved_by_repeats(a, b):
    """(faster side, repeats per side) when every repeat of one side is faster than every repeat
    of the other by more than MIN_CHANGE, and yet faster() does not claim it: with 2 repeats a
    side the t-test has about one degree of freedom and cannot reach p < ALPHA even for a gap
    of 15x. The analysis then says the test could not decide, never that noise explains it.
    None otherwise."""
    ma, mb = repeat_means(a), repeat_means(b)
    if len(ma) < 2 or len(mb) < 2 or faster(a, b):
        return None
    if max(ma) * (1 + MIN_CHANGE) < min(mb):
        return "a", min(len(ma), len(mb))
    if max(mb) * (1 + MIN_CHANGE) < min(ma):
        return "b", min(len(ma), len(mb))
    return None


def describe_rule(records):
    """The rule in words, for the sentence that states the method."""
    repeats = max((len(repeat_means(r)) for r in records), default=1)
    if repeats >= 2:
        return (f"a difference is claimed only when the times differ by more than "
                f"{MIN_CHANGE * 100:g} % and Welch's t-test on the {repeats} repeats' log mean "
                f"times gives p < {ALPHA:g}")
    return (f"a difference is claimed only when the times differ by more than {MIN_CHANGE * 100:g} "
            f"% and by {SIGMA:g} standard errors of the iterations (one repeat per case: "
            "run-to-run variation is not measured; `repeats = 3` measures it)")
