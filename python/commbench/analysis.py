"""The analysis in words (seed 001's analysis.txt): plain sentences, every number taken from the
records. Nothing is said that the data cannot show: a sentence is left out when its inputs are
missing (no small sizes, one backend only, one world size only, no samples...)."""
import os
import re
import statistics

from . import fmt, noise
from .crossovers import COMPARABLE, comparisons, compared_records, crossovers  # noqa: F401 (API)
from .nothing_measured import nothing_measured  # noqa: F401 (API)
from .load import num
from .scaling_sentences import scaling
from .series import SERIES_FIELDS, label, pairs, series_of

SMALL_BYTES = 64 * 1024   # "small message": up to 64 KiB per rank
HIGH_CV = 0.05            # the console's CV warning threshold (docs/output.md)
STRAGGLER_RATIO = 1.10    # a rank 10 % slower than the median rank


# What a pattern's sentence reports (docs/metrics.md): a latency where one message's time is the
# point, a bandwidth where many messages are in flight, a message rate for msg_rate.
LATENCY_OPS = {"pingpong"}
BANDWIDTH_OPS = {"unidir_bw", "bidir_bw"}
RATE_OPS = {"msg_rate"}
P2P_OPS = LATENCY_OPS | BANDWIDTH_OPS | RATE_OPS | {"sendrecv"}
# The patterns between the two ranks of `peers` (common/ops.h between_two_peers): the other ranks
# take no part.
TWO_PEER_OPS = {"pingpong", "unidir_bw", "bidir_bw"}


def floor(series):
    """(time µs, bytes) of the lowest mean time among the small sizes, None without any."""
    pts = [(num(r, "time_us", "mean"), r.get("bytes", 0)) for r in series.records
           if 0 < r.get("bytes", 0) <= SMALL_BYTES]
    pts = [p for p in pts if p[0] is not None]
    return min(pts) if pts else None


def peak(series, field="busbw_gbps"):
    """(value, bytes) of the highest `field`, None when it is 0 everywhere (barrier, 1 rank)."""
    pts = [(num(r, field), r.get("bytes", 0)) for r in series.records]
    pts = [p for p in pts if p[0] is not None and p[0] > 0]
    if not pts:
        return None
    return max(pts, key=lambda p: (p[0], -p[1]))


def reach(series, fraction, peak_bw, field="busbw_gbps"):
    """The smallest size whose `field` is at least `fraction` of the peak."""
    for r in series.records:
        bw = num(r, field)
        if bw is not None and bw >= fraction * peak_bw:
            return r.get("bytes", 0)
    return None


def _peak_words(s, field, name, unit_fmt):
    pk = peak(s, field)
    if not pk:
        return []
    largest = max(s.sizes)
    where = " — the largest size measured, so the peak may lie beyond it" \
        if pk[1] == largest and len(s.sizes) > 1 else ""
    out = [f"peak {name} {unit_fmt(pk[0])} at {fmt.size(pk[1])}{where}"]
    if len(s.sizes) > 1:
        r50, r90 = reach(s, 0.5, pk[0], field), reach(s, 0.9, pk[0], field)
        out.append(f"50 % of that peak first at {fmt.size(r50)}, 90 % at {fmt.size(r90)}")
    return out


def _gbps(x):
    return f"{fmt.num(x)} GB/s"


def _mps(x):
    return fmt.rate(x * 1e6)


