"""The few statistical tests compare and the analysis need, in plain Python (no SciPy on the
machines commbench runs on): Student's t tail, Welch's t-test, Holm's step-down correction,
a normal tail. Formulas: NIST/SEMATECH e-Handbook §1.3.5.3 (Welch),
Numerical Recipes §6.4 (incomplete beta, whose continued fraction gives Student's t tail)."""
import math


def mean(v):
    return sum(v) / len(v)


def variance(v):
    """Sample variance (n - 1); 0 for a single value."""
    if len(v) < 2:
        return 0.0
    m = mean(v)
    return sum((x - m) ** 2 for x in v) / (len(v) - 1)


def median(v):
    s = sorted(v)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _betacf(a, b, x):
    # Lentz's continued fraction for the incomplete beta function.
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        de = d * c
        h *= de
        if abs(de - 1) < 1e-14:
            break
    return h


def betai(a, b, x):
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_sf(t, df):
    """P(T > t) for Student's t with `df` degrees of freedom (df may be fractional)."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * betai(df / 2, 0.5, df / (df + t * t))
    return tail if t > 0 else 1 - tail


def normal_sf(z):
    """P(Z > z) for a standard normal."""
    return 0.5 * math.erfc(z / math.sqrt(2))


_MIN_VARIANCE = {}


def min_normal_variance(n):
    """Variance of the smallest of n independent standard normals (1 at n = 1, 0.448 at 5):
    what the fastest of n repeats varies by, in units of one repeat's spread. compare judges the
    fastest repeats, which vary more than the mean of n (1/n) does. Simpson's rule over
    [-9, 9], whose tails hold less than 1e-18 of the density at any n."""
    if n not in _MIN_VARIANCE:
        steps, lo, hi = 3600, -9.0, 9.0
        h = (hi - lo) / steps
        m0 = m1 = m2 = 0.0
        for i in range(steps + 1):
            x = lo + i * h
            w = 1 if i in (0, steps) else (4 if i % 2 else 2)
            pdf = n * math.exp(-x * x / 2) / math.sqrt(2 * math.pi) * normal_sf(x) ** (n - 1)
            m0 += w * pdf
            m1 += w * pdf * x
            m2 += w * pdf * x * x
        m0, m1, m2 = (v * h / 3 for v in (m0, m1, m2))
        _MIN_VARIANCE[n] = m2 / m0 - (m1 / m0) ** 2
    return _MIN_VARIANCE[n]


def welch(a, b):
    """Welch's t-test of mean(b) - mean(a): (t, df, one-sided p that b > a, one-sided p that
    b < a). Both samples need >= 2 values. Equal values on both sides: t = ±inf when the means
    differ (p = 0), 0 when they do not (p = 0.5)."""
    na, nb = len(a), len(b)
    va, vb = variance(a) / na, variance(b) / nb
    diff = mean(b) - mean(a)
    se = math.sqrt(va + vb)
    if se == 0:
        if diff == 0:
            return 0.0, float(na + nb - 2), 0.5, 0.5
        t = math.copysign(math.inf, diff)
        return t, float(na + nb - 2), (0.0 if diff > 0 else 1.0), (1.0 if diff > 0 else 0.0)
    t = diff / se
    den = (va * va / (na - 1) if na > 1 else 0) + (vb * vb / (nb - 1) if nb > 1 else 0)
    df = (va + vb) ** 2 / den if den > 0 else float(na + nb - 2)
    return t, df, t_sf(t, df), t_sf(-t, df)


def holm(pvalues, alpha):
    """Holm's step-down procedure: for each p-value (None = not tested), whether it is
    significant with the family-wise error rate held at `alpha` over the tested ones."""
    tested = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    out = [False] * len(pvalues)
    m = len(tested)
    for k, (p, i) in enumerate(tested):
        if p > alpha / (m - k):
            break
        out[i] = True
    return out
