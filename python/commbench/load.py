"""Reading commbench results folders (docs/output.md) into plain Python objects.

Everything here works without third-party packages; `load()` returns a pandas DataFrame only
when pandas is importable. Fields are read defensively: a field a record does not carry (older
or newer schema, another helper's addition) is simply absent, never an error.
"""
import csv
import json
import math
import os

from .validate import InvalidInput, check_line, check_summary, parse_json

# Columns of results.csv in their documented order (docs/output.md); the combined CSV starts with
# these and appends any further scalar fields the records carry.
CSV_COLUMNS = [
    "experiment", "run", "backend", "world_size", "op", "bytes", "count", "dtype", "redop",
    "placement", "memory", "root", "status", "reason", "timing", "warmup", "iterations",
    "time_us_mean", "time_us_min", "time_us_p50", "time_us_p95", "time_us_p99", "time_us_max",
    "time_us_stddev", "time_us_cv", "algbw_gbps", "busbw_gbps", "wrong", "src", "dst",
    "msg_rate_mps", "staging", "method", "rank_aggregation", "total_bytes", "target_cv",
    "cv_reached", "repeat", "oversubscribe_gpu", "cpu_binding", "peers", "window", "options", "env",
    "job_bytes", "workload",
]

# Structured fields results.csv writes as one cell of compact JSON (csv_reporter.cpp).
JSON_CELLS = ("peers", "options", "env", "workload")
# Of those, the ones whose scalar members are also flattened into `<field>_<member>` columns.
FLATTENED_JSON_CELLS = ("workload",)

# What identifies a case within a job's runs (its run's name included; `commbench compare` matches
# across jobs without it: compare.MATCH_FIELDS). src/dst only matter for all_pairs; peers, window,
# options and env for the records that carry them.
CASE_KEY = ("run", "backend", "world_size", "op", "bytes", "dtype", "redop", "placement",
            "memory", "root", "src", "dst", "peers", "window", "options", "env")


class ResultsError(Exception):
    """A folder that is not a readable commbench results folder; the message says what to do."""


class Job:
    """One results folder: its job header, case records, execution outcomes and summary."""

    def __init__(self, path, label):
        self.path = path
        self.label = label          # short name for tables and legends (the folder's name)
        self.header = {}            # the `job` line of results.jsonl
        self.summary = None         # summary.json as a dict, None when the job did not finish
        self.cases = []             # case records (dicts), in the order measured
        self.executions = []        # execution outcomes
        self.memory = []            # memory records (workload = "memory"; docs/workloads.md)
        self.end = None             # the `job_end` line, None when the job did not finish
        # What results.jsonl itself held ({"cases": n, "executions": n, "memory": n}; None
        # without one), and what was taken from summary.json because results.jsonl lacked it
        # (results stopped being written mid-job: a full disk). Both empty for a healthy job.
        self.jsonl_counts = None
        self.from_summary = {}
        # Line number of a last line cut short (no '\n', not JSON: the machine went down mid-write,
        # or a failed write could not be cut back), skipped when read; None when there is none.
        self.cut_line = None
        self.has_execution_log = os.path.exists(os.path.join(path, "execution_log.csv"))

    @property
    def experiment(self):
        """The experiment as parsed (summary.json). A job that did not write one (killed) has
        only its runs' expectations, from results.jsonl's job line; {} when it has neither."""
        parsed = (self.summary or {}).get("experiment", {}) or {}
        if parsed or not isinstance(self.header.get("expect"), list):
            return parsed
        return {"runs": [{"name": e.get("run"), "expect": e.get("expect")}
                         for e in self.header["expect"] if isinstance(e, dict)]}

    @property
    def name(self):
        return self.header.get("experiment") or (self.summary or {}).get("job", {}).get("name", "")

    @property
    def finished(self):
        """Whether results.jsonl ends with its `job_end` line (a folder holding only
        summary.json counts as finished: the summary is written at the end)."""
        return self.end is not None or (self.jsonl_counts is None and self.summary is not None)

    @property
    def exit_code(self):
        if self.summary is not None and "exit_code" in self.summary:
            return self.summary["exit_code"]
        return (self.end or {}).get("exit_code")


def _finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def num(record, field, sub=None):
    """record[field] (or record[field][sub]) as a float, None when absent, null or not finite."""
    v = record.get(field)
    if sub is not None:
        v = v.get(sub) if isinstance(v, dict) else None
    return float(v) if _finite(v) else None