def series_sentence(s, group):
    """The figures that matter for the series' pattern: collectives a small-message latency
    floor and peak busbw; pingpong a one-way latency; unidir_bw/bidir_bw a bandwidth (no
    latency: their time is per message with a window in flight); msg_rate messages/s."""
    same_op = [g for g in group if g["op"] == s["op"]]
    always = ("backend", "world_size") + (("source",) if len({g["source"] for g in group}) > 1
                                          else ())
    head = f"**{s['op']}, {label(s, same_op, always=always)}**"
    op = s["op"]
    parts = []
    if op == "barrier":
        t = [num(r, "time_us", "mean") for r in s.records]
        t = [x for x in t if x is not None]
        if t:
            parts.append(f"mean time {fmt.num(min(t))} µs")
    elif op in BANDWIDTH_OPS:
        both = " (both directions together)" if op == "bidir_bw" else ""
        parts += _peak_words(s, "algbw_gbps", f"bandwidth{both}", _gbps)
        pk = peak(s, "msg_rate_mps")
        if pk:
            parts.append(f"highest message rate {_mps(pk[0])} at {fmt.size(pk[1])}")
    elif op in RATE_OPS:
        pk = peak(s, "msg_rate_mps")
        if pk:
            parts.append(f"peak message rate {_mps(pk[0])} at {fmt.size(pk[1])} "
                         f"({s['world_size'] // 2} pair(s) sending)")
        parts += _peak_words(s, "algbw_gbps", "bandwidth", _gbps)
    else:
        fl = floor(s)
        if fl:
            what = "one-way latency (half the round trip)" if op in LATENCY_OPS \
                else "small-message latency floor"
            parts.append(f"{what} {fmt.num(fl[0])} µs (lowest mean time up to "
                         f"{fmt.size(SMALL_BYTES)}, at {fmt.size(fl[1])})")
        if op in P2P_OPS:
            parts += _peak_words(s, "algbw_gbps", "bandwidth", _gbps)
        else:
            parts += _peak_words(s, "busbw_gbps", "busbw", _gbps)
    if not parts:
        return None
    return f"{head}: " + "; ".join(parts) + f" ({fmt.count(len(s.records), 'size')})."


