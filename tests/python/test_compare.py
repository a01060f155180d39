"""`commbench compare`: exit 0 on the same data, 1 on a doctored regression, noise-aware, JUnit."""
import json
import os
import shutil
import unittest
import xml.etree.ElementTree as ET

from commbench import compare
from commbench.load import normalised_case
from helpers import GLOO_VS_UCX, QUICKSTART, TempDirCase, commbench, fill_disk_mid_run, records


def rewrite_records(path, change):
    """Rewrites results.jsonl as `change(records)` returns it (a list of dicts)."""
    jl = os.path.join(path, "results.jsonl")
    with open(jl) as f:
        records = [json.loads(l) for l in f]
    with open(jl, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in change(records))


def doctor(path, pick, factor):
    """Scales one case's time (samples and statistics) by `factor` and its bandwidths by 1/factor,
    in results.jsonl; returns the doctored record."""
    found = []

    def scale(records):
        target = pick([r for r in records if r.get("type") == "case"])
        t = target["time_us"]
        for k in ("mean", "min", "p50", "p95", "p99", "max", "stddev"):
            t[k] *= factor
        target["samples_us"] = [s * factor for s in target["samples_us"]]
        target["rank_mean_us"] = [s * factor for s in target["rank_mean_us"]]
        for k in ("algbw_gbps", "busbw_gbps"):
            target[k] /= factor
        found.append(target)
        return records
    rewrite_records(path, scale)
    target = found[0]
    return target


def rewrite(path, change):
    """Applies `change` to every case record of results.jsonl (None drops it); returns the
    dropped records."""
    dropped = []

    def cases(records):
        kept = []
        for r in records:
            c = change(dict(r)) if r.get("type") == "case" else r
            (kept.append(c) if c is not None else dropped.append(r))
        return kept
    rewrite_records(path, cases)
    return dropped


def synthetic_job(parent, name, repeat_means, op="allreduce", cv=0.001, n=20, **extra):
    """A job folder whose one case (`op` 4 KiB, gloo, 2 ranks) was measured once per value of
    `repeat_means`, each with `n` iterations of the given CV (tight: 0.1 %); `extra` fields are
    added to every record (peers, window, options, env)."""
    path = os.path.join(parent, name)
    os.makedirs(path)
    lines = [{"type": "job", "schema_version": 2, "experiment": "gate"}]
    for i, m in enumerate(repeat_means):
        lines.append({"type": "case", "schema_version": 2, "experiment": "gate", "run": "r",
                      "repeat": i, "backend": "gloo", "world_size": 2, "op": op,
                      "bytes": 4096, "dtype": "f32", "redop": "sum", "placement": "out_of_place",
                      "memory": "host", "root": 0, "src": -1, "dst": -1, "status": "ok",
                      "method": "batch", "rank_aggregation": "avg", "timing": "host",
                      "time_us": {"n": n, "mean": m, "stddev": m * cv, "cv": cv},
                      "busbw_gbps": 4096 / m / 1e3, "wrong": 0, **extra})
    lines.append({"type": "job_end", "schema_version": 2, "exit_code": 0})
    with open(os.path.join(path, "results.jsonl"), "w") as f:
        f.writelines(json.dumps(l) + "\n" for l in lines)
    return path


def run_repeats(path, statuses, finished=True, expect=None):
    """Gives a synthetic_job its executions, one per repeat (run 'r', gloo, 2 ranks, in plan
    order): `statuses[i]` is repeat i's outcome, or None for an execution that never ended (the
    job was killed: it and every later one leave no outcome). A repeat whose execution did not end
    `ok` leaves no case record, as a crashed worker's does. Not `finished`: no job_end line.
    `expect`: the run's expectations, in the job line (as `commbench check` reads them)."""
    def change(lines):
        out = []
        for line in lines:
            if line["type"] == "job" and expect:
                line["expect"] = [{"run": "r", "expect": expect}]
            if line["type"] == "case" and statuses[line["repeat"]] != "ok":
                continue
            if line["type"] == "job_end":
                if not finished:
                    continue
                out += [{"type": "execution", "schema_version": 2, "run_index": 0, "run": "r",
                         "backend": "gloo", "world_size": 2, "exec_index": i,
                         "exec_total": len(statuses), "case_total": 1, "repeat": i,
                         "status": s, "reason": "" if s == "ok" else "rank 1 crashed (test)",
                         "cases_done": 1 if s == "ok" else 0}
                        for i, s in enumerate(statuses) if s is not None]
            out.append(line)
        if not finished:
            out += [{"type": "execution", "schema_version": 2, "run_index": 0, "run": "r",
                     "backend": "gloo", "world_size": 2, "exec_index": i,
                     "exec_total": len(statuses), "case_total": 1, "repeat": i, "status": s,
                     "reason": "", "cases_done": 1} for i, s in enumerate(statuses) if s]
        return out
    rewrite_records(path, change)
    return path