def is_job_dir(path):
    return os.path.isfile(os.path.join(path, "results.jsonl")) or \
        os.path.isfile(os.path.join(path, "summary.json"))


def find_job_dirs(path):
    """`path` itself when it is a job folder, else the job folders directly inside it (sorted)."""
    if not os.path.isdir(path):
        raise ResultsError(f"{path}: no such folder; pass a job folder written by 'commbench run' "
                           "(it holds results.jsonl)")
    if is_job_dir(path):
        return [path]
    inside = sorted(os.path.join(path, d) for d in os.listdir(path)
                    if is_job_dir(os.path.join(path, d)))
    if not inside:
        raise ResultsError(f"{path}: not a results folder (no results.jsonl or summary.json in it "
                           "or in its subfolders); pass the job folder 'commbench run' printed "
                           "after 'Results in:'")
    return inside


# What identifies a record within one job, to merge summary.json's records with results.jsonl's
# without counting one twice (_merge). Measured values are left out: the key must not depend on
# how either file wrote a number.
_CASE_IDENTITY = CASE_KEY + ("experiment", "run_index", "repeat", "method", "rank_aggregation",
                             "timing", "staging", "cpu_binding", "workload", "count", "job_bytes")
_EXECUTION_IDENTITY = ("exec_index", "run_index", "run", "backend", "world_size", "repeat")
_MEMORY_IDENTITY = ("run_index", "run", "repeat", "backend", "world_size", "workload", "model",
                    "sharding", "dtype", "optimizer", "memory", "batch_size")


def _identity(record, fields):
    return tuple(json.dumps(record.get(f), sort_keys=True, separators=(",", ":"))
                 for f in fields)


def _merge(have, more, fields):
    """`have` (results.jsonl's records, in order) followed by those of `more` (summary.json's)
    that `have` lacks: each identity counted as often as either file holds it, never twice. Returns
    (merged list, how many came from `more`)."""
    counts = {}
    for r in have:
        k = _identity(r, fields)
        counts[k] = counts.get(k, 0) + 1
    extra = []
    for r in more:
        if not isinstance(r, dict):
            continue
        k = _identity(r, fields)
        if counts.get(k, 0) > 0:
            counts[k] -= 1
        else:
            extra.append(r)
    return have + extra, len(extra)


def normalised_case(c):
    """A case record as this version writes it, whatever version wrote it: a barrier names no
    dtype ("") since 2026-12 (it recorded "uint8"), so that old and new jobs group and match."""
    if isinstance(c, dict) and c.get("op") == "barrier" and c.get("dtype"):
        c = {**c, "dtype": ""}
    return c