def _number(x):
    """A number as the console prints it (C++ `{}`: the shortest text that reads back the same,
    no trailing '.0'): -7172658, -3.82360158795124e-21."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return repr(x) if isinstance(x, float) else str(x)


GUARDS = {"past_recv_end": ("past the end of", "receive", "after"),
          "past_send_end": ("past the end of", "send", "after"),
          "before_recv_start": ("before the start of", "receive", "before"),
          "before_send_start": ("before the start of", "send", "before")}


def mismatch_words(first):
    """A record's `first_wrong` in the words of the case's reason on the console
    (case_runner.cpp, wrong_reason): `got` null is the poison, nothing was written there;
    `expected` null, an element that had to stay untouched."""
    check = f"; {first['check']} check" if first.get("check") else ""
    if first.get("buffer") in GUARDS:
        where, which, side = GUARDS[first["buffer"]]
        return (f"rank {first.get('rank')} wrote {where} its {which} buffer, element "
                f"{first.get('index')} {side} it{check}")
    expected = ("it untouched (no output goes there)" if first.get("expected") is None
                else _number(first["expected"]))
    got = ("the poison (nothing was written)" if first.get("got") is None
           else _number(first["got"]))
    send = " of the send buffer, which must not change" if first.get("buffer") == "send" else ""
    return (f"rank {first.get('rank')}, element {first.get('index')}{send}, expected {expected}, "
            f"got {got}{check}")


def _namer(jobs):
    """A case in words for the Result quality lines: op, size, backend, ranks — and its run and
    repeat where the job has several, so two runs' (or repeats') lines are never identical."""
    runs = {id(j): len({c.get("run") for c in j.cases}) > 1 for j in jobs}
    repeats = {id(j): any(c.get("repeat") for c in j.cases) for j in jobs}

    def name(j, c, job=True):
        run = f", run {c.get('run')}" if runs[id(j)] else ""
        rep = f", repeat {int(c.get('repeat') or 0) + 1}" if repeats[id(j)] else ""
        return (f"{c.get('op')} {fmt.size(c.get('bytes', 0))} {c.get('backend')} "
                f"{fmt.ranks(c.get('world_size'))}{run}{rep}" + (f" ({j.label})" if job else ""))
    return name


def quality(jobs):
    """Failed checks, failed/unsupported cases, not-ok executions, high CV."""
    out = []
    for j in jobs:
        for e in j.executions:
            if e.get("status") not in (None, "ok"):
                rank = e.get("failed_rank", -1)
                who = f" (rank {rank})" if isinstance(rank, int) and rank >= 0 else ""
                out.append(f"Execution {e.get('run')} {e.get('backend')} "
                           f"{fmt.ranks(e.get('world_size'))} in {j.label}: {e.get('status')}{who} "
                           f"— {e.get('reason', '')}")
    name = _namer(jobs)
    cases = [(j, c) for j in jobs for c in j.cases]
    wrong = [(j, c) for j, c in cases if isinstance(c.get("wrong"), int) and c["wrong"] > 0]
    for j, c in wrong:
        first = c.get("first_wrong")
        extra = f"; first mismatch: {mismatch_words(first)}" if isinstance(first, dict) else ""
        out.append(f"Check failed: {name(j, c)} — {c['wrong']} wrong elements{extra}.")
    for j, c in cases:
        if c.get("status") == "failed" and not any(c is w for _, w in wrong):
            out.append(f"Case failed: {name(j, c)} — {c.get('reason', '')}.")
    checked = [c for _, c in cases if isinstance(c.get("wrong"), int) and c["wrong"] >= 0]
    if checked and not wrong:
        out.append(f"All {len(checked)} checked cases returned correct results (#wrong 0).")
    unsupported = [c for _, c in cases if c.get("status") == "unsupported"]
    if unsupported:
        out.append(f"{len(unsupported)} case(s) unsupported by their backend, e.g. "
                   f"{unsupported[0].get('op')} on {unsupported[0].get('backend')}: "
                   f"{unsupported[0].get('reason', '')}.")
    ok = [(j, c) for j, c in cases if c.get("status") == "ok"
          and num(c, "time_us", "cv") is not None]
    noisy = sorted(((num(c, "time_us", "cv"), j, c) for j, c in ok
                    if num(c, "time_us", "cv") > HIGH_CV), key=lambda t: -t[0])
    if noisy:
        cv, j, c = noisy[0]
        out.append(f"{len(noisy)} of {len(ok)} measured cases have a CV above "
                   f"{fmt.pct(HIGH_CV)}; the highest is {name(j, c, job=False)} at {fmt.pct(cv)} — more "
                   "iterations or a quieter machine would narrow them.")
    elif ok:
        out.append(f"All {len(ok)} measured cases have a CV of at most {fmt.pct(HIGH_CV)}.")
    return out


def rank_means(c):
    """A case's `rank_mean_us` with None for each rank that took no part in the measurement, or
    None when the record has no mean per rank. A rank took no part when its mean is 0 (ranks
    outside a point-to-point pattern report 0, and so does pingpong's second peer:
    docs/metrics.md) or, in a two-peer pattern, when it is not one of the record's `peers`
    (older records have no `peers`: then only the 0 tells)."""
    m = c.get("rank_mean_us") or []
    if len(m) != c.get("world_size") or \
            not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in m):
        return None
    peers = c.get("peers")
    if c.get("op") in TWO_PEER_OPS and isinstance(peers, list) and len(peers) == 2:
        keep = set(peers)
    else:
        keep = None
    return [x if x > 0 and (keep is None or i in keep) else None for i, x in enumerate(m)]


def straggler_means(c):
    """The participating ranks' means of a case that can show a straggler, as (rank, mean)
    pairs; None for a case that cannot: not measured, all_pairs, or fewer than 2 participating
    ranks (pingpong reports only its first peer)."""
    if c.get("status") != "ok" or c.get("op") == "all_pairs":
        return None
    m = rank_means(c)
    if m is None:
        return None
    part = [(i, x) for i, x in enumerate(m) if x is not None]
    return part if len(part) >= 2 else None


def stragglers(jobs):
    """Per execution: the rank that most often has the highest own mean time, when it is
    STRAGGLER_RATIO above the median participating rank in at least half of the cases. Ranks that
    took no part in a case (rank_means) are left out of it; a case with fewer than 2
    participating ranks is not judged."""
    out = []
    for j in jobs:
        execs = {}
        for c in j.cases:
            part = straggler_means(c)
            if part is None:
                continue
            # One execution: with `repeats`, each repeat is an execution of its own.
            execs.setdefault((c.get("run"), c.get("backend"), c.get("world_size"),
                              c.get("repeat") or 0), []).append(part)
        repeated = any(k[3] for k in execs)
        for (run, backend, world, repeat), rows in execs.items():
            counts = {}
            worst = {}
            for part in rows:
                med = statistics.median(x for _, x in part)
                if med <= 0:
                    continue
                r, slowest = max(part, key=lambda p: p[1])
                ratio = slowest / med
                if ratio >= STRAGGLER_RATIO:
                    counts[r] = counts.get(r, 0) + 1
                    worst[r] = max(worst.get(r, 0), ratio)
            if not counts:
                continue
            r = max(counts, key=lambda k: counts[k])
            if counts[r] * 2 >= len(rows):
                # Counted from 1, as the console does (records keep `repeat` from 0).
                which = f", repeat {repeat + 1}" if repeated else ""
                out.append(f"{run} {backend} {fmt.ranks(world)}{which} ({j.label}): rank {r} is the slowest "
                           f"rank, at least {fmt.pct(STRAGGLER_RATIO - 1)} above the median "
                           f"participating rank, in {counts[r]} of {len(rows)} cases (up to "
                           f"{fmt.ratio(worst[r])} the median; rank_mean_us).")
    return out


def links(jobs):
    """all_pairs: per size the fastest and slowest directed pair by bandwidth."""
    out = []
    groups = pairs(jobs)
    dtypes = len({k[6] for k in groups}) > 1
    for (source, run, backend, memory, world, nbytes, dtype), recs in groups.items():
        bw = [(num(r, "algbw_gbps"), r.get("src"), r.get("dst")) for r in recs
              if r.get("status") == "ok" and num(r, "algbw_gbps")]
        if len(bw) < 2:
            continue
        lo, hi = min(bw), max(bw)
        med = statistics.median(b[0] for b in bw)
        out.append(f"all_pairs {backend} {fmt.ranks(world)}, {fmt.size(nbytes)}{' ' + dtype if dtypes else ''}: fastest pair "
                   f"{hi[1]}→{hi[2]} {fmt.num(hi[0])} GB/s, slowest {lo[1]}→{lo[2]} "
                   f"{fmt.num(lo[0])} GB/s ({fmt.ratio(lo[0] / med)} the median pair, "
                   f"{fmt.num(med)} GB/s; {len(bw)} pairs).")
    return out


def machine(jobs):
    """Executions that started on a busy or oversubscribed host (their `host_load`, recorded
    before every execution): those times include waiting for a CPU."""
    out = []
    for j in jobs:
        loads = [(e, e.get("host_load")) for e in j.executions if isinstance(e.get("host_load"), dict)]
        busy = [(e, h) for e, h in loads if h.get("busy") or h.get("oversubscribed")]
        if not busy:
            continue
        over = sum(1 for _, h in busy if h.get("oversubscribed"))
        worst = max(busy, key=lambda eh: (eh[1].get("runnable_others", 0)
                                          + eh[1].get("ranks_here", 0)) / max(eh[1].get("cpus", 1), 1))
        e, h = worst
        la = h.get("load_average") or [None]
        out.append(f"{len(busy)} of {len(j.executions)} executions in {j.label} started on a busy "
                   f"machine ({over} oversubscribed: more ranks than CPUs); the worst, {e.get('run')} "
                   f"{e.get('backend')} {fmt.ranks(e.get('world_size'))}, had {h.get('ranks_here')} "
                   f"rank(s) + {h.get('runnable_others')} other runnable task(s) on {h.get('cpus')} "
                   f"CPU(s), load average {fmt.num(la[0]) if la[0] is not None else 'n/a'}. Their "
                   "times include waiting for a CPU: do not publish them as the backend's "
                   "performance.")
    return out


def unfinished(jobs):
    """Jobs that did not finish normally, so their records may not be the whole experiment: one
    killed (results.jsonl without its `job_end` line and no summary.json), and one whose
    results.jsonl stopped being written mid-job (no `job_end` line, summary.json written: a full
    disk) — read from both files (load.read_job). Each sentence says what to do."""
    out = []
    for j in jobs:
        if j.cut_line is not None:
            out.append(f"{j.label}: the last line of results.jsonl (line {j.cut_line}) was cut short "
                       "and is skipped (the machine went down while it was written, or the file "
                       "was damaged); every line before it was read.")
        if j.finished:
            continue
        rerun = f"`commbench run {j.header['file']}`" if j.header.get("file") else "`commbench run`"
        if j.summary is None:
            tmp = [f for f in ("summary.json.tmp", "summary.md.tmp")
                   if os.path.exists(os.path.join(j.path, f))]
            free = (f" Its leftover {' and '.join(tmp)} still hold the disk space reserved for the "
                    f"summaries: `rm {os.path.join(j.path, 'summary.*.tmp')}` frees it."
                    if tmp else "")
            out.append(f"{j.label} did not finish: results.jsonl has no job_end line and there is "
                       "no summary.json (the job was killed, or its machine went down): it holds "
                       f"only the {fmt.count(len(j.cases), 'case record')} measured before it "
                       "stopped, and the cases it had not reached are missing. Do not read it as "
                       f"the whole experiment: rerun the experiment ({rerun}) for complete "
                       f"results.{free}")
            continue
        code = j.exit_code
        why = (": results could not be written, a full disk or an I/O error" if code == 3 else "")
        got = j.from_summary
        held = (j.jsonl_counts or {}).get("cases", 0)
        if got:
            taken = " and ".join(fmt.count(n, w) for w, n in (
                ("case record", got.get("cases", 0)), ("execution outcome", got.get("executions", 0)),
                ("memory record", got.get("memory", 0))) if n)
            files = (f"results.jsonl holds only {held} of the job's "
                     f"{fmt.count(len(j.cases), 'case record')} "
                     f"and no job_end line; the other {taken} were read from summary.json")
        else:
            files = "results.jsonl has no job_end line, but summary.json holds the job's records"
        out.append(f"{j.label} did not complete normally (exit code "
                   f"{code if code is not None else 'unknown'}{why}): {files}. Cases its stopped "
                   "executions had not reached are missing (see Result quality). Free space where "
                   f"its results go (or choose another output_dir, `-o`) and rerun the experiment "
                   f"({rerun}) for complete results.")
    return out


def not_gpu_performance(jobs):
    """Executions on the tests' simulated GPU (a CPU emulation that names itself) and cases
    whose ranks shared a GPU (oversubscribe_gpu): numbers that are not a GPU's performance."""
    out = []
    for j in jobs:
        for e in j.executions:
            rank0 = ((e.get("metadata") or {}).get("ranks") or {}).get("0") or {}
            name = ((rank0.get("gpu") or {}).get("cuda") or {}).get("name")
            if isinstance(name, str) and "simulated" in name:
                out.append(f"{e.get('run')} {e.get('backend')} {fmt.ranks(e.get('world_size'))} in {j.label} "
                           f"ran on {name}: its times are a CPU emulation's, not a GPU's.")
        shared = sum(1 for c in j.cases if c.get("oversubscribe_gpu"))
        if shared:
            out.append(f"{shared} case(s) in {j.label} ran with ranks sharing a GPU "
                       "(oversubscribe_gpu): a correctness mode, not a performance number.")
    return out


