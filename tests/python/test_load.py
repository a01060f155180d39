"""commbench.load and the combined CSV, against the saved results folders."""
import csv
import json
import os
import shutil
import subprocess
import sys
import unittest

import commbench
from commbench.load import ResultsError, read_jobs, write_combined_csv
from helpers import (ALL_PAIRS, DATA, GLOO_VS_UCX, QUICKSTART, SOURCE, TempDirCase,
                     fill_disk_mid_run, records)
from helpers import commbench as run_commbench


DOCS = os.path.join(SOURCE, "docs", "output.md")


def docs_example():
    """The `load` example of docs/output.md, as written there."""
    with open(DOCS, encoding="utf-8") as f:
        text = f.read()
    block = text.split("<!-- example: load -->", 1)[1].split("<!-- end example -->", 1)[0]
    return block.split("```python", 1)[1].rsplit("```", 1)[0]


class LoadTest(TempDirCase):
    def test_records_have_every_case_with_samples_and_source(self):
        got = commbench.records(QUICKSTART)
        want = records(QUICKSTART)
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            self.assertEqual(g["source"], "quickstart")
            self.assertEqual(g["time_us"]["mean"], w["time_us"]["mean"])
            self.assertEqual(g["samples_us"], w["samples_us"])

    def test_load_is_one_row_shape_with_or_without_pandas(self):
        rows = commbench.load(QUICKSTART, as_dataframe=False)
        want = records(QUICKSTART)
        self.assertIsInstance(rows, list)
        self.assertEqual(rows[0]["source"], "quickstart")
        self.assertEqual(rows[0]["time_us_mean"], want[0]["time_us"]["mean"])
        self.assertNotIn("samples_us", rows[0])
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("pandas not installed: the DataFrame half is not checked")
        df = commbench.load(QUICKSTART).to_dict("records")
        self.assertEqual(sorted(df[0]), sorted(rows[0]))
        for a, b in zip(df, rows):
            self.assertEqual(a["time_us_p50"], b["time_us_p50"])

    def test_docs_example_runs_with_and_without_pandas(self):
        code = docs_example().replace("results/quickstart-20250101-120000", QUICKSTART)
        for block_pandas in (False, True):
            prelude = "import sys; sys.modules['pandas'] = None\n" if block_pandas else ""
            p = subprocess.run([sys.executable, "-c", prelude + code], capture_output=True,
                               text=True, cwd=self.tmp,
                               env=dict(os.environ, PYTHONPATH=os.path.join(SOURCE, "python")))
            self.assertEqual(p.returncode, 0, f"pandas blocked: {block_pandas}\n{p.stderr}")
            self.assertIn("quickstart", p.stdout)

    def test_pip_installs_an_importable_package(self):
        target = os.path.join(self.tmp, "site")
        # A copy: setuptools writes its egg-info next to pyproject.toml.
        src = os.path.join(self.tmp, "python")
        shutil.copytree(os.path.join(SOURCE, "python"), src,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
        p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
                            "--no-deps", "--no-index", "--target", target, src],
                           capture_output=True, text=True)
        if p.returncode != 0 and ("No module named pip" in p.stderr or "setuptools" in p.stderr):
            self.skipTest(f"pip/setuptools unavailable: {p.stderr.strip()[-200:]}")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        q = subprocess.run([sys.executable, "-c", "import commbench, sys; "
                            f"print(commbench.__file__); print(len(commbench.records({QUICKSTART!r})))"],
                           capture_output=True, text=True, cwd=self.tmp,
                           env=dict(os.environ, PYTHONPATH=target))
        self.assertEqual(q.returncode, 0, q.stderr)
        self.assertTrue(q.stdout.startswith(target), q.stdout)
        self.assertEqual(q.stdout.split()[-1], str(len(records(QUICKSTART))))

    def test_dataframe_when_pandas_is_installed(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("pandas not installed (Debian: python3-pandas)")
        df = commbench.load([QUICKSTART, ALL_PAIRS])
        want = records(QUICKSTART) + records(ALL_PAIRS)
        self.assertEqual(len(df), len(want))
        self.assertEqual(sorted(set(df["source"])), ["all_pairs", "quickstart"])
        # time_us flattened like results.csv
        self.assertAlmostEqual(df["time_us_p50"].iloc[0], want[0]["time_us"]["p50"])
        pairs = df[df.op == "all_pairs"]
        self.assertEqual(len(pairs), len(records(ALL_PAIRS)))

    def test_folder_of_job_folders_reads_them_all(self):
        jobs = read_jobs([DATA])
        self.assertEqual(sorted(j.label for j in jobs), sorted(os.listdir(DATA)))

    def test_not_a_results_folder_says_what_to_pass(self):
        with self.assertRaises(ResultsError) as e:
            read_jobs([self.tmp])
        self.assertIn("not a results folder", str(e.exception))

    def test_unfinished_job_reads_from_results_jsonl(self):
        d = self.copy_fixture(QUICKSTART)
        os.remove(os.path.join(d, "summary.json"))
        with open(os.path.join(d, "results.jsonl")) as f:
            lines = f.readlines()
        with open(os.path.join(d, "results.jsonl"), "w") as f:
            f.writelines(lines[:4])  # job line + 3 cases: killed mid-run
        job = read_jobs([d])[0]
        self.assertEqual(len(job.cases), 3)
        self.assertIsNone(job.exit_code)

    def test_a_last_line_cut_by_a_crash_is_skipped_and_said(self):
        # The machine went down mid-write: the last line has no '\n' and is half a record. The
        # lines before it are whole and are kept; the cut one is named in the warnings. The same
        # damage in the middle of the file (followed by more lines) is still refused.
        d = self.copy_fixture(QUICKSTART)
        os.remove(os.path.join(d, "summary.json"))
        path = os.path.join(d, "results.jsonl")
        with open(path) as f:
            lines = f.readlines()
        with open(path, "w") as f:
            f.writelines(lines[:4] + [lines[4][:len(lines[4]) // 2]])
        job = read_jobs([d])[0]
        self.assertEqual(len(job.cases), 3)
        self.assertEqual(job.cut_line, 5)
        from commbench.analysis import unfinished
        said = " ".join(unfinished([job]))
        self.assertIn("line 5) was cut short and is skipped", said)
        self.assertIn("did not finish", said)
        with open(path, "w") as f:
            f.writelines(lines[:4] + [lines[4][:len(lines[4]) // 2] + "\n"] + lines[5:6])
        with self.assertRaises(ResultsError) as e:
            read_jobs([d])
        self.assertIn(f"{path}:5:", str(e.exception))

    def test_a_full_disk_job_reads_what_results_jsonl_lost_from_summary_json(self):
        # The disk filled up mid-run: results.jsonl stopped after 30 case lines (no job_end), the
        # job had measured 40 cases and summary.json, written into its reserved space, holds
        # them all with every execution. Reading results.jsonl alone said "From 30 case records"
        # (or 0), and compare found nothing NEW lost.
        with open(os.path.join(GLOO_VS_UCX, "summary.json")) as f:
            want = json.load(f)["results"][:40]
        for written in (30, 0):
            d = fill_disk_mid_run(self.copy_fixture(GLOO_VS_UCX, f"full{written}"), 40, written)
            job = read_jobs([d])[0]
            self.assertEqual(len(job.cases), 40, written)
            self.assertEqual([c["time_us"]["mean"] for c in job.cases],
                             [c["time_us"]["mean"] for c in want])   # each once, in order
            self.assertEqual([e["exec_index"] for e in job.executions], list(range(6)))
            self.assertEqual([e["status"] for e in job.executions],
                             ["ok"] * 3 + ["interrupted"] * 3)
            self.assertEqual(job.exit_code, 3)
            self.assertFalse(job.finished)
            self.assertEqual(job.jsonl_counts["cases"], written)
            self.assertEqual(job.from_summary, {"cases": 40 - written,
                                                "executions": 4 if written else 6})
            self.assertEqual(len(commbench.records(d)), 40)
            self.assertEqual(len(commbench.load(d, as_dataframe=False)), 40)
        # A healthy folder reads as before: results.jsonl's records, nothing added.
        job = read_jobs([GLOO_VS_UCX])[0]
        self.assertEqual((len(job.cases), len(job.executions), job.from_summary), (72, 6, {}))
        self.assertTrue(job.finished)

    def test_memory_lines_are_read_apart_from_cases(self):
        d = self.copy_fixture(QUICKSTART)
        with open(os.path.join(d, "results.jsonl")) as f:
            lines = f.readlines()
        memory = {"type": "memory", "schema_version": 2, "model": "custom", "batch_size": 4,
                  "status": "ok", "computed": {"total_bytes": 1024}}
        with open(os.path.join(d, "results.jsonl"), "w") as f:
            f.writelines(lines[:2] + [json.dumps(memory) + "\n"] + lines[2:])
        job = read_jobs([d])[0]
        self.assertEqual(job.memory, [memory])
        self.assertEqual(len(job.cases), len(records(QUICKSTART)))

    def test_combined_csv_has_every_case_of_every_job(self):
        jobs = read_jobs([QUICKSTART, ALL_PAIRS])
        out = os.path.join(self.tmp, "combined.csv")
        cols = write_combined_csv(jobs, out)
        with open(out) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), len(records(QUICKSTART)) + len(records(ALL_PAIRS)))
        self.assertEqual(cols[:3], ["source", "experiment", "run"])
        first = records(QUICKSTART)[0]
        self.assertEqual(float(rows[0]["time_us_mean"]), first["time_us"]["mean"])
        self.assertEqual(rows[0]["src"], "")       # -1 written as empty, as in results.csv
        pair = next(r for r in rows if r["op"] == "all_pairs")
        self.assertNotEqual(pair["src"], "")
        self.assertIn(pair["memory"], ("host", "host_pinned", "cuda"))

    def test_combined_csv_cells_are_results_csv_cells(self):
        # A job of today's binary: every results.csv column, in its order, and the same cell in
        # each (numbers as fmt writes them, empty where results.csv leaves them empty: msg/s of
        # ops without messages, target_cv of runs without one). They once drifted apart.
        exp = os.path.join(self.tmp, "csv.toml")
        with open(exp, "w") as f:
            f.write('name = "csv-rules"\n[defaults]\nbackend = "gloo"\nsizes = [64, 4096]\n'
                    'warmup = 1\niterations = 3\n'
                    '[[run]]\nname = "ops"\nops = ["allreduce"]\nworld_sizes = [1, 2]\n'
                    '[[run]]\nname = "msg"\nops = ["msg_rate"]\nworld_size = 2\n'
                    '[[run]]\nname = "cv"\nops = ["allreduce"]\nworld_size = 2\n'
                    'target_cv = 0.5\nmax_iterations = 6\n'
                    # workload steps: their figures are one JSON cell (overlap on and off once
                    # read alike in results.csv)
                    '[[run]]\nname = "dp"\nworkload = "data_parallel"\nworld_size = 2\n'
                    'model = { parameters = 4096, layers = 2, activations = 64, flops = 1e5 }\n'
                    'batch_size = 2\noverlap = [true, false]\ncompute_ms = 1\nsteps = 2\n')
        out = os.path.join(self.tmp, "results")
        run_commbench("run", exp, "-o", out, "--quiet", check=0)
        (job_dir,) = [os.path.join(out, d) for d in os.listdir(out)]
        combined = os.path.join(self.tmp, "combined.csv")
        write_combined_csv(read_jobs([job_dir]), combined)
        with open(os.path.join(job_dir, "results.csv"), newline="") as f:
            theirs = list(csv.reader(f))
        with open(combined, newline="") as f:
            ours = list(csv.reader(f))
        self.assertEqual(ours[0][0], "source")
        self.assertEqual(ours[0][1:len(theirs[0]) + 1], theirs[0])
        self.assertEqual(len(ours), len(theirs))
        self.assertGreater(len(theirs), 6)
        # The JSON cells hold the same values; their number text may differ (nlohmann's Grisu2
        # can write 3.6869170000000002 where Python's shortest repr writes 3.686917, one double).
        json_at = {theirs[0].index(k) for k in ("peers", "options", "env", "workload")}
        for a, b in zip(ours[1:], theirs[1:]):
            for i, cell in enumerate(b):
                if i in json_at and cell:
                    self.assertEqual(json.loads(a[i + 1]), json.loads(cell))
                else:
                    self.assertEqual(a[i + 1], cell, theirs[0][i])
        at = theirs[0].index("workload")
        steps = [json.loads(r[at]) for r in theirs[1:] if r[at]]
        self.assertEqual(sorted(w["overlap"] for w in steps), [False, True])
        flat = ours[0].index("workload_overlap")
        self.assertEqual(sorted(r[flat] for r in ours[1:] if r[flat]), ["false", "true"])

    def run_mixed_job(self):
        """A job of today's binary with every kind of empty results.csv cell (unsupported cases:
        no CUDA device here; msg/s of ops without messages; target_cv set by one run only;
        wrong -1 of unchecked cases) and data_parallel steps (nested workload timings)."""
        exp = os.path.join(self.tmp, "mixed.toml")
        with open(exp, "w") as f:
            f.write('name = "mixed"\n[defaults]\nbackend = "gloo"\nsizes = [64, 4096]\n'
                    'warmup = 1\niterations = 3\n'
                    '[[run]]\nname = "host"\nops = ["allreduce", "msg_rate"]\nworld_size = 2\n'
                    'target_cv = 0.5\nmax_iterations = 6\n'
                    '[[run]]\nname = "nocheck"\nops = ["allreduce"]\nworld_size = 2\n'
                    'check = false\n'
                    '[[run]]\nname = "gpu"\nops = ["allreduce"]\nmemory = "cuda"\n'
                    # unsupported on any host, a GPU one too: no CUDA runtime to load
                    'world_size = 2\nenv = { COMMBENCH_CUDART = "/nonexistent/libcudart.so.13" }\n'
                    '[[run]]\nname = "dp"\nworkload = "data_parallel"\nworld_size = 2\n'
                    'model = { parameters = 4096, layers = 2, activations = 64, flops = 1e5 }\n'
                    'batch_size = 2\noverlap = [true, false]\ncompute_ms = 1\nsteps = 2\n')
        out = os.path.join(self.tmp, "results")
        run_commbench("run", exp, "-o", out, "--quiet", check=0)
        (job_dir,) = [os.path.join(out, d) for d in os.listdir(out)]
        return job_dir

    def test_load_leaves_empty_what_results_csv_leaves_empty(self):
        # load() promised rows "flattened as results.csv flattens it" but kept the records'
        # placeholders: 0.0 times of unsupported cases, -1 for wrong/src/dst, 0 msg/s, so a
        # mean over load() and one over results.csv differed.
        job_dir = self.run_mixed_job()
        with open(os.path.join(job_dir, "results.csv"), newline="") as f:
            theirs = list(csv.DictReader(f))
        ours = commbench.load(job_dir, as_dataframe=False)
        self.assertEqual(len(ours), len(theirs))
        statuses = {r["status"] for r in theirs}
        self.assertIn("unsupported", statuses)   # the premise: cases that were not measured
        self.assertIn("ok", statuses)
        empty_seen = set()
        for a, b in zip(ours, theirs):
            for col, cell in b.items():
                if col == "workload":
                    continue  # JSON text, compared in test_combined_csv_cells_are_results_csv_cells
                v = a.get(col)
                # Empty text ("reason" of an ok case) is text, as results.csv writes it.
                self.assertEqual(v is None or v == "", cell == "",
                                 f"{col}: load {v!r}, results.csv {cell!r}")
                if cell == "":
                    empty_seen.add(col)
                elif isinstance(v, bool):
                    self.assertEqual(cell, "true" if v else "false", col)
                elif isinstance(v, (int, float)):
                    self.assertEqual(float(cell), v, col)
        for col in ("time_us_mean", "busbw_gbps", "wrong", "src", "msg_rate_mps", "target_cv",
                    "cv_reached"):
            self.assertIn(col, empty_seen)
        unsupported = [r for r in ours if r["status"] == "unsupported"]
        self.assertTrue(all(r["time_us_p50"] is None and r["algbw_gbps"] is None
                            for r in unsupported))
        self.assertTrue(any(isinstance(r.get("cv_reached"), bool) for r in ours))
        try:
            import pandas as pd
        except ImportError:
            self.skipTest("pandas not installed: the DataFrame half is not checked")
        df, csv_df = commbench.load(job_dir), pd.read_csv(os.path.join(job_dir, "results.csv"))
        for col in ("time_us_mean", "busbw_gbps", "wrong", "src", "msg_rate_mps", "target_cv"):
            self.assertEqual(df[col].isna().tolist(), csv_df[col].isna().tolist(), col)
            if col != "src":  # no all_pairs here: all NaN
                self.assertAlmostEqual(df[col].mean(), csv_df[col].mean(), msg=col)

    def test_workload_timings_are_flattened_one_level_deeper(self):
        # step_ms, compute_ms and comm_ms ({p50, p99, mean, min, max}) were left out of load()
        # and combined.csv: only the workload's scalar members were flattened.
        job_dir = self.run_mixed_job()
        steps = [r for r in records(job_dir) if isinstance(r.get("workload"), dict)]
        self.assertEqual(len(steps), 2)
        rows = [r for r in commbench.load(job_dir, as_dataframe=False)
                if r["op"] == "data_parallel"]
        combined = os.path.join(self.tmp, "combined.csv")
        write_combined_csv(read_jobs([job_dir]), combined)
        with open(combined, newline="") as f:
            cells = [r for r in csv.DictReader(f) if r["op"] == "data_parallel"]
        nested = 0
        for rec, row, cell in zip(steps, rows, cells):
            self.assertEqual(json.loads(row["workload"]), rec["workload"])  # the JSON cell stays
            self.assertEqual(row["workload_samples_per_s"], rec["workload"]["samples_per_s"])
            for name in ("step_ms", "compute_ms", "comm_ms"):
                self.assertIsInstance(rec["workload"][name], dict)
                for stat, v in rec["workload"][name].items():
                    col = f"workload_{name}_{stat}"
                    self.assertEqual(row[col], v, col)
                    self.assertEqual(float(cell[col]), v, col)
                    nested += 1
        self.assertGreaterEqual(nested, 2 * 3 * 5)

    def test_combined_csv_makes_formula_like_text_inert(self):
        # Issue 28 §16: an experiment named like a spreadsheet formula stays text.
        d = self.copy_fixture(QUICKSTART)
        os.remove(os.path.join(d, "summary.json"))
        path = os.path.join(d, "results.jsonl")
        with open(path) as f:
            lines = [json.loads(x) for x in f]
        for rec in lines:
            if rec.get("type") == "case":
                rec["experiment"] = '=HYPERLINK("http://evil","click")'
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in lines)
        out = os.path.join(self.tmp, "combined.csv")
        write_combined_csv(read_jobs([d]), out)
        with open(out) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(rows[0]["experiment"], "'=HYPERLINK(\"http://evil\",\"click\")")
        with open(out) as f:
            self.assertNotIn(",=HYPERLINK", f.read())


# Issue 28 §11: results.jsonl lines a reader cannot trust, each with what the error must say.
HOSTILE_LINES = [
    ('{"type": "case", "bytes": 1e999}', "out of range"),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ("42", "not a JSON object"),
    ('"a string"', "not a JSON object"),
    ("NaN", "not a number JSON allows"),
    ('{"type": "case", "world_size": "two"}', "'world_size' is a string, expected an integer"),
    ('{"type": "case", "time_us": {"mean": [1]}}', "'time_us' is an object"),
    ('{"type": ["case"]}', "'type' is a list"),
    ('{"type": "execution", "status": 3}', "'status' is an integer, expected a string"),
]


class HostileResultsTest(TempDirCase):
    def hostile_job(self, line):
        d = self.copy_fixture(QUICKSTART, "hostile")
        os.remove(os.path.join(d, "summary.json"))
        path = os.path.join(d, "results.jsonl")
        with open(path) as f:
            lines = f.readlines()
        with open(path, "w") as f:
            f.writelines(lines[:3] + [line + "\n"] + lines[3:])
        return d, path

    def test_the_reader_names_the_file_and_line(self):
        for line, says in HOSTILE_LINES:
            with self.subTest(line=line[:40]):
                d, path = self.hostile_job(line)
                with self.assertRaises(ResultsError) as e:
                    read_jobs([d])
                self.assertIn(f"{path}:4:", str(e.exception))
                self.assertIn(says, str(e.exception))
                shutil.rmtree(d)

    def test_report_compare_and_check_say_what_is_wrong_never_a_traceback(self):
        # The commands share the reader tested above: one line of each kind of damage (a number
        # out of range, nesting, a line that is not an object, a wrong type) through each.
        for line, says in (HOSTILE_LINES[0], HOSTILE_LINES[1], HOSTILE_LINES[2], HOSTILE_LINES[5]):
            d, path = self.hostile_job(line)
            for args in (["check", d], ["compare", QUICKSTART, d], ["report", d, "--no-plots",
                                                                   "-o", os.path.join(self.tmp, "r")]):
                with self.subTest(command=args[0], line=line[:40]):
                    p = run_commbench(*args)
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertNotIn("Traceback", p.stderr + p.stdout)
                    self.assertIn(f"{path}:4:", p.stderr)
                    self.assertIn(says, p.stderr)
            shutil.rmtree(d)

    def test_a_hostile_summary_is_a_clear_error_too(self):
        d = self.copy_fixture(QUICKSTART, "hostile")
        os.remove(os.path.join(d, "results.jsonl"))
        for text, says in (("[1, 2]", "not a JSON object"), ('{"results": 5}', "'results' is an integer"),
                           ('{"results": [{"bytes": "x"}]}', "results[0]'s field 'bytes'"),
                           ('{"exit_code": 1e999}', "out of range")):
            with self.subTest(text=text):
                with open(os.path.join(d, "summary.json"), "w") as f:
                    f.write(text)
                with self.assertRaises(ResultsError) as e:
                    read_jobs([d])
                self.assertIn("summary.json", str(e.exception))
                self.assertIn(says, str(e.exception))

    def test_a_summary_cut_short_is_told_by_line_and_column(self):
        d = self.copy_fixture(QUICKSTART, "cut")
        path = os.path.join(d, "summary.json")
        with open(path) as f:
            text = f.read()
        cut = text[:len(text) // 2]
        with open(path, "w") as f:
            f.write(cut)
        with self.assertRaises(ResultsError) as e:
            read_jobs([d])
        lines = cut.split("\n")
        self.assertIn(f"(line {len(lines)}, column", str(e.exception))
        self.assertIn("the text ends there: cut short", str(e.exception))
        with open(path, "w") as f:  # damage in the middle is not called cut short
            f.write(text.replace('"results"', 'results', 1))
        with self.assertRaises(ResultsError) as e:
            read_jobs([d])
        self.assertIn("not JSON: ", str(e.exception))
        self.assertNotIn("cut short", str(e.exception))


if __name__ == "__main__":
    unittest.main()