def least_noisy(cases):
    return min((c for c in cases if c["status"] == "ok"), key=lambda c: c["time_us"]["cv"])


def most_noisy(cases):
    return max((c for c in cases if c["status"] == "ok"), key=lambda c: c["time_us"]["cv"])


class CompareTest(TempDirCase):
    def test_same_data_is_no_regression(self):
        p = commbench("compare", QUICKSTART, QUICKSTART, check=0)
        n = len(records(QUICKSTART))
        self.assertIn(f"{n} cases ({n} matched): {n} unchanged", p.stdout)

    def test_doctored_regression_exits_1_and_is_listed_first(self):
        new = self.copy_fixture(GLOO_VS_UCX, "new")
        bad = doctor(new, least_noisy, 3.0)
        junit = os.path.join(self.tmp, "compare.xml")
        p = commbench("compare", GLOO_VS_UCX, new, "--threshold", "5%", "--junit", junit)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        rows = [l for l in p.stdout.splitlines() if "regressed" in l and " matched): " not in l]
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

        def fail_first_case(records):
            case = next(r for r in records if r.get("type") == "case")
            case["status"], case["reason"] = "failed", "rank 2 crashed (test)"
            return records
        rewrite_records(new, fail_first_case)
        p = commbench("compare", QUICKSTART, new)
        self.assertEqual(p.returncode, 1)
        self.assertIn("NEW is failed: rank 2 crashed (test)", p.stdout)

    def test_cases_match_by_what_they_are_not_by_run_name(self):
        new = self.copy_fixture(QUICKSTART, "new")
        rewrite(new, lambda c: c.update(run="renamed-run") or c)
        p = commbench("compare", QUICKSTART, new, check=0)
        n = len(records(QUICKSTART))
        self.assertIn(f"{n} cases ({n} matched): {n} unchanged", p.stdout)

    def test_unmatched_cases_are_reported(self):
        new = self.copy_fixture(QUICKSTART, "new")
        dropped = rewrite(new, lambda c: None if c["bytes"] == 4096 and c["op"] == "allreduce" else c)
        p = commbench("compare", QUICKSTART, new, check=0)
        self.assertIn("Not compared: 1 case(s) only in BASELINE, 0 only in NEW", p.stdout)
        line = next(l for l in p.stdout.splitlines() if l.startswith(compare.describe_key(dropped[0])))
        self.assertIn("only in baseline", line)

    def lose_ucx_4_ranks(self, status="failed", run=None):
        """NEW = GLOO_VS_UCX with the UCX 4-rank execution not ok and its cases never recorded, as
        a job whose execution failed writes it."""
        new = self.copy_fixture(GLOO_VS_UCX, "new")

        def lose(records):
            kept = []
            for r in records:
                if r.get("backend") == "ucx" and r.get("world_size") == 4:
                    if r["type"] == "case":
                        continue
                    r.update(status=status, reason="rank 3 crashed (test)", cases_done=0)
                    if run:
                        r["run"] = run
                kept.append(r)
            return kept
        rewrite_records(new, lose)
        return new

    def test_cases_lost_to_a_failed_execution_regress(self):
        new = self.lose_ucx_4_ranks()
        junit_path = os.path.join(self.tmp, "j.xml")
        p = commbench("compare", GLOO_VS_UCX, new, "--junit", junit_path)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        lost = [l for l in p.stdout.splitlines() if "not measured: NEW's execution" in l]
        self.assertEqual(len(lost), 12, p.stdout)
        self.assertTrue(all("regressed" in l and "ucx 4r" in l and "rank 3 crashed" in l for l in lost),
                        lost)
        self.assertNotIn("only in baseline", p.stdout)
        suite = ET.parse(junit_path).getroot().find("testsuite")
        self.assertEqual(suite.get("failures"), "12")
        # The other 60 cases were measured and are judged as usual.
        self.assertIn("72 cases (60 matched)", p.stdout)

    def test_a_case_the_baseline_did_not_measure_either_is_not_a_regression(self):
        base = self.copy_fixture(GLOO_VS_UCX, "base")
        rewrite(base, lambda c: c.update(status="unsupported", reason="test") or c
                if c["backend"] == "ucx" and c["world_size"] == 4 else c)
        p = commbench("compare", base, self.lose_ucx_4_ranks(), check=0)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("Not compared: 12 case(s) only in BASELINE", p.stdout)

    def test_cases_not_planned_are_not_blamed_on_a_failure(self):
        # Launched with fewer ranks (the 4-rank execution `skipped`, the job exits 0): not lost.
        p = commbench("compare", GLOO_VS_UCX, self.lose_ucx_4_ranks(status="skipped"), check=0)
        self.assertIn("Not compared: 12 case(s) only in BASELINE", p.stdout)
        # A backend unavailable in NEW that the baseline measured: lost, a regression.
        shutil.rmtree(os.path.join(self.tmp, "new"))
        p = commbench("compare", GLOO_VS_UCX, self.lose_ucx_4_ranks(status="unavailable"), check=1)
        self.assertEqual(p.stdout.count("was unavailable: rank 3 crashed (test)"), 12, p.stdout)
        # A failed execution of another run (same backend and world size) did not lose these.
        shutil.rmtree(os.path.join(self.tmp, "new"))
        p = commbench("compare", GLOO_VS_UCX, self.lose_ucx_4_ranks(run="another-run"), check=0)
        self.assertIn("Not compared: 12 case(s) only in BASELINE", p.stdout)
        self.assertNotIn("not measured: NEW", p.stdout)

    def test_cases_lost_by_a_renamed_run_regress(self):
        # Cases match across run names, so the same experiment with its run renamed compares
        # case by case; its crash once left the lost cases "only in baseline", exit 0.
        new = self.lose_ucx_4_ranks()
        rewrite_records(new, lambda records: [dict(r, run="renamed") if r.get("run") else r
                                              for r in records])
        summary_path = os.path.join(new, "summary.json")
        with open(summary_path) as f:
            summary = json.load(f)
        for r in summary["experiment"]["runs"]:
            r["name"] = "renamed"
        with open(summary_path, "w") as f:
            json.dump(summary, f)
        p = commbench("compare", GLOO_VS_UCX, new, check=1)
        lost = [l for l in p.stdout.splitlines() if "not measured: NEW's execution 'renamed'" in l]
        self.assertEqual(len(lost), 12, p.stdout)
        self.assertNotIn("only in baseline", p.stdout)
        # The renamed run planned fewer sizes on purpose: those it left out are not lost.
        for r in summary["experiment"]["runs"]:
            r["sizes"] = [x for x in r["sizes"] if x["bytes"] != 1024]
        with open(summary_path, "w") as f:
            json.dump(summary, f)
        p = commbench("compare", GLOO_VS_UCX, new, check=1)
        lost = [l for l in p.stdout.splitlines() if "not measured: NEW's execution 'renamed'" in l]
        self.assertEqual(len(lost), 10, p.stdout)
        self.assertIn("Not compared: 2 case(s) only in BASELINE", p.stdout)

    def test_every_case_lost_is_a_regression_not_a_mismatch(self):
        new = self.copy_fixture(GLOO_VS_UCX, "new")
        rewrite_records(new, lambda records: [
            dict(r, status="interrupted", reason="Ctrl-C (test)") if r["type"] == "execution" else r
            for r in records if r["type"] != "case"])
        p = commbench("compare", GLOO_VS_UCX, new)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("72 cases (0 matched): 72 regressed", p.stdout)
        self.assertIn("was interrupted: Ctrl-C (test)", p.stdout)

    def test_cases_missing_from_an_unfinished_job_regress(self):
        new = self.copy_fixture(GLOO_VS_UCX, "new")
        # Killed during the UCX 4-rank execution: no outcome for it, no job_end, no summary.json.
        rewrite_records(new, lambda records: [
            r for r in records if r["type"] != "job_end"
            and not (r.get("backend") == "ucx" and r.get("world_size") == 4)])
        os.remove(os.path.join(new, "summary.json"))
        p = commbench("compare", GLOO_VS_UCX, new)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertEqual(p.stdout.count("did not finish (no job_end record)"), 12, p.stdout)
        # An unfinished job of another experiment (an old aborted job in the folder) lost nothing
        # of this one.
        rewrite_records(new, lambda records: [dict(records[0], experiment="something-else")]
                        + records[1:])
        p = commbench("compare", GLOO_VS_UCX, new, check=0)
        self.assertNotIn("did not finish", p.stdout)

    def test_cases_lost_to_a_full_disk_regress(self):
        # The disk filled up after 40 of 72 cases: results.jsonl holds fewer (here none) and no
        # job_end, summary.json every measured case and the interrupted executions. Read from
        # results.jsonl alone, NEW had no case at all: "nothing was compared", exit 2.
        new = fill_disk_mid_run(self.copy_fixture(GLOO_VS_UCX, "new"), 40, 0)
        p = commbench("compare", GLOO_VS_UCX, new)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("72 cases (40 matched): 32 regressed, 40 unchanged.", p.stdout)
        lost = [l for l in p.stdout.splitlines() if "regressed" in l and "was interrupted" in l]
        self.assertEqual(len(lost), 32, p.stdout)
        self.assertNotIn("only in baseline", p.stdout)
        # Some case lines on disk: each case still counted once.
        new = fill_disk_mid_run(self.copy_fixture(GLOO_VS_UCX, "new30"), 40, 30)
        p = commbench("compare", GLOO_VS_UCX, new, check=1)
        self.assertIn("72 cases (40 matched): 32 regressed, 40 unchanged.", p.stdout)

    def test_a_finished_job_that_measured_fewer_cases_is_not_a_regression(self):
        # The same cases left out by a job that finished with every execution ok: a subset on
        # purpose, listed and not failed.
        new = self.copy_fixture(GLOO_VS_UCX, "new")
        rewrite(new, lambda c: None if c["backend"] == "ucx" and c["world_size"] == 4 else c)
        p = commbench("compare", GLOO_VS_UCX, new, check=0)
        self.assertIn("Not compared: 12 case(s) only in BASELINE, 0 only in NEW", p.stdout)
        self.assertNotIn("not measured: NEW", p.stdout)

    def test_a_repeat_lost_to_a_crash_regresses(self):
        # Repeat 3 of 3 crashed (SIGSEGV): its case left no record. Judged on the 2 repeats
        # left, the case was "unchanged", exit 0, the crash only a "3+2 repeats" in the note.
        base = synthetic_job(self.tmp, "base", [100.0, 101.0, 102.0])
        new = run_repeats(synthetic_job(self.tmp, "new", [100.5, 101.0, 100.0]),
                          ["ok", "ok", "failed"])
        p = commbench("compare", base, new, check=1)
        row = next(l for l in p.stdout.splitlines() if l.startswith("allreduce"))
        self.assertIn("regressed", row)
        self.assertIn("not measured in repeat 3 of NEW's 3: NEW's execution 'r' (gloo, 2 ranks) "
                      "was failed: rank 1 crashed (test)", row)
        # `check` counts the same lost repeat as a miss: the two commands agree.
        new = run_repeats(synthetic_job(self.tmp, "new-expect", [100.5, 101.0, 100.0]),
                          ["ok", "ok", "failed"], expect=[{"time_us": "<= 1000"}])
        p = commbench("check", new, check=1)
        self.assertIn("MISSED: run 'r' (every case) — time_us <= 1000, got not measured: gloo 2 "
                      "ranks failed (0 of 1 cases recorded", p.stdout)
        # Every repeat ended ok: judged as usual.
        ok = run_repeats(synthetic_job(self.tmp, "ok", [100.5, 101.0, 100.0]), ["ok"] * 3)
        p = commbench("compare", base, ok, check=0)
        self.assertIn("1 cases (1 matched): 1 unchanged", p.stdout)

    def test_repeats_a_killed_job_did_not_reach_regress(self):
        # Killed after 2 of its 3 executions (repeats): no job_end, no summary.json, and no
        # record of repeat 3. Once "unchanged" on 3+2 repeats, exit 0.
        base = synthetic_job(self.tmp, "base", [100.0, 101.0, 102.0])
        new = run_repeats(synthetic_job(self.tmp, "new", [100.5, 101.0, 100.0]),
                          ["ok", "ok", None], finished=False)
        p = commbench("compare", base, new, check=1)
        row = next(l for l in p.stdout.splitlines() if l.startswith("allreduce"))
        self.assertIn("regressed", row)
        self.assertIn("not measured in every repeat: NEW's job new did not finish (no job_end "
                      "record)", row)
        # Killed after its last execution ended (before job_end): every repeat is there.
        done = run_repeats(synthetic_job(self.tmp, "done", [100.5, 101.0, 100.0]),
                           ["ok"] * 3, finished=False)
        p = commbench("compare", base, done, check=0)
        self.assertIn("1 cases (1 matched): 1 unchanged", p.stdout)

    def test_which_repeats_a_killed_job_may_lack(self):
        # Plan order (plan.cpp): per run, its repeats in rounds of backend x world size. 2
        # repeats x 2 world sizes, killed during the 4th execution (repeat 2, 4 ranks): the
        # 2-rank case has both repeats; the 4-rank one lacks its second.
        from commbench.compare_lost import _may_lack_repeats
        from commbench.load import Job
        job = Job(self.tmp, "killed")
        job.executions = [{"run": "r", "backend": "gloo", "world_size": w, "repeat": i,
                           "exec_index": 2 * i + k, "exec_total": 4, "status": "ok"}
                          for i, k, w in ((0, 0, 2), (0, 1, 4), (1, 0, 2))]
        two = [{"run": "r", "backend": "gloo", "world_size": 2, "repeat": i} for i in (0, 1)]
        four = [{"run": "r", "backend": "gloo", "world_size": 4, "repeat": 0}]
        self.assertFalse(_may_lack_repeats(job, two))
        self.assertTrue(_may_lack_repeats(job, four))
        # A later run started: this one's repeats all ended.
        job.executions.append({"run": "s", "backend": "gloo", "world_size": 2, "repeat": 0,
                               "exec_index": 4, "exec_total": 6, "status": "ok"})
        for e in job.executions:
            e["exec_total"] = 6
        self.assertFalse(_may_lack_repeats(job, two))

    def test_one_slow_repeat_of_two_is_said_to_be_beyond_two_repeats(self):
        # BASE [100, 101] µs, NEW [130, 394]: 1.3x slower in its fastest repeat, but with 2
        # repeats a side one slow repeat cannot be told from a change without breaking the
        # false-alarm bound: "within noise", and the note says why and what to do.
        base = synthetic_job(self.tmp, "base", [100.0, 101.0])
        new = synthetic_job(self.tmp, "new", [130.0, 394.0])
        p = commbench("compare", base, new, check=0)
        row = next(l for l in p.stdout.splitlines() if l.startswith("allreduce"))
        self.assertIn("within noise", row)
        self.assertIn("2 repeats on a side cannot tell this change from one slow repeat: use 3 or more", p.stdout)
        # With a third repeat the same change regresses, and unchanged repeats carry no such note.
        base3 = synthetic_job(self.tmp, "base3", [100.0, 101.0, 100.5])
        new3 = synthetic_job(self.tmp, "new3", [130.0, 394.0, 131.0])
        self.assertIn("regressed", commbench("compare", base3, new3, check=1).stdout)
        same = commbench("compare", base, synthetic_job(self.tmp, "same", [100.5, 100.0]), check=0)
        self.assertNotIn("cannot tell", same.stdout)

    def test_nothing_in_common_exits_2_and_says_why(self):
        new = self.copy_fixture(QUICKSTART, "new")
        rewrite(new, lambda c: c.update(backend="ucx") or c)
        p = commbench("compare", QUICKSTART, new)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("no case of NEW matches a case of BASELINE", p.stderr)
        self.assertIn("backend: BASELINE has gloo; NEW has ucx", p.stderr)

    def test_repeats_judge_run_to_run_noise(self):
        # Each repeat's iterations are tight (CV 0.1 %), but the repeats' means move by +-5 %
        # from run to run. Judged by the iterations, the last repeats (97 vs 107 µs) would be a
        # "regression" of 10 %; judged by the repeats, the best ones differ by 1 %.
        base = synthetic_job(self.tmp, "base", [100.0, 103.0, 97.0])
        new = synthetic_job(self.tmp, "new", [101.0, 98.0, 107.0])
        p = commbench("compare", base, new, check=0)
        self.assertIn("unchanged", p.stdout)
        self.assertIn("judged by run-to-run noise (>= 3 repeats per side", p.stdout)
        self.assertIn("each side's fastest repeat compared", p.stdout)
        self.assertIn("robust spread (MAD) times that of the fastest of n, Holm-corrected", p.stdout)
        # A real 30 % slowdown with the same run-to-run spread is a regression.
        slow = synthetic_job(self.tmp, "slow", [130.0, 134.0, 126.0])
        junit = os.path.join(self.tmp, "gate.xml")
        p = commbench("compare", base, slow, "--junit", junit)
        self.assertEqual(p.returncode, 1, p.stdout)
        row = next(l for l in p.stdout.splitlines() if "regressed" in l and " matched): " not in l)
        self.assertIn(" 1.3 ", row)
        suite = ET.parse(junit).getroot()
        self.assertEqual(suite.get("failures"), "1")
        prop = next(suite.iter("property"))
        self.assertIn("robust spread", prop.get("value"))

    def test_several_job_folders_per_side_are_repeats(self):
        side = os.path.join(self.tmp, "side")
        for i, m in enumerate([100.0, 102.0, 99.0]):
            synthetic_job(side, f"job{i}", [m])
        other = os.path.join(self.tmp, "other")
        for i, m in enumerate([101.0, 100.0, 103.0]):
            synthetic_job(other, f"job{i}", [m])
        p = commbench("compare", side, other, check=0)
        self.assertIn("judged by run-to-run noise (>= 3 repeats per side", p.stdout)

    def test_runs_that_differ_in_peers_window_options_or_env_are_not_repeats(self):
        # A probe pooled the 0-1 and 0-2 links of one job as "2+2 repeats" and judged each side
        # by the faster: a slow cross-node link hid behind a fast local one.
        for field, a, b in (("peers", [0, 1], [0, 2]), ("window", 64, 1),
                            ("options", {"algorithm": "ring"}, {"algorithm": "halving_doubling"}),
                            ("env", {"NCCL_ALGO": "Ring"}, {"NCCL_ALGO": "Tree"})):
            with self.subTest(field=field):
                job = os.path.join(self.tmp, f"both-{field}")
                os.makedirs(job)
                for name, value, mean in (("a", a, 10.0), ("b", b, 50.0)):
                    synthetic_job(job, name, [mean], op="unidir_bw", **{field: value})
                p = commbench("compare", job, job, check=0)
                self.assertIn("2 cases (2 matched): 2 unchanged", p.stdout)
                self.assertIn("1 repeat: 0 standard errors", p.stdout)
                self.assertNotIn("repeats", p.stdout.split("\n\n")[1].split("A verdict")[0])
                # One configuration per side: nothing matches, and the message says how to
                # compare them on purpose.
                base = synthetic_job(os.path.join(self.tmp, f"base-{field}"), "j", [10.0],
                                     op="unidir_bw", **{field: a})
                new = synthetic_job(os.path.join(self.tmp, f"new-{field}"), "j", [50.0],
                                    op="unidir_bw", **{field: b})
                p = commbench("compare", base, new)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn(f"{field}: BASELINE has", p.stderr)
                self.assertIn(f"--ignore {field}", p.stderr)
                p = commbench("compare", base, new, "--ignore", field)
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertIn("regressed", p.stdout)

    def test_records_from_before_peers_and_window_still_match_a_new_job(self):
        # A baseline written before records carried peers/window/options/env ran the defaults:
        # it must keep matching a new job that ran them too (a gate would have stopped judging
        # every p2p case), and not one that ran other peers.
        old = synthetic_job(os.path.join(self.tmp, "old"), "j", [10.0], op="unidir_bw")
        same = synthetic_job(os.path.join(self.tmp, "same"), "j", [10.1], op="unidir_bw",
                             peers=[0, 1], window=64)
        other = synthetic_job(os.path.join(self.tmp, "other"), "j", [10.1], op="unidir_bw",
                              peers=[0, 2], window=64)
        p = commbench("compare", old, same, check=0)
        self.assertIn("1 cases (1 matched)", p.stdout)
        p = commbench("compare", old, other)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("peers: BASELINE has [0,1]; NEW has [0,2]", p.stderr)

    def test_the_fastest_record_of_a_side_is_tested_whatever_the_folder_order(self):
        # Baseline: two jobs (1.0 and 0.9 µs), NEW one job at 1.0 µs; iterations' SE 0.01 µs.
        # The ratio used the fastest (0.9) but the test used the first folder read, so renaming
        # the folders flipped "within noise" to "regressed".
        outs = []
        for order in (("a", "b"), ("b", "a")):
            base = os.path.join(self.tmp, "base-" + "".join(order))
            synthetic_job(base, order[0] + "-job", [1.0], cv=0.05, n=50)
            synthetic_job(base, order[1] + "-job", [0.9], cv=0.05, n=50)
            new = synthetic_job(os.path.join(self.tmp, "new-" + "".join(order)), "c-job", [1.0],
                                cv=0.05, n=50)
            p = commbench("compare", base, new)
            row = next(l for l in p.stdout.splitlines() if l.startswith("allreduce"))
            outs.append((p.returncode, row.split("  ")[-1].strip(), "regressed" in row))
        self.assertEqual(outs[0], outs[1])
        self.assertTrue(outs[0][2], outs[0])  # 0.9 -> 1.0 is 11 %, and 15 standard errors
        self.assertEqual(outs[0][0], 1)
        self.assertIn("2+1 repeats, fewer than 2 on a side; the fastest of each", outs[0][1])

    def test_help_says_what_the_test_is_and_when_it_exits_1(self):
        # It said "Welch's t-test on the repeats' log mean times" and "Cohen's d", and exit 1
        # only "when a case regressed" (NEW missing its own `expect` exits 1 too).
        text = " ".join(commbench("compare", "--help", check=0).stdout.split())
        self.assertNotIn("Welch", text)
        self.assertNotIn("Cohen", text)
        self.assertIn("a one-sided Student's t-test on the difference of the two sides' fastest "
                      "repeats' log mean times", text)
        self.assertIn("n_b + n_n - 2 degrees of freedom", text)
        self.assertIn("the change of the fastest repeats' log time over the noise scale", text)
        self.assertIn("Exit code 1 when a case regressed or NEW missed one of its own "
                      "expectations", text)

    def test_unknown_ignore_field_is_a_usage_error(self):
        p = commbench("compare", QUICKSTART, QUICKSTART, "--ignore", "backend")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--ignore 'backend': expected one of", p.stderr)

    def test_bad_threshold_is_a_usage_error(self):
        p = commbench("compare", QUICKSTART, QUICKSTART, "--threshold", "fast")
        self.assertEqual(p.returncode, 2)
        self.assertIn("expected a percentage", p.stderr)

    def test_negative_threshold_names_the_range(self):
        # argparse took '-5%' for an option and said only "expected one argument".
        for flag in ("--min-change", "--threshold"):
            p = commbench("compare", QUICKSTART, QUICKSTART, flag, "-5%")
            self.assertEqual(p.returncode, 2, flag)
            self.assertIn("'-5%': expected a percentage between 0 and 1000", p.stderr)

    def test_nan_or_infinite_limits_are_usage_errors(self):
        # nan compares false with everything: every regression became "within noise", exit 0.
        for flag in ("--min-effect", "--sigma"):
            for value in ("nan", "inf"):
                p = commbench("compare", QUICKSTART, QUICKSTART, flag, value)
                self.assertEqual(p.returncode, 2, (flag, value))
                self.assertIn(f"{flag} {value}: expected a finite", p.stderr)


