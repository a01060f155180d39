"""`commbench report DIR...`: figures, report.html, report.md, analysis.md and combined.csv for
one or more results folders."""
import json
import os
import tempfile
import time

from . import analysis, expect, fmt
from .document import Doc, to_html, to_markdown
from .load import num, write_combined_csv
from .plots import draw_all
from .plots_ranks import pair_matrix
from .safe_files import Folder
from .series import case_busbw, case_time, is_workload, label, pairs, series_of


def default_out_dir(paths, jobs):
    if len(jobs) == 1:
        return os.path.join(jobs[0].path, "report")
    return os.path.abspath(f"report-{time.strftime('%Y%m%d-%H%M%S')}")


def _rank_backend_facts(metadata):
    """Each rank's `backend` facts of an execution's (or the job's) metadata: {rank: {key: value}}."""
    ranks = (metadata or {}).get("ranks") if isinstance(metadata, dict) else None
    if not isinstance(ranks, dict):
        return {}
    return {r: facts for r, m in ranks.items() if isinstance(m, dict)
            for facts in [m.get("backend")] if isinstance(facts, dict)}


def library_versions(name, backend, executions=()):
    """[(library, [versions])] that the plugin reported for the library it wraps: the
    `<library>_version` facts of its ranks' metadata (gloo_version, ucx_version, nccl_version:
    docs/output.md, `metadata`), from summary.json's job.backends[name], else from the
    executions of that backend. [] when none was reported (the backend never started, an older
    plugin, a plugin that does not say)."""
    sources = [(backend or {}).get("metadata")] + [
        e.get("metadata") for e in executions or () if e.get("backend") == name]
    for metadata in sources:
        found = {}
        for facts in _rank_backend_facts(metadata).values():
            for key, value in facts.items():
                if not (isinstance(key, str) and key.endswith("_version") and len(key) > 8):
                    continue
                if value in (None, "") or isinstance(value, (dict, list)):
                    continue
                versions = found.setdefault(key[:-len("_version")], [])
                if str(value) not in versions:
                    versions.append(str(value))
        if found:
            return sorted(found.items())
    return []


def backend_version_text(name, backend, executions=()):
    """A backend's versions for the job's metadata table: the library's, as the plugin reported it,
    with the plugin's own version labelled as such ("ucx 1.13.1 (plugin 0.1.0)"): summary.json's
    `version` is the plugin's, which read as the library's when shown alone."""
    b = backend if isinstance(backend, dict) else {}
    libs = library_versions(name, b, executions)
    # Ranks that disagree (hosts with different installs) are all named.
    lib = ", ".join(f"{lib} {' / '.join(vs)}" + (" (differs across ranks)" if len(vs) > 1 else "")
                    for lib, vs in libs) or "library version not reported"
    plugin = f" (plugin {b['version']})" if b.get("version") not in (None, "") else ""
    desc = f" — {b['description']}" if b.get("description") not in (None, "") else ""
    return f"{lib}{plugin}{desc}"


def _job_section(doc, j):
    doc.h(3, f"{j.label}")
    s = (j.summary or {}).get("job", {})
    rows = [["experiment", j.name], ["file", s.get("file") or j.header.get("file", "")],
            ["folder", j.path], ["host", s.get("host") or j.header.get("host", "")],
            ["started", s.get("started_at") or j.header.get("started_at", "")],
            ["finished", s.get("finished_at") or (j.end or {}).get("finished_at",
                                                                     "did not finish")],
            ["commbench", s.get("commbench_version") or j.header.get("commbench_version", "")],
            ["exit code", j.exit_code if j.exit_code is not None else "none (did not finish)"]]
    env = s.get("environment") or {}
    for k in ("launcher", "clock"):
        if k in env:
            v = env[k]
            rows.append([k, ", ".join(v) if isinstance(v, list) else v])
    for name, b in (s.get("backends") or {}).items():
        rows.append([f"backend {name}", backend_version_text(name, b, j.executions)])
    doc.table(["", ""], rows, align=["l", "l"])
    if j.executions:
        doc.table(["run", "backend", "ranks", "status", "cases", "elapsed (s)", "reason"],
                  [[e.get("run"), e.get("backend"), e.get("world_size"), e.get("status"),
                    e.get("cases_done"), fmt.num(e.get("elapsed_s")) if isinstance(
                        e.get("elapsed_s"), (int, float)) else "", e.get("reason", "")]
                   for e in j.executions])


