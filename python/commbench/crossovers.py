"""The analysis' comparisons of configurations (analysis.md, "Backends and memory types
compared"): series that share every dimension but the backend, memory type, job, run or a
workload's overlap, compared size by size — which is faster beyond noise (noise.py), where one
overtakes the other, and where the repeats were too few to decide."""
from . import fmt, noise
from .load import num
from .series import case_time, label


# Series compared size by size: the same op, world size, dtype, redop, placement, root, method,
# rank aggregation and workload (model, sharding, batch) — only the backend, memory, job, run or
# a workload's overlap may differ.
COMPARABLE = ("op", "world_size", "dtype", "redop", "placement", "root", "method",
              "rank_aggregation", "variant")


def _where(s):
    """Every dimension the compared series share, in words."""
    parts = [s["op"]]
    parts += [str(s[f]) for f in ("dtype", "redop") if s[f]]
    if s["placement"] == "in_place":
        parts.append("in-place")
    if s["root"] not in (None, 0) and s["op"] in ("broadcast", "reduce", "gather", "scatter"):
        parts.append(f"root {s['root']}")
    if s["method"]:
        parts.append(f"method {s['method']}" + (f"/{s['rank_aggregation']}"
                                                if s["rank_aggregation"] else ""))
    w = s["world_size"]
    return " ".join(parts) + f", {w} rank" + ("" if w == 1 else "s")


def _cv_words(recs):
    cvs = [num(r, "time_us", "cv") for r in recs]
    cvs = [c for c in cvs if c is not None]
    return f"CV up to {fmt.pct(max(cvs))}" if cvs else "no spread recorded"


def _pair_sentence(where, la, lb, a, b, note):
    ra = {r["bytes"]: r for r in a.records}
    rb = {r["bytes"]: r for r in b.records}
    common = sorted(k for k in ra if k in rb)
    if not common:
        return None
    verdicts = [(k, noise.faster(ra[k], rb[k])) for k in common]
    real = [(k, v) for k, v in verdicts if v]
    name = {"a": la, "b": lb}
    # Sizes where one side won every repeat but too few repeats let the test decide: said as
    # such, never as noise.
    undecided = {k: u for k, v in verdicts if not v
                 for u in [noise.unresolved_by_repeats(ra[k], rb[k])] if u}
    noisy = [k for k, v in verdicts if not v and k not in undecided]
    within = (f"; at {len(noisy)} of {len(common)} sizes the difference is within noise "
              f"({_cv_words([ra[k] for k in noisy] + [rb[k] for k in noisy])})" if noisy else "")
    if undecided:
        sides = {u[0] for u in undecided.values()}
        who = name[next(iter(sides))] if len(sides) == 1 else "one side"
        n = min(u[1] for u in undecided.values())
        within += (f"; at {len(undecided)} of {len(common)} sizes {who} was faster in every repeat, "
                   f"but {n} repeats per side were too few for the test to establish it "
                   f"(p ≥ {noise.ALPHA:g}; more repeats can)")
    if not real and not undecided:
        return (f"{where}: {la} and {lb} differ by no more than noise can explain at any of the "
                f"{len(common)} common sizes ({_cv_words([ra[k] for k in common] + [rb[k] for k in common])}){note}.")
    if not real:
        return f"{where}: {la} and {lb}: no difference established{within.replace('; at', ': at', 1)}{note}."
    ratio = {k: (case_time(rb[k]) / case_time(ra[k])) if v == "a"
             else (case_time(ra[k]) / case_time(rb[k]))
             for k, v in real}
    if len({v for _, v in real}) == 1:
        w = real[0][1]
        rs = [ratio[k] for k, _ in real]
        lo, hi = fmt.ratio(min(rs)), fmt.ratio(max(rs))
        span = lo if lo == hi else f"{lo} to {hi}"
        # "all" only when every common size was established: an undecided size is not one.
        at = f"all {len(common)} common sizes" if len(real) == len(common) else \
            f"{len(real)} of {len(common)} common sizes"
        other = lb if w == "a" else la
        return (f"{where}: {name[w]} is faster than {other} at {at}, by {span} (time ratio)"
                f"{within}{note}.")
    changes = []
    for (k0, v0), (k1, v1) in zip(real, real[1:]):
        if v0 != v1:
            t_w = case_time((ra if v1 == "a" else rb)[k1])
            t_l = case_time((rb if v1 == "a" else ra)[k1])
            changes.append(f"{name[v1]} takes the lead by {fmt.size(k1)} ({fmt.num(t_w)} µs vs "
                           f"{fmt.num(t_l)} µs; at {fmt.size(k0)} it was slower, beyond noise)")
    return (f"{where}: {name[real[0][1]]} is faster at {fmt.size(real[0][0])}; "
            + "; ".join(changes) + f"{within}{note}.")


