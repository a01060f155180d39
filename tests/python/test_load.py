"""commbench.load and the combined CSV, against the saved results folders."""
import csv
import json
import os
import shutil
import unittest

import commbench
from commbench.load import ResultsError, read_jobs, write_combined_csv
from helpers import ALL_PAIRS, DATA, QUICKSTART, TempDirCase, records
from helpers import commbench as run_commbench


class LoadTest(TempDirCase):
    def test_list_has_every_case_with_samples_and_source(self):
        got = commbench.load(QUICKSTART, as_dataframe=False)
        want = records(QUICKSTART)
        self.assertEqual(len(got), len(want))
        for g, w in zip(got, want):
            self.assertEqual(g["source"], "quickstart")
            self.assertEqual(g["time_us"]["mean"], w["time_us"]["mean"])
            self.assertEqual(g["samples_us"], w["samples_us"])

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


if __name__ == "__main__":
    unittest.main()