def _repeats_counts(records):
    """How many measured repeats each shown record stands for (series.py's `repeat_means_us`)."""
    return [len(r["repeat_means_us"]) for r in records
            if isinstance(r.get("repeat_means_us"), list)]


def _repeats_sentence(records, what):
    """With `repeats`, the tables show each case's median repeat (series.py), as summary.md and the
    console do: say so, with how many repeats there were (docs/metrics.md). None without repeats."""
    counts = _repeats_counts(records)
    if max(counts, default=1) < 2:
        return None
    lo, hi = min(counts), max(counts)
    many = f"{hi}" if lo == hi else f"{lo} to {hi}"
    return (f"With {many} repeats per case: {what} is the case's median repeat by mean time "
            "(the lower middle of an even count), not every repeat; results.jsonl, results.csv "
            "and combined.csv keep every repeat.")


def _series_tables(doc, jobs):
    all_series = series_of(jobs)
    pair_groups = pairs(jobs)
    what = ("each row below, and each all_pairs cell," if all_series and pair_groups
            else "each row below" if all_series else "each all_pairs cell below")
    note = _repeats_sentence([r for s in all_series for r in s.records]
                             + [r for recs in pair_groups.values() for r in recs], what)
    if note:
        doc.p(note)
    for s in all_series:
        same_op = [g for g in all_series if g["op"] == s["op"]]
        always = ("backend", "world_size", "memory") + (
            ("source",) if len({g["source"] for g in all_series}) > 1 else ())
        doc.h(3, f"{s['op']}: {label(s, same_op, always=always)}")
        # Windowed patterns (unidir_bw, bidir_bw, msg_rate) count messages: their rate gets a
        # column, as in summary.md.
        rates = any((num(r, "msg_rate_mps") or 0) > 0 for r in s.records)
        rows = []
        for r in s.records:
            cv = num(r, "time_us", "cv")
            wrong = r.get("wrong")
            rows.append([fmt.size(r.get("bytes", 0)), fmt.num(num(r, "time_us", "mean")),
                         fmt.num(num(r, "time_us", "p50")), fmt.num(num(r, "time_us", "p99")),
                         *(("-", "-") if is_workload(r) else
                           (fmt.num(num(r, "algbw_gbps")), fmt.num(num(r, "busbw_gbps")))),
                         (fmt.pct(cv) + (" ⚠" if cv > analysis.HIGH_CV else "")) if cv is not None
                         else "", "-" if wrong in (None, -1) else wrong])
            if rates:
                mps = num(r, "msg_rate_mps")
                rows[-1].append(fmt.rate(mps * 1e6, "").strip() if mps else "-")
        doc.table(["size", "time (µs)", "p50 (µs)", "p99 (µs)", "algbw (GB/s)", "busbw (GB/s)",
                   "CV", "#wrong"] + (["messages/s"] if rates else []), rows)


def _ratio_marks(base, other):
    """' !' when either mean is noisy (CV above analysis.HIGH_CV), as the console marks it; ' ~'
    when the two cases' repeats overlap (the slowest repeat of the faster one is slower than the
    fastest of the other): their median repeats' ratio is then within run-to-run noise, however
    large it looks (`commbench compare` judges it)."""
    marks = ""
    if any((num(r, "time_us", "cv") or 0) > analysis.HIGH_CV for r in (base, other)):
        marks += " !"
    a = [x for x in base.get("repeat_times_us") or base.get("repeat_means_us") or [] if x]
    b = [x for x in other.get("repeat_times_us") or other.get("repeat_means_us") or [] if x]
    if len(a) >= 2 and len(b) >= 2 and max(min(a), min(b)) <= min(max(a), max(b)):
        marks += " ~"
    return marks