def read_job(path, label=None):
    """Reads one job folder. results.jsonl is preferred (it survives an unfinished job and holds
    the per-iteration samples); summary.json fills in what it lacks. When results.jsonl has no
    `job_end` line but summary.json exists, results stopped being written mid-job (a full disk:
    docs/output.md, "Faults and exit codes") while the summary, written into space reserved for
    it, holds every measured case and execution: the records results.jsonl lacks are taken from
    it (`from_summary` counts them)."""
    path = os.path.abspath(path)
    job = Job(path, label or os.path.basename(path.rstrip("/")))
    jsonl = os.path.join(path, "results.jsonl")
    if os.path.isfile(jsonl):
        with open(jsonl, encoding="utf-8", errors="strict") as f:
            try:
                lines = list(f)
            except UnicodeDecodeError as e:
                raise ResultsError(f"{jsonl}: not UTF-8 text (byte {e.start}: {e.reason}); the file "
                                   "is damaged or not a results.jsonl") from None
            for lineno, raw in enumerate(lines, 1):
                line = raw.strip()
                if not line:
                    continue
                try:
                    obj = parse_json(line)
                    check_line(obj)
                except InvalidInput as e:
                    # The writer only ever leaves whole lines (docs/output.md); a last line without
                    # its '\n' is one cut by a crash of the machine: the lines before it are
                    # intact, so they are kept and the cut one is named (analysis.unfinished).
                    if lineno == len(lines) and not raw.endswith("\n"):
                        job.cut_line = lineno
                        continue
                    raise ResultsError(f"{jsonl}:{lineno}: {e}; the file may have been edited by "
                                       "hand or damaged") from None
                kind = obj.get("type")
                if kind == "job":
                    job.header = obj
                elif kind == "case":
                    job.cases.append(normalised_case(obj))
                elif kind == "execution":
                    job.executions.append(obj)
                elif kind == "memory":
                    job.memory.append(obj)
                elif kind == "job_end":
                    job.end = obj
                # other types: ignored, as the schema asks
        job.jsonl_counts = {"cases": len(job.cases), "executions": len(job.executions),
                            "memory": len(job.memory)}
    summary_path = os.path.join(path, "summary.json")
    if os.path.isfile(summary_path):
        try:
            with open(summary_path, encoding="utf-8") as f:
                job.summary = parse_json(f.read())
            check_summary(job.summary)
        except (InvalidInput, UnicodeDecodeError) as e:
            raise ResultsError(f"{summary_path}: {e}; delete it to use results.jsonl alone") from None
        s_cases = [normalised_case(c) for c in job.summary.get("results", [])]
        s_execs = list(job.summary.get("executions", []))
        s_memory = [r for r in job.summary.get("records", []) if r.get("type") == "memory"]
        if job.jsonl_counts is None:
            job.cases, job.executions, job.memory = s_cases, s_execs, s_memory
        elif job.end is None:
            job.cases, n_cases = _merge(job.cases, s_cases, _CASE_IDENTITY)
            job.executions, n_execs = _merge(job.executions, s_execs, _EXECUTION_IDENTITY)
            job.memory, n_memory = _merge(job.memory, s_memory, _MEMORY_IDENTITY)
            job.from_summary = {k: n for k, n in (("cases", n_cases), ("executions", n_execs),
                                                  ("memory", n_memory)) if n}
    return job


def read_jobs(paths):
    """Every job folder named by `paths` (a folder of job folders counts as all of them), with
    labels that tell them apart (the folder names; made unique when two are equal)."""
    dirs = []
    for p in paths:
        dirs.extend(find_job_dirs(p))
    seen = {}
    jobs = []
    for d in dirs:
        label = os.path.basename(os.path.abspath(d).rstrip("/"))
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label = f"{label}#{seen[label]}"
        jobs.append(read_job(d, label))
    return jobs