class JunitDestinationTest(TempDirCase):
    """--junit PATH that cannot be written: the whole comparison was printed, then "commbench
    compare: /x/afile: Not a directory; check that path", exit 2, the verdict (1) lost and the
    flag not named."""

    def regression(self):
        base = synthetic_job(self.tmp, "base", [100.0, 101.0, 100.5])
        slow = synthetic_job(self.tmp, "slow", [130.0, 131.0, 130.5])
        return base, slow

    def test_an_unwritable_junit_path_is_refused_before_any_work(self):
        base, slow = self.regression()
        afile = os.path.join(self.tmp, "afile")
        open(afile, "w").close()
        folder = os.path.join(self.tmp, "folder")
        os.mkdir(folder)
        for path, why in ((os.path.join(afile, "x.xml"), "Not a directory"),
                          (os.path.join(self.tmp, "missing", "x.xml"), "No such file or directory"),
                          (folder, "Is a directory")):
            for args in (["compare", base, slow], ["check", base, "--allow-none"]):
                with self.subTest(path=path, command=args[0]):
                    p = commbench(*args, "--junit", path)
                    self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                    self.assertEqual(p.stdout, "")   # refused first: no work, no table
                    self.assertIn(f"commbench {args[0]}: --junit {path}: the file cannot be "
                                  "written there", p.stderr)
                    self.assertIn(why, p.stderr)
        self.assertEqual(os.listdir(folder), [])   # the probe leaves nothing behind
        good = os.path.join(folder, "ok.xml")
        commbench("compare", base, slow, "--junit", good, check=1)
        self.assertEqual(os.listdir(folder), ["ok.xml"])

    @unittest.skipIf(os.geteuid() == 0, "root writes into a read-only folder anyway")
    def test_a_folder_one_may_not_write_is_refused_first(self):
        base, slow = self.regression()
        ro = os.path.join(self.tmp, "ro")
        os.mkdir(ro, 0o555)
        p = commbench("compare", base, slow, "--junit", os.path.join(ro, "x.xml"), check=2)
        self.assertEqual(p.stdout, "")
        self.assertIn("Permission denied", p.stderr)

    def test_a_junit_file_that_fails_at_the_end_keeps_the_verdict_printed(self):
        # Checked first, the file can still fail when written (a full disk): the verdict is
        # printed, the message names the --junit file and says what the exit code would have
        # been; the step exits 2 (documented: never 0 over a regression).
        import contextlib
        import errno
        import io
        from commbench import __main__ as cli
        base, slow = self.regression()
        path = os.path.join(self.tmp, "late.xml")

        def full(p, *args, **kwargs):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), p)
        for args, verdict in ((["compare", base, slow], 1), (["compare", base, base], 0),
                              (["check", base], 1), (["check", base, "--allow-none"], 0)):
            with self.subTest(args=args):
                out, err = io.StringIO(), io.StringIO()
                saved, cli.junit.write = cli.junit.write, full
                try:
                    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                        code = cli.main(args + ["--junit", path])
                finally:
                    cli.junit.write = saved
                self.assertEqual(code, 2, err.getvalue())
                self.assertIn(f"commbench {args[0]}: could not write the --junit file {path} "
                              f"({path}: No space left on device); the verdict above stands "
                              f"(exit {verdict} without --junit); exit 2", err.getvalue())
                if args[0] == "compare":
                    self.assertIn("regressed" if verdict else "unchanged", out.getvalue())
                self.assertFalse(os.path.exists(path))