def _comparison_tables(doc, jobs):
    """Per comparable group with 2+ configurations (backends, memory types, jobs): per size each
    one's time and busbw, and its time over the first one's."""
    groups = {}
    for s in series_of(jobs):
        # A workload's model, sharding and batch too: ddp and fsdp steps are not one table.
        k = (s["op"], s["world_size"], s["dtype"], s["redop"], s["placement"], s["root"], s["variant"])
        groups.setdefault(k, []).append(s)
    any_table = False
    note = _repeats_sentence([r for group in groups.values() if len(group) >= 2
                              for s in group for r in s.records],
                             "each time and busbw below")
    if note:
        doc.p(note)
    for (op, world, dtype, redop, placement, _, variant), group in groups.items():
        if len(group) < 2:
            continue
        any_table = True
        names = [label(s, group, never=("world_size",)) for s in group]
        what = " ".join(str(v) for v in (op, f"({variant})" if variant else None, dtype, redop, placement) if v)
        doc.h(3, f"{what}, {fmt.ranks(world)}: " + " vs ".join(names))
        sizes = sorted({b for s in group for b in s.sizes})
        headers = ["size"]
        for n in names:
            headers += [f"{n} time (µs)", f"{n} busbw"]
        headers += [f"{n} / {names[0]}" for n in names[1:]]
        rows = []
        for b in sizes:
            recs = [next((r for r in s.records if r.get("bytes") == b), None) for s in group]
            row = [fmt.size(b)]
            for r in recs:
                bw = case_busbw(r) if r else None
                row += [fmt.num(case_time(r)) if r else "-", fmt.num(bw) if bw is not None else "-"]
            t0 = case_time(recs[0]) if recs[0] else None
            for r in recs[1:]:
                t = case_time(r) if r else None
                row.append(fmt.ratio(t / t0) + _ratio_marks(recs[0], r) if t and t0 else "-")
            rows.append(row)
        doc.table(headers, rows)
    if any_table:
        doc.p("Ratios are time over the first configuration's time: 1.5× means 50 % slower. "
              f"`!`: either mean is noisy (CV above {fmt.pct(analysis.HIGH_CV)}); `~`: the two "
              "configurations' repeats overlap, so the ratio is within run-to-run noise however "
              "large it looks (`commbench compare` judges differences between jobs). "
              "Where the memory types differ (host vs cuda), the comparison is between "
              "different data paths, not only different libraries.")
    return any_table


def _pair_tables(doc, jobs):
    groups = pairs(jobs)
    dtypes = len({k[6] for k in groups}) > 1
    for (source, run, backend, memory, world, nbytes, dtype), recs in groups.items():
        if not world:
            continue
        bw, _ = pair_matrix(recs, world)
        which = f" {dtype}" if dtypes else ""
        doc.h(3, f"all_pairs {backend} ({memory}) {fmt.ranks(world)}, {fmt.size(nbytes)}{which}: bandwidth "
              "(GB/s, src rows × dst columns)")
        doc.table(["src \\ dst"] + [str(d) for d in range(world)],
                  [[str(s)] + ["·" if s == d else (fmt.num(bw[s][d]) if bw[s][d] is not None
                                                   else "-") for d in range(world)]
                   for s in range(world)])


MIB = 1 << 20


def _memory_tables(doc, jobs):
    """The memory records (docs/output.md, "Memory records"): computed per rank next to measured,
    MiB, as the console and summary.md show them."""
    rows = []
    for j in jobs:
        for m in j.memory:
            measured = m.get("measured") or {}
            device = isinstance(measured.get("device"), dict)
            got = (measured.get("device") if device else measured.get("host")) or {}
            comp = m.get("computed") or {}

            def mib(d, k):
                v = d.get(k)
                return fmt.num(v / MIB) if isinstance(v, (int, float)) else "-"
            ok = m.get("status", "ok") == "ok"
            rows.append(([j.label] if len(jobs) > 1 else []) + [
                m.get("run", ""), m.get("backend", ""), str(m.get("world_size", "")),
                m.get("workload", ""), m.get("model", ""), m.get("sharding", ""), m.get("dtype", ""),
                m.get("optimizer", ""), m.get("memory", ""), str(m.get("batch_size", "")),
                mib(comp, "model_state_bytes"), mib(comp, "activation_bytes"), mib(comp, "total_bytes")]
                + ([mib(got, "buffers_bytes"), mib(got, "workload_bytes"), mib(got, "backend_bytes"),
                    "cudaMemGetInfo" if device else "host RSS"] if ok
                   else [f"{m.get('status')}: {m.get('reason', '')}", "-", "-", "-"]))
    if not rows:
        return
    doc.h(2, "Memory", "memory")
    doc.p("MiB per rank: computed (model state, activations, total) next to measured, the largest "
          "over ranks; a data_parallel run allocates no model state, so its state is its compute's "
          "buffers and its total what the run held at its fullest (docs/workloads.md, *Memory*).")
    doc.table((["job"] if len(jobs) > 1 else []) + [
        "run", "backend", "ranks", "workload", "model", "sharding", "dtype", "optimizer", "memory",
        "batch/rank", "model state", "activations", "total", "meas. state", "meas. total", "backend",
        "measured by"], rows,
        align=["l"] * ((len(jobs) > 1) + 2) + ["r"] + ["l"] * 6 + ["r"] * 7 + ["l"])