def analyse(jobs):
    """[(section title, [sentences])], sections without sentences left out."""
    all_series = series_of(jobs)
    per = [t for t in (series_sentence(s, all_series) for s in all_series) if t]
    sections = [
        ("⚠ Nothing measured", nothing_measured(jobs)),
        ("⚠ Busy machine", machine(jobs)),
        ("⚠ Not GPU performance", not_gpu_performance(jobs)),
        ("Per backend and op", per),
        ("Backends and memory types compared", comparisons(all_series)),
        ("Scaling across world sizes", scaling(jobs)),
        ("Links (all_pairs)", links(jobs)),
        ("Stragglers", stragglers(jobs)),
        ("Result quality", quality(jobs)),
    ]
    return [(t, s) for t, s in sections if s]


def _aggregation_words(method, agg):
    m = re.fullmatch(r"rank(\d+)", agg or "")
    if method == "per_iteration" and agg == "sender_to_arrival":
        return ("all_pairs on one host clock: each transfer from the sender's post to the receiver "
                "seeing the message (docs/metrics.md, the all-pairs sweep); the mean over repetitions")
    if method == "per_iteration":
        return ("method per_iteration: every iteration starts together on all ranks and its "
                "time is the slowest rank's; the mean over iterations")
    if method is None:
        return ("method not recorded (records older than schema 2): per iteration the slowest "
                "rank; the mean over iterations")
    if method == "per_step":
        return ("method per_step (workload = \"data_parallel\", docs/workloads.md): each training "
                "step's time is the slowest rank's; the mean over steps")
    what = {"batch": "the iterations run back to back, per rank the elapsed time / N",
            "graph": "the iterations captured in one CUDA graph and launched once, per rank the "
                     "elapsed time / N"}.get(method, f"method {method}")
    if m:
        who = f"rank {m.group(1)}'s clock (a point-to-point pattern's first peer, as OSU)"
    else:
        who = {"avg": "averaged over the ranks", "max": "the slowest rank's",
               "min": "the fastest rank's", "rank0": "rank 0's"}.get(agg, f"ranks {agg}")
    return f"method {method}, rank_aggregation {agg}: {what}, {who}"


