"""Expectations (`expect` in a [[run]]) and `report = true`: `commbench check` on saved results,
and `commbench run` end to end (Gloo, 2 local ranks) with the exit code they decide."""
import json
import os
import shutil
import unittest
import xml.etree.ElementTree as ET

from commbench import fmt
from helpers import QUICKSTART, TempDirCase, commbench, have_matplotlib, records


class CheckTest(TempDirCase):
    def with_expect(self, expect):
        d = self.copy_fixture(QUICKSTART)
        path = os.path.join(d, "summary.json")
        with open(path) as f:
            s = json.load(f)
        s["experiment"]["runs"][0]["expect"] = expect
        with open(path, "w") as f:
            json.dump(s, f)
        return d

    def test_missed_expectation_is_listed_and_exits_1(self):
        recs = [r for r in records(QUICKSTART) if r["op"] == "allreduce"]
        big = max(recs, key=lambda r: r["bytes"])
        bar = big["busbw_gbps"] * 2            # twice what was measured: must be missed
        d = self.with_expect([{"ops": ["allreduce"], "min_bytes": big["bytes"],
                               "busbw_gbps": f">= {bar}"},
                              {"time_us": f"<= {max(r['time_us']['mean'] for r in recs) * 10}"}])
        junit = os.path.join(self.tmp, "expect.xml")
        p = commbench("check", d, "--junit", junit)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        n_cases = len(records(QUICKSTART))
        self.assertIn(f"Expectations: {n_cases} of {n_cases + 1} met, 1 missed", p.stdout)
        missed = [l for l in p.stdout.splitlines() if "MISSED" in l]
        self.assertEqual(len(missed), 1)
        self.assertIn(f"allreduce {fmt.size(big['bytes'])}", missed[0])
        self.assertIn(f"got {fmt.num(big['busbw_gbps'])} GB/s", missed[0])
        root = ET.parse(junit).getroot()
        self.assertEqual(root.get("failures"), "1")

    def test_a_missed_value_is_printed_on_the_wrong_side_of_its_bound(self):
        # "busbw_gbps >= 0.04097, got 0.041 GB/s" for a value of 0.04096: three significant
        # digits rounded it onto the bound's side. A bound just past the value, either way.
        import re
        for r in records(QUICKSTART)[:6]:
            v = r["busbw_gbps"]
            shown = float(fmt.num(v))
            if shown == v:
                continue
            op, bound = (">=", shown) if shown > v else ("<=", shown)
            with self.subTest(value=v, condition=f"{op} {bound!r}"):
                d = self.with_expect([{"ops": [r["op"]], "min_bytes": r["bytes"],
                                       "max_bytes": r["bytes"], "busbw_gbps": f"{op} {bound!r}"}])
                try:
                    p = commbench("check", d, check=1)
                finally:
                    shutil.rmtree(d)
                got = [float(x) for x in re.findall(r"got ([-0-9.e+]+) GB/s", p.stdout)]
                self.assertTrue(got, p.stdout)
                for g in got:
                    self.assertTrue(g < bound if op == ">=" else g > bound, p.stdout)

    def test_with_repeats_each_line_names_its_repeat(self):
        # A probe: with repeats = 2 each MISSED line appeared twice, the same word for word.
        d = self.with_expect([{"time_us": "< 0"}])
        path = os.path.join(d, "summary.json")
        with open(path) as f:
            s = json.load(f)
        s["experiment"]["runs"][0]["repeats"] = 2
        with open(path, "w") as f:
            json.dump(s, f)
        p = commbench("check", d, check=1)
        missed = [l for l in p.stdout.splitlines() if "MISSED" in l]
        self.assertTrue(missed, p.stdout)
        for line in missed:
            self.assertIn("ranks repeat 1 of 2 —", line)

    def test_a_workload_step_line_names_its_overlap(self):
        # A probe: a data_parallel run's steps with overlap on and off gave two identical lines.
        from commbench.expect import Outcome
        lines = []
        for overlap in (True, False):
            case = {"op": "data_parallel", "bytes": 102228128, "backend": "ucx", "world_size": 2,
                    "workload": {"model": "resnet50", "sharding": "ddp", "batch_size": 32, "overlap": overlap}}
            lines.append(Outcome("dp", "every case", "time_us_p99", "<= 1", case=case, value=5.0).describe())
        self.assertNotEqual(lines[0], lines[1])
        self.assertIn("data_parallel 97.5 MiB, resnet50 ddp, batch 32, overlap on ucx 2 ranks —", lines[0])
        self.assertIn("overlap off", lines[1])

    def test_a_time_line_names_its_statistic(self):
        # A probe: a workload's time_us (the mean) missed beside a step table of medians, and
        # the line did not say it was the mean.
        from commbench.expect import Outcome
        case = {"op": "data_parallel", "bytes": 1024, "backend": "gloo", "world_size": 2,
                "time_us": {"mean": 1200.0, "p50": 1100.0, "p99": 1900.0}}
        mean = Outcome("dp", "every case", "time_us", "<= 1000", case=case, value=1200.0)
        self.assertIn("time_us <= 1000, got 1200 µs, the mean (p50 1100 µs)", mean.describe())
        p50 = Outcome("dp", "every case", "time_us_p50", "<= 1000", case=case, value=1100.0)
        self.assertTrue(p50.describe().endswith("got 1100 µs, the median"), p50.describe())
        bw = Outcome("dp", "every case", "busbw_gbps", ">= 10", case=case, value=5.0)
        self.assertTrue(bw.describe().endswith("got 5 GB/s"), bw.describe())

    def test_met_expectations_exit_0(self):
        recs = records(QUICKSTART)
        low = min(r["busbw_gbps"] for r in recs)
        d = self.with_expect([{"busbw_gbps": f">= {low / 2}"}])
        p = commbench("check", d, check=0)
        self.assertIn(f"{len(recs)} of {len(recs)} met", p.stdout)

    def test_no_expectations_is_not_a_pass(self):
        p = commbench("check", QUICKSTART)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("sets no expectations", p.stderr)
        self.assertIn("nothing was checked", p.stderr)
        p = commbench("check", QUICKSTART, "--allow-none", check=0)
        self.assertIn("nothing was checked", p.stderr)

    def lose_last_cases(self, d, status="failed", job_end=True):
        """The quickstart job as if its execution had ended after 6 of its 9 cases."""
        jl = os.path.join(d, "results.jsonl")
        with open(jl) as f:
            lines = [json.loads(l) for l in f]
        cases = [i for i, l in enumerate(lines) if l["type"] == "case"]
        drop = set(cases[6:])
        out = []
        for i, l in enumerate(lines):
            if i in drop or (l["type"] == "job_end" and not job_end):
                continue
            if l["type"] == "execution":
                l.update(status=status, cases_done=6, reason="rank 2 killed by signal 9 (test)")
            out.append(l)
        with open(jl, "w") as f:
            f.writelines(json.dumps(l) + "\n" for l in out)

    def test_cases_never_measured_are_missed_not_passed(self):
        # A worker killed after 6 of 9 cases: the 6 recorded meet the bar, but the 3 never
        # measured may be in scope. `check` once said "6 of 6 met" and exited 0.
        low = min(r["busbw_gbps"] for r in records(QUICKSTART))
        d = self.with_expect([{"busbw_gbps": f">= {low / 2}"}])
        self.lose_last_cases(d)
        p = commbench("check", d)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("6 of 7 met, 1 missed", p.stdout)
        self.assertIn("gloo 4 ranks failed (6 of 9 cases recorded; rank 2 killed", p.stdout)

    def test_an_execution_that_failed_before_any_case_is_named_and_each_job_is_too(self):
        # It once read "got no case of the run is in this scope", not saying the run failed;
        # checking several jobs, a miss did not say which job it was in.
        low = min(r["busbw_gbps"] for r in records(QUICKSTART))
        d = self.with_expect([{"busbw_gbps": f">= {low / 2}"}])
        jl = os.path.join(d, "results.jsonl")
        with open(jl) as f:
            lines = [json.loads(l) for l in f if json.loads(l)["type"] != "case"]
        for l in lines:
            if l["type"] == "execution":
                l.update(status="failed", cases_done=0, reason="bad interface (test)")
        with open(jl, "w") as f:
            f.writelines(json.dumps(l) + "\n" for l in lines)
        with open(os.path.join(d, "summary.json")) as f:
            summary = json.load(f)
        summary["results"] = []
        for e in summary.get("executions", []):
            e.update(status="failed", cases_done=0, reason="bad interface (test)")
        with open(os.path.join(d, "summary.json"), "w") as f:
            json.dump(summary, f)
        p = commbench("check", d)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("got not measured: gloo 4 ranks failed (0 of 9 cases recorded; bad interface (test))", p.stdout)
        self.assertNotIn("no case of the run is in this scope", p.stdout)
        other = d + "-again"
        shutil.copytree(d, other)
        p = commbench("check", d, other)
        missed = [l for l in p.stdout.splitlines() if "MISSED" in l]
        self.assertEqual(len(missed), 2, p.stdout)
        self.assertTrue(missed[0].strip().startswith("MISSED: [") and missed[0] != missed[1], missed)

    def test_skipped_or_unavailable_executions_miss_and_summary_only_folders_do_not(self):
        low = min(r["busbw_gbps"] for r in records(QUICKSTART))
        # Skipped (a world larger than the launch) or unavailable (a backend this host cannot
        # run): planned cases never measured. A probe's ucx-over-RDMA qualification on a node
        # without RDMA once passed, "2 of 2 met", exit 0.
        for status in ("skipped", "unavailable"):
            d = self.with_expect([{"busbw_gbps": f">= {low / 2}"}])
            self.lose_last_cases(d, status=status)
            p = commbench("check", d)
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("6 of 7 met, 1 missed", p.stdout)
            self.assertIn(f"gloo 4 ranks {status} (6 of 9 cases recorded", p.stdout)
            shutil.rmtree(d)
        # A folder holding only summary.json (no results.jsonl, so no job_end): finished.
        d2 = self.with_expect([{"busbw_gbps": f">= {low / 2}"}])
        os.rename(d2, d2 + "-x")
        os.makedirs(d2)
        os.rename(os.path.join(d2 + "-x", "summary.json"), os.path.join(d2, "summary.json"))
        p = commbench("check", d2, check=0)
        self.assertNotIn("did not finish", p.stdout)

    def test_a_killed_job_without_summary_is_still_checked(self):
        # Killed with its agent: no summary.json, no job_end. Its expectations come from
        # results.jsonl's job line; it once said "sets no expectations" (exit 0 with --allow-none).
        exp = os.path.join(self.tmp, "e.toml")
        with open(exp, "w") as f:
            f.write('name = "killed"\n[[run]]\nname = "r"\nbackend = "gloo"\nops = ["allreduce"]\n'
                    'sizes = [64]\nworld_size = 2\niterations = 2\nwarmup = 0\n'
                    'expect = { busbw_gbps = ">= 0" }\n')
        out = os.path.join(self.tmp, "res")
        commbench("run", exp, "-o", out, "--quiet", check=0)
        (d,) = [os.path.join(out, x) for x in os.listdir(out)]
        os.remove(os.path.join(d, "summary.json"))
        jl = os.path.join(d, "results.jsonl")
        with open(jl) as f:
            lines = [l for l in f if json.loads(l)["type"] != "job_end"]
        with open(jl, "w") as f:
            f.writelines(lines)
        p = commbench("check", d, "--allow-none")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertNotIn("sets no expectations", p.stderr)
        self.assertIn("the job did not finish (no job_end record)", p.stdout)
        self.assertIn("1 of 2 met, 1 missed", p.stdout)

    def test_scope_matching_nothing_is_missed(self):
        d = self.with_expect([{"ops": ["alltoall"], "busbw_gbps": ">= 1"}])
        p = commbench("check", d)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no case of the run is in this scope", p.stdout)