class MixedSidesTest(TempDirCase):
    """A side that mixes jobs of two experiments was compared without a word, and NEW's own job
    folder inside BASELINE's folder of jobs was pooled into both sides."""

    def job(self, parent, name, experiment, means):
        path = synthetic_job(parent, name, means)
        rewrite_records(path, lambda lines: [dict(l, experiment=experiment) if "experiment" in l
                                             else l for l in lines])
        return path

    def test_a_side_of_two_experiments_is_said(self):
        old = os.path.join(self.tmp, "old")
        self.job(old, "a", "small", [100.0, 101.0, 100.5])
        self.job(old, "b", "other", [100.2, 100.9, 100.4])
        new = self.job(self.tmp, "new", "small", [100.1, 100.7, 101.0])
        p = commbench("compare", old, new, check=0)
        self.assertIn(f"commbench compare: warning: BASELINE {old} holds jobs of 2 experiments: "
                      "'small' (1 job folder), 'other' (1 job folder)", p.stderr)
        self.assertNotIn("NEW", p.stderr)
        # One experiment a side: no warning.
        shutil.rmtree(os.path.join(old, "b"))
        self.assertEqual(commbench("compare", old, new, check=0).stderr, "")

    def test_a_job_folder_on_both_sides_is_refused(self):
        old = os.path.join(self.tmp, "old")
        self.job(old, "a", "small", [100.0, 101.0, 100.5])
        new = self.job(old, "new", "small", [130.0, 131.0, 130.5])   # a regression, hidden
        for args in ((old, new), (new, old), (old + "/", os.path.join(old, ".", "new"))):
            with self.subTest(args=args):
                p = commbench("compare", *args, check=2)
                self.assertEqual(p.stdout, "")
                self.assertIn(f"the job folder {os.path.realpath(new)} is on both sides",
                              p.stderr)
                self.assertIn("share no job", p.stderr)
        # The very same folders on both sides are a self-check, said but not refused.
        p = commbench("compare", new, new, check=0)
        self.assertIn("BASELINE and NEW are the same job folder(s)", p.stderr)


class MatchKeyTest(unittest.TestCase):
    def test_a_barrier_matches_whatever_dtype_an_older_job_recorded_for_it(self):
        # Barrier records carried "uint8" before they named no dtype (""): a baseline of then
        # must still match a barrier of now (and group with it in reports), or the gate
        # silently stops checking barriers. Cases are normalised as they are read.
        base = {"backend": "gloo", "op": "barrier", "bytes": 0, "world_size": 2, "placement": "out_of_place"}
        old, new = normalised_case({**base, "dtype": "uint8"}), normalised_case({**base, "dtype": ""})
        self.assertEqual(compare.match_key(old), compare.match_key(new))
        data = {**base, "op": "allreduce", "bytes": 1024}
        self.assertNotEqual(compare.match_key(normalised_case({**data, "dtype": "uint8"})),
                            compare.match_key(normalised_case({**data, "dtype": "f32"})))


if __name__ == "__main__":
    unittest.main()