def method_sentence(jobs):
    """How the times were taken — from the records themselves, one clause per method and
    aggregation found, with how many cases each covers."""
    found = {}
    records = []
    for j in jobs:
        for c in j.cases:
            if c.get("status") != "ok":
                continue
            records.append(c)
            k = (c.get("method"), c.get("rank_aggregation"))
            found[k] = found.get(k, 0) + 1
    if not found:
        return "No case was measured."
    clauses = [f"{_aggregation_words(m, a)} ({n} record{'s' if n != 1 else ''})"
               for (m, a), n in sorted(found.items(), key=lambda kv: -kv[1])]
    # The rule each comparison the analysis makes used; without any, the one the records'
    # repeats would get, counted over every case, all_pairs included (series_of leaves those
    # out): the series' and the pairs' records each carry every repeat's mean (`repeat_means_us`).
    all_series = series_of(jobs)
    judged = ([r for s in all_series for r in s.records]
              + [r for recs in pairs(jobs).values() for r in recs])
    return ("Times are mean times per operation; " + "; ".join(clauses) + " (docs/metrics.md, "
            "\"Methods\"). In comparisons, "
            + noise.describe_rule(compared_records(all_series), judged) + ".")


def markdown(jobs):
    lines = ["# Analysis", ""]
    for warning in unfinished(jobs):
        lines += [f"**⚠ {warning}**", ""]
    names = ", ".join(j.label for j in jobs)
    lines.append(f"From {sum(len(j.cases) for j in jobs)} case records in {names}. "
                 + method_sentence(jobs))
    lines.append("")
    for title, sentences in analyse(jobs):
        lines += [f"## {title}", ""]
        lines += [f"- {s}" for s in sentences]
        lines.append("")
    return "\n".join(lines)


def console(jobs):
    """The same sentences for the end of the console summary: '# ' lines, no Markdown bold."""
    out = ["#", "# Analysis (analysis.md):"] + [f"# ⚠ {w}" for w in unfinished(jobs)] + [
        f"# {method_sentence(jobs)}"]
    for title, sentences in analyse(jobs):
        out.append(f"# {title}:")
        out += [f"#   - {s.replace('**', '')}" for s in sentences]
    return "\n".join(out)
