"""commbench.load and the combined CSV, against the saved results folders."""
import csv
import json
import os
import unittest

import commbench
from commbench.load import ResultsError, read_jobs, write_combined_csv
from helpers import ALL_PAIRS, DATA, QUICKSTART, TempDirCase, records


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


if __name__ == "__main__":
    unittest.main()