# What may differ between two compared series (COMPARABLE is what may not): the job,
# the run, the data path (backend, memory type, staging) and a workload's overlap.
FREE_FIELDS = ("source", "run", "backend", "memory", "staging", "overlap")


def _shares_a_size(a, b):
    return bool(set(a.sizes) & set(b.sizes))


def _between(c, a, b):
    """Whether series `c` lies between `a` and `b`: in every free dimension it has a's value or
    b's, so a against c and c against b each change part of what a against b changes at once,
    and it was measured at a size each of them was."""
    return (c is not a and c is not b and all(c[f] in (a[f], b[f]) for f in FREE_FIELDS)
            and _shares_a_size(a, c) and _shares_a_size(c, b))


def compared_series(all_series):
    """(group, a, b) for every two series the analysis compares: the same COMPARABLE values, and
    no third series between them (_between). Configurations that differ in one dimension are
    always compared (gloo against ucx with the same overlap; overlap on against off on the same
    backend); two that differ in several only when nothing measured lies between them (each job
    of a combined report ran one backend): "gloo, overlap on against ucx, overlap off" mixed two
    effects and was said next to the two comparisons it is made of."""
    groups = {}
    for s in all_series:
        groups.setdefault(tuple(s[f] for f in COMPARABLE), []).append(s)
    for group in groups.values():
        for i in range(len(group)):
            for j in range(i + 1, len(group)):
                a, b = group[i], group[j]
                if not any(_between(c, a, b) for c in group):
                    yield group, a, b


def compared_records(all_series):
    """(record a, record b) for every size two compared series share: each comparison
    noise.faster() judges, for the sentence that says by which rule (noise.describe_rule)."""
    out = []
    for _, a, b in compared_series(all_series):
        rb = {r["bytes"]: r for r in b.records}
        out += [(r, rb[r["bytes"]]) for r in a.records if r["bytes"] in rb]
    return out


def _compared_where(s):
    """_where's words for what the compared series share, with a workload's model, sharding
    and batch ("data_parallel resnet50 ddp, batch 32 f32 ..."): two workloads' sentences read
    alike without them."""
    where = _where(s)
    if s["variant"]:
        where = f"{s['op']} ({s['variant']})" + where[len(s["op"]):]
    return where


def _one_size_sentence(where, la, lb, a, b, size, note):
    """The comparison of two series measured at one common size: said as that one size ("at
    their one common size, 4 KiB"), never "at any of the 1 common sizes" or "at all 1 common
    sizes"; a workload's step, whose size is its gradients' bytes, without it."""
    ra = next(r for r in a.records if r["bytes"] == size)
    rb = next(r for r in b.records if r["bytes"] == size)
    at = "" if a["variant"] else f" at their one common size, {fmt.size(size)}"
    verdict = noise.faster(ra, rb)
    if verdict:
        ta, tb = case_time(ra), case_time(rb)
        win, lose, ratio = (la, lb, tb / ta) if verdict == "a" else (lb, la, ta / tb)
        return f"{where}: {win} is faster than {lose}{at}, by {fmt.ratio(ratio)} (time ratio){note}."
    undecided = noise.unresolved_by_repeats(ra, rb)
    if undecided:
        who = la if undecided[0] == "a" else lb
        return (f"{where}: {la} and {lb}: no difference established{at}: {who} was faster in "
                f"every repeat, but {undecided[1]} repeats per side were too few for the test to "
                f"establish it (p ≥ {noise.ALPHA:g}; more repeats can){note}.")
    return (f"{where}: {la} and {lb} differ by no more than noise can explain{at} "
            f"({_cv_words([ra, rb])}){note}.")


def comparisons(all_series):
    """Sentences on which configuration is faster, and where one overtakes another, for the
    series compared_series pairs — each claim only where noise cannot explain it (noise.py)."""
    out = []
    for group, a, b in compared_series(all_series):
        # Each side named by what tells the two apart; what they share among the group's
        # differences ("gloo" of "gloo: overlap on and overlap off") goes with the rest of
        # what they share.
        la, lb = (label(x, [a, b], always=(), never=COMPARABLE) for x in (a, b))
        differ = tuple(f for f in FREE_FIELDS if a[f] != b[f])
        shared = label(a, group, always=("backend",), never=COMPARABLE + differ)
        if not la or not lb:   # what differs is unnamed on one side (a run without a name)
            la, lb = (label(x, group, never=COMPARABLE) for x in (a, b))
            shared = ""
        note = f" (different memory: {a['memory']} vs {b['memory']})" \
            if a["memory"] != b["memory"] else ""
        where = _compared_where(a) + (f", {shared}" if shared else "")
        common = sorted(set(a.sizes) & set(b.sizes))
        if len(common) == 1:
            text = _one_size_sentence(where, la, lb, a, b, common[0], note)
        else:
            text = _pair_sentence(where, la, lb, a, b, note)
        if text:
            out.append(text)
    return out


# The name analysis.py has always imported: every comparison sentence.
crossovers = comparisons