class RunTest(TempDirCase):
    def experiment(self, expect, report=True):
        path = os.path.join(self.tmp, "exp.toml")
        with open(path, "w") as f:
            f.write(f'name = "expect-test"\nreport = {"true" if report else "false"}\n'
                    '[[run]]\nname = "ar"\nbackend = "gloo"\nworld_size = 2\n'
                    'ops = ["allreduce"]\nsizes = ["4KiB", "64KiB"]\nwarmup = 1\n'
                    f'iterations = 5\nexpect = {expect}\n')
        return path

    def job_dir(self):
        out = os.path.join(self.tmp, "results")
        (d,) = os.listdir(out)
        return os.path.join(out, d)

    def test_impossible_expectation_fails_the_run_and_report_is_written(self):
        exp = self.experiment('{ op = "allreduce", min_size = "64KiB", busbw_gbps = ">= 1e6" }')
        p = commbench("run", exp, "-o", os.path.join(self.tmp, "results"))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("MISSED: ar: allreduce 64 KiB gloo 2 ranks — busbw_gbps >= 1e6", p.stdout)
        self.assertIn("expectations missed", p.stderr)
        self.assertNotIn("Exit code 0", p.stdout + p.stderr)  # never "0 ... every check passed", then 1
        job = self.job_dir()
        with open(os.path.join(job, "summary.json")) as f:
            s = json.load(f)
        self.assertEqual(s["experiment"]["report"], True)
        self.assertEqual(s["experiment"]["runs"][0]["expect"],
                         [{"ops": ["allreduce"], "min_bytes": 65536, "busbw_gbps": ">= 1e6"}])
        # report = true: the report folder and the analysis at the end of the console output
        for f in ("report.html", "report.md", "analysis.md", "combined.csv"):
            self.assertTrue(os.path.isfile(os.path.join(job, "report", f)), f)
        self.assertIn("# Analysis (analysis.md):", p.stdout)
        if have_matplotlib():
            self.assertTrue(os.path.isfile(os.path.join(job, "report", "plots",
                                                        "op-allreduce.png")))

    def test_met_expectation_keeps_exit_0(self):
        exp = self.experiment('{ time_us = "<= 1e9" }', report=False)
        p = commbench("run", exp, "-o", os.path.join(self.tmp, "results"), check=0)
        self.assertIn("Expectations: 2 of 2 met, 0 missed", p.stdout)
        # One exit code, said once and after the expectations: none before them.
        out = p.stdout
        self.assertEqual(out.count("# Exit code"), 1, out)
        self.assertLess(out.index("Expectations:"), out.index("# Exit code 0"), out)
        self.assertIn("the expectations below decide the exit code", out)
        self.assertNotIn("# Analysis", p.stdout)          # report is off
        self.assertFalse(os.path.exists(os.path.join(self.job_dir(), "report")))

    def test_strong_scaling_sizes_are_scoped_as_the_run_wrote_them(self):
        # A probe: min_size = 48000 validated (a size of the run) but scoped per-rank bytes
        # (24000 and 16000 of the 48000 B total), so the run "missed" with no case in scope, and
        # an impossible bound silently left out the 3-rank case.
        path = os.path.join(self.tmp, "strong.toml")
        with open(path, "w") as f:
            f.write('name = "strong"\n[[run]]\nname = "s"\nbackend = "gloo"\nops = ["allgather"]\n'
                    'sizes = [12000, 48000]\ndtypes = ["f32"]\nscaling = "strong"\n'
                    'world_sizes = [2, 3]\nwarmup = 1\niterations = 3\n'
                    'expect = { min_size = 48000, busbw_gbps = ">= 1000" }\n')
        p = commbench("run", path, "-o", os.path.join(self.tmp, "results"))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("0 of 2 met, 2 missed", p.stdout)
        self.assertIn("MISSED: s: allgather 23.4 KiB (a share of 46.9 KiB job-wide) gloo 2 ranks", p.stdout)
        self.assertIn("MISSED: s: allgather 15.6 KiB (a share of 46.9 KiB job-wide) gloo 3 ranks", p.stdout)
        self.assertNotIn("no case of the run is in this scope", p.stdout)
        cases = records(self.job_dir())
        self.assertEqual(sorted((c["world_size"], c["bytes"], c["job_bytes"]) for c in cases),
                         [(2, 6000, 12000), (2, 24000, 48000), (3, 4000, 12000), (3, 16000, 48000)])

    def test_expectation_that_could_never_be_checked_is_refused(self):
        exp = self.experiment('{ op = "alltoall", busbw_gbps = ">= 1" }')
        p = commbench("validate", exp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("exp.toml:11:", p.stderr)
        self.assertIn("never measures", p.stderr)

    def test_bad_expectation_is_a_located_error(self):
        exp = self.experiment('{ busbw_gbps = "at least 180" }')
        p = commbench("validate", exp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("exp.toml:11:25:", p.stderr)   # the value, on the expect line
        self.assertIn("is not a condition", p.stderr)
        exp = self.experiment('{ busbw = ">= 1" }')
        p = commbench("validate", exp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("did you mean 'busbw_gbps'", p.stderr)


if __name__ == "__main__":
    unittest.main()
