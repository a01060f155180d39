"""`commbench compare`: exit 0 on the same data, 1 on a doctored regression, noise-aware, JUnit."""
import json
import os
import unittest
import xml.etree.ElementTree as ET

from commbench import compare
from helpers import GLOO_VS_UCX, QUICKSTART, TempDirCase, commbench, records


def doctor(path, pick, factor):
    """Scales one case's time (samples and statistics) by `factor` and its bandwidths by 1/factor,
    in results.jsonl; returns the doctored record."""
    jl = os.path.join(path, "results.jsonl")
    with open(jl) as f:
        lines = [json.loads(l) for l in f]
    cases = [l for l in lines if l.get("type") == "case"]
    target = pick(cases)
    t = target["time_us"]
    for k in ("mean", "min", "p50", "p95", "p99", "max", "stddev"):
        t[k] *= factor
    target["samples_us"] = [s * factor for s in target["samples_us"]]
    target["rank_mean_us"] = [s * factor for s in target["rank_mean_us"]]
    for k in ("algbw_gbps", "busbw_gbps"):
        target[k] /= factor
    with open(jl, "w") as f:
        f.writelines(json.dumps(l) + "\n" for l in lines)
    return target


def least_noisy(cases):
    return min((c for c in cases if c["status"] == "ok"), key=lambda c: c["time_us"]["cv"])


def most_noisy(cases):
    return max((c for c in cases if c["status"] == "ok"), key=lambda c: c["time_us"]["cv"])


class CompareTest(TempDirCase):
    def test_same_data_is_no_regression(self):
        p = commbench("compare", QUICKSTART, QUICKSTART, check=0)
        n = len(records(QUICKSTART))
        self.assertIn(f"{n} cases: {n} unchanged", p.stdout)

    def test_doctored_regression_exits_1_and_is_listed_first(self):
        new = self.copy_fixture(GLOO_VS_UCX, "new")
        bad = doctor(new, least_noisy, 3.0)
        junit = os.path.join(self.tmp, "compare.xml")
        p = commbench("compare", GLOO_VS_UCX, new, "--threshold", "5%", "--junit", junit)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        rows = [l for l in p.stdout.splitlines() if "regressed" in l and "cases:" not in l]
        self.assertEqual(len(rows), 1, p.stdout)
        self.assertIn(compare.describe_key(bad), rows[0])
        self.assertIn(" 3 ", rows[0])                      # time × 3
        lines = p.stdout.splitlines()
        rule = next(i for i, l in enumerate(lines) if l.startswith("----"))
        self.assertTrue(lines[rule + 1].startswith(compare.describe_key(bad)),
                        "the regression is not sorted first")
        suite = ET.parse(junit).getroot()
        self.assertEqual(suite.get("failures"), "1")
        self.assertEqual(int(suite.get("tests")), len(records(GLOO_VS_UCX)))
        failed = [tc for tc in suite.iter("testcase") if tc.find("failure") is not None]
        self.assertEqual(failed[0].get("name"), compare.describe_key(bad))

    def test_change_within_noise_is_not_a_regression(self):
        new = self.copy_fixture(QUICKSTART, "new")
        noisy = doctor(new, most_noisy, 1.15)
        self.assertGreater(noisy["time_us"]["cv"], 0.15)   # the premise: a noisy case
        p = commbench("compare", QUICKSTART, new, "--threshold", "5%", check=0)
        line = next(l for l in p.stdout.splitlines() if l.startswith(compare.describe_key(noisy)))
        self.assertIn("within noise", line)
        # With the noise test off (--sigma 0) the same 15 % is a regression.
        p = commbench("compare", QUICKSTART, new, "--threshold", "5%", "--sigma", "0")
        self.assertEqual(p.returncode, 1)

    def test_threshold_is_respected(self):
        new = self.copy_fixture(GLOO_VS_UCX, "new")
        doctor(new, least_noisy, 3.0)
        commbench("compare", GLOO_VS_UCX, new, "--threshold", "250%", check=0)

    def test_case_no_longer_measured_is_a_regression(self):
        new = self.copy_fixture(QUICKSTART, "new")
        jl = os.path.join(new, "results.jsonl")
        with open(jl) as f:
            lines = [json.loads(l) for l in f]
        case = next(l for l in lines if l.get("type") == "case")
        case["status"], case["reason"] = "failed", "rank 2 crashed (test)"
        with open(jl, "w") as f:
            f.writelines(json.dumps(l) + "\n" for l in lines)
        p = commbench("compare", QUICKSTART, new)
        self.assertEqual(p.returncode, 1)
        self.assertIn("NEW is failed: rank 2 crashed (test)", p.stdout)

    def test_bad_threshold_is_a_usage_error(self):
        p = commbench("compare", QUICKSTART, QUICKSTART, "--threshold", "fast")
        self.assertEqual(p.returncode, 2)
        self.assertIn("expected a percentage", p.stderr)


if __name__ == "__main__":
    unittest.main()