def build(jobs, figures, outcomes):
    doc = Doc()
    title = "commbench report: " + ", ".join(j.name or j.label for j in jobs)
    doc.h(1, title)
    doc.p(f"{len(jobs)} job(s), {sum(len(j.cases) for j in jobs)} case records. "
          f"{analysis.method_sentence(jobs)} busbw as in docs/metrics.md. Data files: "
          "[combined.csv](combined.csv); analysis: [analysis.md](analysis.md).")
    for warning in analysis.unfinished(jobs) + analysis.machine(jobs):
        doc.p(f"**⚠ {warning}**")
    doc.h(2, "Analysis", "analysis")
    for t, sentences in analysis.analyse(jobs):
        doc.h(3, t)
        doc.items(sentences)
    if outcomes:
        doc.h(2, "Expectations", "expectations")
        missed = [o for o in outcomes if not o.ok]
        doc.p(f"{len(outcomes) - len(missed)} of {len(outcomes)} checks met, {len(missed)} missed.")
        doc.table(["verdict", "where", "metric", "expected", "got"],
                  [["met" if o.ok else "**MISSED**", o.where(), o.metric, o.condition,
                    o.value_text() if o.value is not None else o.reason]
                   for o in sorted(outcomes, key=lambda o: o.ok)], align=["l"] * 5)
    if figures:
        doc.h(2, "Plots", "plots")
        for f in figures:
            doc.figure(f)
    measured = bool(series_of(jobs) or any(
        r.get("status") == "ok" for recs in pairs(jobs).values() for r in recs) or any(
        m.get("status", "ok") == "ok" for j in jobs for m in j.memory))
    doc.h(2, "Comparisons", "comparisons")
    if not measured:
        doc.p("Nothing was measured, so there is nothing to compare.")
    elif not _comparison_tables(doc, jobs):
        doc.p("Only one configuration per op and world size: nothing to compare side by side.")
    doc.h(2, "Results", "results")
    if not measured:
        # No table of empty rows: what was not measured, and why, is in the Analysis above
        # ("Nothing measured", "Result quality") and under Jobs and metadata.
        doc.p("Nothing was measured: no result to show. The Analysis above says, per run, what "
              "stopped it; the executions are listed under Jobs and metadata.")
    _series_tables(doc, jobs)
    _pair_tables(doc, jobs)
    _memory_tables(doc, jobs)
    doc.h(2, "Jobs and metadata", "jobs")
    for j in jobs:
        _job_section(doc, j)
    doc.h(2, "Experiments", "experiments")
    for j in jobs:
        if j.experiment:
            doc.h(3, j.label)
            doc.pre(json.dumps(j.experiment, indent=2, sort_keys=True))
    return title, doc


def _html(doc, title, figures, out_dir):
    """report.html. to_html embeds each figure's PNG, read from plots/ under the folder it is
    given: a private copy of the bytes we wrote, not out_dir by name, which whoever owns the
    folder above it could have swapped for one with links to other files (safe_files.py)."""
    if not figures:
        return to_html(doc, title, out_dir)
    with tempfile.TemporaryDirectory(prefix="commbench-report-") as tmp:
        os.mkdir(os.path.join(tmp, "plots"), 0o700)
        for f in figures:
            with open(os.path.join(tmp, f.png()), "wb") as fh:
                fh.write(f.png_data)
        return to_html(doc, title, tmp)


def write_report(jobs, out_dir, plots=True):
    """Writes everything into `out_dir`; returns the paths written (report.html first).
    The folder is opened once and every file written through it (safe_files.py): a folder that is
    a symbolic link or another user's is refused, and links planted in it are replaced, never
    written through."""
    with Folder.open(out_dir) as out:
        figures = draw_all(jobs, out) if plots else []
        outcomes = [o for j in jobs for o in expect.evaluate(j)]
        write_combined_csv(jobs, "combined.csv", folder=out)
        out.write("analysis.md", analysis.markdown(jobs))
        title, doc = build(jobs, figures, outcomes)
        out.write("report.md", to_markdown(doc))
        out.write("report.html", _html(doc, title, figures, out.path))
    files = ["report.html", "report.md", "analysis.md", "combined.csv"]
    files += [p for fig in figures for p in (fig.png(), fig.svg())]
    return [os.path.join(out_dir, p) for p in files]