def flatten(record, source=None):
    """A case record as one flat dict: `time_us.p50` -> `time_us_p50`, arrays left out, like
    results.csv; `source` (the job folder's label) first when given. Values are the record's
    own (-1, 0.0 where results.csv leaves a cell empty: csv_empty() says where)."""
    row = {}
    if source is not None:
        row["source"] = source
    for k, v in record.items():
        if k in ("type", "schema_version"):
            continue
        if k in JSON_CELLS and v is not None:  # null: an empty cell, as results.csv leaves it
            row[k] = json.dumps(v, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        if isinstance(v, dict) and (k not in JSON_CELLS or k in FLATTENED_JSON_CELLS):
            for sk, sv in v.items():
                if isinstance(sv, dict) and k in FLATTENED_JSON_CELLS:
                    # A workload's timings ({p50, p99, ...} of step_ms, comm_ms): one level
                    # deeper, `workload_step_ms_p50`, or they would be in the JSON cell only.
                    for name, x in sv.items():
                        if not isinstance(x, (dict, list)):
                            row[f"{k}_{sk}_{name}"] = x
                elif not isinstance(sv, (dict, list)):
                    row[f"{k}_{sk}"] = sv
        elif k not in JSON_CELLS and not isinstance(v, list):
            row[k] = v
    return row


def _jobs_of(path):
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    return read_jobs([os.fspath(p) for p in paths])


def load(path, as_dataframe=None):
    """One row per case of one or more results folders, always the same flat columns.

    `path`: a job folder, a folder of job folders, or a list of those. Each row is the case
    record flattened as results.csv flattens it — `time_us` becomes `time_us_mean`,
    `time_us_p50`, ...; a workload's `step_ms` becomes `workload_step_ms_p50`, ...; arrays
    (`samples_us`, `rank_mean_us`) are left out — with `source` (the job folder's name) first.
    Where results.csv leaves a cell empty (csv_empty(): times and bandwidths of a case that was
    not measured, `wrong` -1, `src`/`dst` -1, ...) the value is None (NaN in the DataFrame, which
    mean() skips), never the record's placeholder 0 or -1. Booleans stay Python bools (results.csv
    writes `true`/`false`). Returned as a pandas DataFrame when pandas is importable, else as a
    list of dicts with exactly those keys (`as_dataframe=False` forces the list, True requires
    pandas). `rows.to_dict("records") if hasattr(rows, "to_dict") else rows` is the same list of
    dicts either way. The nested records, samples included: `records()`.
    """
    rows = [csv_row(c, j.label) for j in _jobs_of(path) for c in j.cases]
    if as_dataframe is not False:
        try:
            import pandas as pd
        except ImportError:
            if as_dataframe:
                raise ImportError("commbench.load(as_dataframe=True) needs pandas "
                                  "(Debian: apt-get install python3-pandas)") from None
            pd = None
        if pd is not None:
            return pd.DataFrame(rows)
    return rows


def records(path):
    """The case records as results.jsonl holds them (nested: `time_us` a dict, `samples_us` and
    `rank_mean_us` lists), with `source` added; always a list of dicts."""
    out = []
    for j in _jobs_of(path):
        for c in j.cases:
            r = dict(c)
            r["source"] = j.label
            out.append(r)
    return out


def combined_columns(jobs):
    """source + the documented CSV columns + any other scalar field found, in first-seen order."""
    cols = ["source"] + CSV_COLUMNS
    known = set(cols)
    for j in jobs:
        for c in j.cases:
            for k in flatten(c):
                if k not in known:
                    known.add(k)
                    cols.append(k)
    return cols


# Text a spreadsheet would run as a formula ("=HYPERLINK(...)" as an experiment name).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_number(v):
    """A number as results.csv writes it: the shortest text that reads back as the same double,
    integral values without a fraction (fmt's "{}": 0, 1e+16, 2.5)."""
    if isinstance(v, bool) or not isinstance(v, float):
        return str(v)
    if not math.isfinite(v):
        return ""
    text = repr(v)
    return text[:-2] if text.endswith(".0") else text


def csv_empty(k, v, row, measured):
    """Whether results.csv leaves the cell of column `k` (value `v` of the flat `row`) empty:
    core/src/report/csv_reporter.cpp's rules, docs/output.md. The one definition: csv_cell()
    writes these cells empty and load() gives them as None."""
    if v is None or (k in ("src", "dst", "wrong") and v == -1):
        return True      # wrong -1: not checked; src/dst -1: not all_pairs
    if not measured and (k.startswith("time_us_") or k.endswith("_gbps") or k == "msg_rate_mps"):
        return True      # not measured: NaN, which mean() skips, not a 0 that drags it down
    if k == "msg_rate_mps" and not v > 0:
        return True      # does not apply to this op
    if k == "target_cv" and not v > 0:
        return True      # the run set none
    if k == "cv_reached" and not ((num(row, "target_cv") or 0) > 0 and measured):
        return True
    return False


def csv_row(record, source=None):
    """flatten(record, source) with None where results.csv leaves the cell empty (csv_empty)."""
    row = flatten(record, source)
    measured = record.get("status") == "ok"
    empty = [k for k, v in row.items() if csv_empty(k, v, row, measured)]
    for k in empty:  # decided on the record's values first: cv_reached reads target_cv
        row[k] = None
    return row


def csv_cell(k, v, row, measured):
    """One cell by results.csv's rules (core/src/report/csv_reporter.cpp, docs/output.md)."""
    if csv_empty(k, v, row, measured):
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return "'" + v if v[:1] in _FORMULA_STARTS else v  # spreadsheet-safe (common/csv_field.h)
    return csv_number(v)


def write_combined_csv(jobs, path, folder=None):
    """One CSV of every case of every job (seed 001's combined_benchmark.csv). Cells follow
    results.csv: empty where a value is missing or the case was not measured. With `folder` (an
    open safe_files.Folder), `path` is a file name in it; either way the file is written to a new
    file and renamed over `path`, so a link planted there is replaced, not written through."""
    from . import safe_files  # it imports this module
    cols = combined_columns(jobs)
    out = (folder.create(path, newline="") if folder is not None
           else safe_files.create_file(path, newline=""))
    with out as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols)
        for j in jobs:
            for c in j.cases:
                row = flatten(c, j.label)
                measured = c.get("status") == "ok"
                cells = [csv_cell(k, row.get(k), row, measured) for k in cols]
                w.writerow(cells)
    return cols
