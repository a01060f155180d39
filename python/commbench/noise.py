"""Whether two measurements of a time differ by more than noise can explain — the one rule the
analysis uses before it says "faster", "takes the lead" or "overtakes" (compare has its own,
family-wise version for its gate: compare.py).

Both need the two times (a side with repeats: its median repeat's) to differ by more than
MIN_CHANGE, and then: with >= 2 repeats on both sides (`repeats` in the experiment), Welch's
t-test on the logarithms of the repeats' mean times, two-sided p < ALPHA; with one repeat on a
side, SIGMA standard errors of the difference of the two means from their iterations (which do
not see run-to-run variation). describe_rule says which of the two the comparisons used."""
import math

from . import stats
from .load import num
from .series import case_time

MIN_CHANGE = 0.05   # smaller relative differences are never called real
ALPHA = 0.01        # two-sided, per comparison (a sentence is a claim; be strict)
SIGMA = 3.0         # one repeat: standard errors of the iterations


def repeat_means(record):
    """The time of each repeat of a case as shown (series.case_time: the mean, a workload step's
    p50), one value without `repeats`: the verdict and the ratio printed beside it must speak of
    the same statistic (a probe found steps judged by their means and printed by their p50s)."""
    for key in ("repeat_times_us", "repeat_means_us"):
        times = record.get(key)
        if isinstance(times, list) and len(times) >= 1:
            return [m for m in times if isinstance(m, (int, float)) and m > 0]
    m = case_time(record)
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
        # The iterations' z is of the means; a workload step is shown by its p50, which a few
        # slow steps can leave on the other side: no claim the printed times contradict.
        if (z > 0) != (tb > ta):
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


def _repeats_words(pairs):
    counts = sorted({len(repeat_means(r)) for pair in pairs for r in pair})
    span = f"{counts[0]}" if counts[0] == counts[-1] else f"{counts[0]} to {counts[-1]}"
    return f"{span} repeats a side"


def describe_rule(compared, records=()):
    """The rule in words, for the sentence that states the method: the rule each comparison made
    (`compared`: the (a, b) record pairs faster() judged) used — Welch's t-test where both sides
    had 2 or more repeats, the iterations' standard errors where a side had one — and only
    those. Without comparisons, the rule the `records`' repeats would get."""
    pairs = list(compared) or [(r, r) for r in records]
    welch = [p for p in pairs if min(len(repeat_means(p[0])), len(repeat_means(p[1]))) >= 2]
    single = len(pairs) - len(welch)
    repeated = any(len(repeat_means(r)) >= 2 for p in pairs for r in p)
    head = ("a difference is claimed only when the times"
            + (" (a side with repeats: its median repeat)" if repeated else "")
            + f" differ by more than {MIN_CHANGE * 100:g} % and")
    test = f"Welch's t-test on the repeats' log mean times gives p < {ALPHA:g} (two-sided)"
    iters = f"by {SIGMA:g} standard errors of the iterations"
    unmeasured = "run-to-run variation is not measured; `repeats = 3` measures it"
    if welch and single:
        n = len(welch)
        return (f"{head}, in the {n} comparison{'s' if n != 1 else ''} where both sides have 2 "
                f"or more repeats ({_repeats_words(welch)}), {test}; in the {single} where a side "
                f"has one repeat, {iters} ({unmeasured})")
    if welch:
        return f"{head} {test[:-1]}; {_repeats_words(welch)})"
    every = all(len(repeat_means(r)) <= 1 for p in pairs for r in p)
    return f"{head} {iters} (one repeat {'per case' if every else 'on a side'}: {unmeasured})"
