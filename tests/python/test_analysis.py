"""The analysis' sentences checked against the numbers of a known result (records built here, so
every expected figure is computed by hand): the method actually used, every dimension that tells
compared series apart, no claim that noise can explain, the right metric per pattern, ratios and
rates with significant digits, the busy-machine and not-GPU-performance warnings; and the plots' styles and legend."""
import unittest

from commbench import analysis, fmt, plots, plots_workload
from commbench.load import Job
from commbench.series import series_of
from helpers import have_matplotlib


def rec(op="allreduce", backend="gloo", bytes_=4096, mean=10.0, sd=0.1, n=20, dtype="f32",
        redop="sum", world=4, method="batch", agg="avg", **extra):
    r = {"type": "case", "run": "r", "backend": backend, "world_size": world, "op": op,
         "bytes": bytes_, "dtype": dtype, "redop": redop, "placement": "out_of_place",
         "memory": "host", "root": 0, "src": -1, "dst": -1, "status": "ok", "method": method,
         "rank_aggregation": agg, "timing": "host",
         "time_us": {"n": n, "mean": mean, "stddev": sd, "cv": sd / mean, "p50": mean},
         "busbw_gbps": bytes_ / mean / 1e3, "algbw_gbps": bytes_ / mean / 1e3,
         "msg_rate_mps": 0.0, "wrong": 0}
    r.update(extra)
    return r


def job(cases, executions=()):
    j = Job("/nonexistent", "known")
    j.cases = list(cases)
    j.executions = list(executions)
    return j


def sentences(jobs, title):
    return dict(analysis.analyse(jobs)).get(title, [])


class MethodSentence(unittest.TestCase):
    def test_batch_average_is_not_called_the_slowest_rank(self):
        text = analysis.markdown([job([rec()])])
        self.assertIn("method batch, rank_aggregation avg: the iterations run back to back, per "
                      "rank the elapsed time / N, averaged over the ranks (1 record)", text)
        self.assertNotIn("slowest rank", text)

    def test_each_method_found_is_named_with_its_cases(self):
        text = analysis.method_sentence([job([rec(), rec(bytes_=8192, method="per_iteration",
                                                     agg="max"),
                                              rec(op="pingpong", agg="rank0", redop="")])])
        self.assertIn("method per_iteration: every iteration starts together on all ranks and its "
                      "time is the slowest rank's; the mean over iterations (1 record)", text)
        self.assertIn("method batch, rank_aggregation avg: ", text)
        self.assertIn("rank 0's clock", text)

    def test_repeats_of_an_all_pairs_job_are_counted(self):
        # A job of only all_pairs with `repeats = 2` was said to have "one repeat per case": the
        # repeats were counted over the series, which leave all_pairs out.
        cases = [rec(op="all_pairs", redop="", world=2, bytes_=1024, src=s, dst=1 - s, repeat=i,
                     mean=m) for s in (0, 1) for i, m in enumerate((10.0, 12.0))]
        text = analysis.method_sentence([job(cases)])
        self.assertIn("Welch's t-test on the repeats' log mean times gives p < 0.01 (two-sided; 2 "
                      "repeats a side)", text)
        self.assertNotIn("one repeat per case", text)


    def test_the_rule_named_is_the_one_the_comparisons_used(self):
        # 3 repeats against 1: faster() judges by the iterations' standard errors, yet the
        # sentence said "Welch's t-test on the 3 repeats' log mean times".
        def case(backend, means, b=4096):
            return [rec(backend=backend, bytes_=b, mean=m, repeat=i) for i, m in enumerate(means)]
        text = analysis.method_sentence([job(case("a", [99.0, 100.0, 101.0]) + case("b", [150.0]))])
        self.assertNotIn("Welch", text)
        self.assertIn("by 3 standard errors of the iterations (one repeat on a side: run-to-run "
                      "variation is not measured", text)
        # Both rules used: each named with how many comparisons it judged.
        text = analysis.method_sentence([job(case("a", [99.0, 100.0, 101.0]) + case("b", [150.0])
                                             + case("a", [99.0, 100.0], 8192)
                                             + case("b", [150.0, 151.0], 8192))])
        self.assertIn("in the 1 comparison where both sides have 2 or more repeats (2 repeats a "
                      "side), Welch's t-test on the repeats' log mean times gives p < 0.01 "
                      "(two-sided); in the 1 where a side has one repeat, by 3 standard errors", text)


class ResultQuality(unittest.TestCase):
    def test_failed_checks_say_what_the_console_says_and_which_run(self):
        # "first mismatch: rank 0, index 2048, expected -7172658.0, got None" where the console
        # said "got the poison (nothing was written)"; two runs' lines were identical.
        bad = dict(status="failed", wrong=4096, time_us={}, first_wrong={
            "rank": 0, "index": 2048, "expected": -7172658.0, "got": None,
            "check": "first_iteration"})
        text = "\n".join(sentences([job([rec(backend="faulty", run=r, **bad) for r in ("a", "b")]
                                        + [rec(bytes_=1 << 20)])], "Result quality"))
        for r in ("a", "b"):
            self.assertIn(f"Check failed: allreduce 4 KiB faulty 4 ranks, run {r} (known) — 4096 "
                          "wrong elements; first mismatch: rank 0, element 2048, expected "
                          "-7172658, got the poison (nothing was written); first_iteration "
                          "check.", text)
        self.assertNotIn("None", text)
        guard = dict(bad, first_wrong={"rank": 1, "index": 3, "expected": None, "got": 7.0,
                                       "buffer": "past_recv_end", "check": "after_timing"})
        (line,) = [s for s in sentences([job([rec(**guard)])], "Result quality") if "Check" in s]
        self.assertIn("first mismatch: rank 1 wrote past the end of its receive buffer, element 3 "
                      "after it; after_timing check.", line)

    def test_one_size_is_singular(self):
        (line,) = sentences([job([rec()])], "Per backend and op")
        self.assertTrue(line.endswith("(1 size)."), line)

    def test_one_rank_is_singular(self):
        # seed 001: "Execution gpu nccl 1 ranks in ...". Counted from the records, both ways.
        failed = {"run": "gpu", "backend": "nccl", "world_size": 1, "status": "failed",
                  "reason": "no GPU"}
        for world in (1, 2):
            bad = rec(world=world, status="failed", wrong=2, time_us={})
            text = "\n".join(sentences([job([bad], [dict(failed, world_size=world)])],
                                        "Result quality"))
            want = "1 rank" if world == 1 else "2 ranks"
            self.assertIn(f"Execution gpu nccl {want} in known: failed", text)
            self.assertIn(f"Check failed: allreduce 4 KiB gloo {want} (known)", text)
            self.assertNotIn("1 ranks", text)


class Comparisons(unittest.TestCase):
    def test_sentences_name_dtype_and_redop(self):
        cases = []
        for dtype, factor in (("f32", 2.0), ("f64", 3.0)):
            for b in (4096, 65536):
                cases.append(rec(backend="gloo", bytes_=b, dtype=dtype, mean=100.0 * factor))
                cases.append(rec(backend="shm", bytes_=b, dtype=dtype, mean=100.0))
        s = sentences([job(cases)], "Backends and memory types compared")
        self.assertEqual(len(s), 2, s)
        # time ratio 200/100 and 300/100, exactly: the numbers of the known result.
        self.assertIn("allreduce f32 sum method batch/avg, 4 ranks: shm is faster than gloo at "
                      "all 2 common sizes, by 2× (time ratio).", s)
        self.assertIn("allreduce f64 sum method batch/avg, 4 ranks: shm is faster than gloo at "
                      "all 2 common sizes, by 3× (time ratio).", s)

    def test_no_claim_that_noise_can_explain(self):
        # CV 342 %: a 20 % difference in the means is nothing, with 10 iterations each.
        cases = [rec(backend="a", bytes_=b, mean=100.0, sd=342.0, n=10) for b in (1024, 4096)]
        cases += [rec(backend="b", bytes_=b, mean=120.0, sd=410.0, n=10) for b in (1024, 4096)]
        s = sentences([job(cases)], "Backends and memory types compared")
        self.assertEqual(len(s), 1, s)
        self.assertIn("differ by no more than noise can explain at any of the 2 common sizes", s[0])
        self.assertNotIn("faster", s[0])
        self.assertNotIn("takes the lead", s[0])

    def test_crossover_only_between_real_differences(self):
        t = {1024: (10.0, 20.0), 4096: (11.0, 11.2), 65536: (40.0, 20.0)}
        cases = [rec(backend="a", bytes_=b, mean=ta) for b, (ta, _) in t.items()]
        cases += [rec(backend="b", bytes_=b, mean=tb) for b, (_, tb) in t.items()]
        s = sentences([job(cases)], "Backends and memory types compared")
        self.assertEqual(s, ["allreduce f32 sum method batch/avg, 4 ranks: a is faster at 1 KiB; b "
                             "takes the lead by 64 KiB (20 µs vs 40 µs; at 1 KiB it was slower, "
                             "beyond noise); at 1 of 3 sizes the difference is within noise (CV up "
                             "to 0.909 %)."])

    def test_repeats_judge_by_run_to_run_spread(self):
        # Tight iterations within each repeat, but the repeats' means overlap: no claim (the
        # iterations alone would give z ~ 2000). Separated repeats: a claim, with the median's ratio.
        def case(backend, means):
            return [rec(backend=backend, mean=m, sd=0.01, repeat=i) for i, m in enumerate(means)]
        s = sentences([job(case("a", [90.0, 100.0, 115.0]) + case("b", [95.0, 108.0, 120.0]))],
                      "Backends and memory types compared")
        self.assertIn("differ by no more than noise", s[0])
        jobs = [job(case("a", [99.0, 100.0, 101.0]) + case("b", [149.0, 150.0, 151.0]))]
        s = sentences(jobs, "Backends and memory types compared")
        self.assertIn("a is faster than b at their one common size, 4 KiB, by 1.5× (time ratio)",
                      s[0])
        self.assertIn("Welch's t-test on the repeats' log mean times gives p < 0.01 (two-sided; 3 "
                      "repeats a side)", analysis.method_sentence(jobs))

    def test_two_repeats_too_few_to_decide_are_not_called_noise(self):
        # A probe's gloo [1817.8, 993.1] µs against ucx [58.6, 67.3] µs: 15-30x apart in every
        # repeat, yet p > 0.01 with one degree of freedom. Once "no more than noise can explain".
        def case(backend, means):
            return [rec(backend=backend, mean=m, sd=0.01, repeat=i) for i, m in enumerate(means)]
        (line,) = sentences([job(case("gloo", [1817.8, 993.1]) + case("ucx", [58.6, 67.3]))],
                            "Backends and memory types compared")
        self.assertNotIn("noise can explain", line)
        self.assertIn("gloo and ucx: no difference established at their one common size, 4 KiB: "
                      "ucx was faster in every repeat, but 2 repeats per side were too few for the "
                      "test to establish it", line)
        # One size established, one left undecided by too few repeats: not "at all 2 sizes".
        def sized(backend, means_by_size):
            return [rec(backend=backend, bytes_=b, mean=m, sd=0.01, repeat=i)
                    for b, means in means_by_size.items() for i, m in enumerate(means)]
        (line,) = sentences([job(sized("gloo", {4096: [1817.8, 993.1], 8192: [100.0, 100.1]})
                                 + sized("ucx", {4096: [58.6, 67.3], 8192: [50.0, 50.1]}))],
                            "Backends and memory types compared")
        self.assertIn("ucx is faster than gloo at 1 of 2 common sizes", line)
        self.assertIn("at 1 of 2 sizes ucx was faster in every repeat, but 2 repeats", line)
        self.assertNotIn("at all 2 common sizes", line)
        # Overlapping repeats stay "within noise".
        (line,) = sentences([job(case("gloo", [100.0, 130.0]) + case("ucx", [110.0, 120.0]))],
                            "Backends and memory types compared")
        self.assertIn("differ by no more than noise can explain", line)


class ComparedConfigurations(unittest.TestCase):
    """A seed004-like job: data_parallel on gloo and ucx, overlap on and off. analysis.md paired
    every configuration with every other ("gloo, overlap on and ucx, overlap off ... at any of
    the 1 common sizes"), 6 sentences per world size."""

    @staticmethod
    def step(backend, overlap, mean, world=2, run="train", source_bytes=102228128):
        return rec(op="data_parallel", backend=backend, bytes_=source_bytes, mean=mean, world=world,
                   redop="", method="per_step", agg="slowest_per_step", run=run,
                   workload={"model": "resnet50", "sharding": "ddp", "overlap": overlap,
                             "batch_size": 32})

    def test_only_configurations_that_differ_in_one_dimension_are_compared(self):
        means = {("gloo", True): 100.0, ("gloo", False): 130.0, ("ucx", True): 60.0,
                 ("ucx", False): 61.0}
        cases = [self.step(b, o, m, world=w) for w in (1, 2) for (b, o), m in means.items()]
        s = sentences([job(cases)], "Backends and memory types compared")
        self.assertEqual(len(s), 8, s)   # 4 per world size, not 6
        where = "data_parallel (resnet50 ddp, batch 32) f32 method per_step/slowest_per_step, 2 ranks"
        self.assertIn(f"{where}, gloo: overlap on is faster than overlap off, by 1.3× (time ratio).", s)
        self.assertIn(f"{where}, overlap on: ucx is faster than gloo, by 1.67× (time ratio).", s)
        self.assertIn(f"{where}, ucx: overlap on and overlap off differ by no more than noise can "
                      "explain (CV up to 0.167 %).", s)
        for line in s:
            # never a backend and an overlap changed at once
            self.assertFalse("gloo, overlap" in line and "ucx, overlap" in line, line)
            self.assertNotIn("common sizes", line)
            self.assertNotIn("any of the 1", line)
        # The rule sentence counts the comparisons made, not the 6 of every pairing.
        self.assertIn("one repeat per case", analysis.method_sentence([job(cases)]))
        self.assertEqual(len(analysis.compared_records(series_of([job(cases)]))), 8)

    def test_configurations_with_nothing_between_them_are_still_compared(self):
        # Each run (or job) ran one backend: run and backend differ, and no other series lies
        # between them, so they are compared.
        cases = [rec(backend="gloo", run="g", bytes_=b, mean=20.0) for b in (4096, 65536)]
        cases += [rec(backend="ucx", run="u", bytes_=b, mean=10.0) for b in (4096, 65536)]
        s = sentences([job(cases)], "Backends and memory types compared")
        self.assertEqual(s, ["allreduce f32 sum method batch/avg, 4 ranks: u, ucx is faster than "
                             "g, gloo at all 2 common sizes, by 2× (time ratio)."])

    def test_one_common_size_is_said_as_one(self):
        # A lone size: "at their one common size, 4 KiB", never "at any of the 1 common sizes"
        # or "at all 1 common sizes".
        noisy = [rec(backend="a", mean=100.0, sd=342.0, n=10),
                 rec(backend="b", mean=120.0, sd=410.0, n=10)]
        (line,) = sentences([job(noisy)], "Backends and memory types compared")
        self.assertEqual(line, "allreduce f32 sum method batch/avg, 4 ranks: a and b differ by no "
                               "more than noise can explain at their one common size, 4 KiB (CV up "
                               "to 342 %).")
        (line,) = sentences([job([rec(backend="a", mean=10.0), rec(backend="b", mean=20.0)])],
                            "Backends and memory types compared")
        self.assertEqual(line, "allreduce f32 sum method batch/avg, 4 ranks: a is faster than b at "
                               "their one common size, 4 KiB, by 2× (time ratio).")
        # A workload step has one size by construction (its gradients' bytes): not named.
        (line,) = sentences([job([self.step("gloo", True, 100.0), self.step("gloo", False, 101.0)])],
                            "Backends and memory types compared")
        self.assertNotIn("size", line)
        self.assertIn("gloo: overlap on and overlap off differ by no more than noise can explain "
                      "(CV up to", line)


class NothingMeasured(unittest.TestCase):
    """A run whose every backend was unavailable or whose every case was unsupported: the
    analysis says plainly that nothing was measured for it (the job exits 1, "nothing was
    measured"), where it once said "No case was measured." and listed one execution."""

    UNAVAILABLE = {"run": "gpu-comm", "backend": "nccl", "world_size": 2, "status": "unavailable",
                   "reason": "backend 'nccl': init failed (unavailable): nccl init: no CUDA device",
                   "failed_rank": 1, "cases_done": 0}

    def test_a_job_of_only_unavailable_backends(self):
        j = job([], [self.UNAVAILABLE, dict(self.UNAVAILABLE, world_size=4)])
        self.assertEqual(sentences([j], "⚠ Nothing measured"), [
            "Nothing was measured in known (its one run, gpu-comm): nccl was unavailable at 2 and 4 "
            "ranks. Result quality, below, says why."])
        text = analysis.markdown([j])
        self.assertLess(text.index("## ⚠ Nothing measured"), text.index("## Result quality"))
        self.assertIn("# ⚠ Nothing measured:\n#   - Nothing was measured in known",
                      analysis.console([j]))

    def test_only_the_run_that_measured_nothing_is_named(self):
        unsupported = [rec(run="f8", dtype="f8e4m3", bytes_=b, status="unsupported", time_us={},
                           wrong=-1, reason="dtype f8e4m3 is not supported for reductions")
                       for b in (4096, 16384)]
        ok = [rec(run="ok", bytes_=b) for b in (4096, 16384)]
        execs = [{"run": r, "backend": "gloo", "world_size": 4, "status": "ok"} for r in ("ok", "f8")]
        j = job(ok + unsupported, execs + [self.UNAVAILABLE])
        self.assertEqual(sentences([j], "⚠ Nothing measured"), [
            "Nothing was measured for run f8 in known: its 2 cases on gloo were unsupported (dtype "
            "f8e4m3 is not supported for reductions).",
            "Nothing was measured for run gpu-comm in known: nccl was unavailable at 2 ranks. "
            "Result quality, below, says why."])
        # Every run measured: no such section.
        self.assertEqual(sentences([job(ok, execs[:1])], "⚠ Nothing measured"), [])

    def test_a_memory_run_measured_something(self):
        j = job([], [{"run": "mem", "backend": "gloo", "world_size": 2, "status": "ok"}])
        j.memory = [{"type": "memory", "run": "mem", "backend": "gloo", "world_size": 2,
                     "status": "ok"}]
        self.assertEqual(sentences([j], "⚠ Nothing measured"), [])


class AllPairsRepeats(unittest.TestCase):
    def test_links_count_pairs_not_repeats_and_take_each_pairs_median_repeat(self):
        # 2 ranks, 3 repeats: once "4 pairs" / "6 pairs", the repeats pooled as if pairs.
        cases = [rec(op="all_pairs", redop="", world=2, bytes_=1024, src=s, dst=1 - s, repeat=i,
                     mean=m, algbw_gbps=1024 / m / 1e3)
                 for s, means in ((0, (10.0, 40.0, 20.0)), (1, (5.0, 9.0, 7.0)))
                 for i, m in enumerate(means)]
        (line,) = sentences([job(cases)], "Links (all_pairs)")
        self.assertIn("2 pairs", line)
        # Fastest 1→0 at its median repeat (7 µs), slowest 0→1 at its median (20 µs).
        self.assertIn(f"fastest pair 1→0 {fmt.num(1024 / 7.0 / 1e3)} GB/s", line)
        self.assertIn(f"slowest 0→1 {fmt.num(1024 / 20.0 / 1e3)} GB/s", line)


    def test_each_dtype_of_an_all_pairs_run_keeps_its_own_pairs(self):
        # Two dtypes of one size: not two repeats of one pair (one dtype once vanished).
        cases = [rec(op="all_pairs", redop="", world=2, bytes_=1024, src=s, dst=1 - s, dtype=dt,
                     mean=m, algbw_gbps=1024 / m / 1e3)
                 for dt, m in (("f32", 10.0), ("int32", 40.0)) for s in (0, 1)]
        lines = sentences([job(cases)], "Links (all_pairs)")
        self.assertEqual(len(lines), 2, lines)
        self.assertTrue(any(" f32:" in l for l in lines) and any(" int32:" in l for l in lines), lines)
        self.assertTrue(all("2 pairs" in l for l in lines), lines)


class MetricPerPattern(unittest.TestCase):
    def test_bandwidth_patterns_have_no_latency_floor(self):
        cases = [rec(op="unidir_bw", redop="", world=2, bytes_=b, mean=m, agg="rank0",
                     msg_rate_mps=1 / m) for b, m in ((1024, 1.0), (1 << 20, 100.0))]
        s = sentences([job(cases)], "Per backend and op")[0]
        self.assertNotIn("latency", s)
        # algbw of the known records: 1 MiB / 100 µs = 10.5 GB/s; rate 1/1 µs = 1 M messages/s.
        self.assertIn(f"peak bandwidth {fmt.num((1 << 20) / 100.0 / 1e3)} GB/s at 1 MiB", s)
        self.assertIn("highest message rate 1 M messages/s at 1 KiB", s)

    def test_msg_rate_reports_messages_per_second(self):
        cases = [rec(op="msg_rate", redop="", world=4, bytes_=8, mean=0.5, agg="rank0",
                     msg_rate_mps=4.0)]
        s = sentences([job(cases)], "Per backend and op")[0]
        self.assertIn("peak message rate 4 M messages/s at 8 B (2 pair(s) sending)", s)

    def test_pingpong_is_a_one_way_latency(self):
        s = sentences([job([rec(op="pingpong", redop="", world=2, mean=2.5)])],
                      "Per backend and op")[0]
        self.assertIn("one-way latency (half the round trip) 2.5 µs", s)
        self.assertNotIn("busbw", s)


class Formatting(unittest.TestCase):
    def test_ratios_and_rates_keep_significant_digits(self):
        self.assertEqual(fmt.ratio(1000.0), "1000×")
        self.assertEqual(fmt.ratio(0.001), "0.001×")
        self.assertEqual(fmt.ratio(0.00123), "0.00123×")
        self.assertEqual(fmt.rate(1.234e6), "1.23 M messages/s")
        self.assertEqual(fmt.rate(950.0), "950 messages/s")

    def test_sizes_and_percentages_never_use_an_exponent(self):
        # 1,025,000 B read "1e+03 KiB" and 1,048,000 B "1.02e+03 KiB" (three significant digits
        # from 1000 of a unit up): now two decimals there, as summary.md writes them.
        self.assertEqual(fmt.size(1025000), "1000.98 KiB")
        self.assertEqual(fmt.size(1048000), "1023.44 KiB")
        self.assertEqual(fmt.size(1000 * (1 << 20) + (1 << 19)), "1000.50 MiB")
        self.assertEqual(fmt.size(1 << 50), "1048576 GiB")
        # Below 1000 of a unit, as before: three significant digits, exact values bare.
        self.assertEqual(fmt.size(1536), "1.5 KiB")
        self.assertEqual(fmt.size(12800), "12.5 KiB")
        self.assertEqual(fmt.size(1000 * 1024), "1000 KiB")
        self.assertEqual(fmt.size(1023), "1023 B")
        for n in range(1000 * 1024 - 7, 1 << 20, 997):
            self.assertNotIn("e+", fmt.size(n), n)
        # A scaling efficiency of 31.7 (a superlinear outlier) is a plain number, never 3.17e+03 %.
        self.assertEqual(fmt.pct(31.7), "3170 %")


class BusyMachine(unittest.TestCase):
    def test_busy_executions_are_said_with_their_numbers(self):
        load = {"cpus": 2, "load_average": [6.5, 5.0, 3.0], "runnable_others": 5, "ranks_here": 4,
                "busy": True, "oversubscribed": True}
        ex = [{"run": "r", "backend": "gloo", "world_size": 4, "status": "ok", "host_load": load},
              {"run": "r", "backend": "gloo", "world_size": 1, "status": "ok",
               "host_load": dict(load, busy=False, oversubscribed=False, ranks_here=1,
                                 runnable_others=0)}]
        s = sentences([job([rec()], ex)], "⚠ Busy machine")
        self.assertEqual(len(s), 1, s)
        self.assertIn("1 of 2 executions in known started on a busy machine (1 oversubscribed", s[0])
        self.assertIn("had 4 rank(s) + 5 other runnable task(s) on 2 CPU(s), load average 6.5", s[0])


class NotGpuPerformance(unittest.TestCase):
    def test_simulated_gpu_and_shared_gpus_are_said(self):
        sim = {"ranks": {"0": {"gpu": {"cuda": {"name": "commbench simulated GPU (not a real device)"}}}}}
        real = {"ranks": {"0": {"gpu": {"cuda": {"name": "NVIDIA H200"}}}}}
        ex = [{"run": "r", "backend": "nccl", "world_size": 2, "status": "ok", "metadata": sim},
              {"run": "q", "backend": "nccl", "world_size": 1, "status": "ok", "metadata": real}]
        s = sentences([job([rec(oversubscribe_gpu=True), rec()], ex)], "⚠ Not GPU performance")
        self.assertEqual(len(s), 2, s)
        self.assertIn("r nccl 2 ranks in known ran on commbench simulated GPU", s[0])
        self.assertIn("1 case(s) in known ran with ranks sharing a GPU", s[1])
        self.assertEqual(sentences([job([rec()], ex[1:])], "⚠ Not GPU performance"), [])


class ScalingSentences(unittest.TestCase):
    """The report says the efficiency the job computed (summary.json `scaling`), by the formula of
    the run's mode; it once recomputed every run as weak scaling."""

    def strong_job(self):
        # 1 MiB in total of allreduce: 400 µs at 2 ranks, 500 µs at 4. Strong: (400 / 500) x
        # (2 / 4) = 40 %; the weak formula would have said 400 / 500 = 80 %.
        j = job([rec(bytes_=1 << 20, mean=400.0, world=2), rec(bytes_=1 << 20, mean=500.0, world=4)])
        j.summary = {"scaling": [{
            "run": "r", "backend": "gloo", "op": "allreduce", "dtype": "f32", "redop": "sum",
            "placement": "out_of_place", "memory": "host", "mode": "strong", "bytes": 1 << 20,
            "base_world_size": 2,
            "points": [{"world_size": 2, "time_us": 400.0, "efficiency": 1.0},
                       {"world_size": 4, "time_us": 500.0, "efficiency": 0.4}]}]}
        return j

    def test_strong_scaling_is_said_as_the_job_computed_it(self):
        (line,) = sentences([self.strong_job()], "Scaling across world sizes")
        self.assertIn("**allreduce, gloo**, strong scaling of 1 MiB in total, relative to 2 rank(s): "
                      "4 ranks 40 %", line)
        self.assertIn("(time(base) / time(N)) × (base / N)", line)
        self.assertNotIn("80 %", line)

    def test_msg_rate_weak_scaling_states_its_pairs_formula(self):
        # 2 -> 3 ranks printed 32.3 % next to "time(base) / time(N)", which would give 48.5 %.
        j = job([])
        j.summary = {"scaling": [{
            "run": "r", "backend": "ucx", "op": "msg_rate", "mode": "weak", "bytes": 64,
            "base_world_size": 2,
            "points": [{"world_size": 2, "efficiency": 1.0}, {"world_size": 3, "efficiency": 0.323}]}]}
        (line,) = sentences([j], "Scaling across world sizes")
        self.assertIn("(⌊N/2⌋ / ⌊base/2⌋) × (time(base) / time(N)) × (base / N)", line)
        self.assertNotIn("efficiency = time(base) / time(N)", line)

    def test_workload_scaling_names_its_variant_and_samples_per_second(self):
        j = job([])
        j.summary = {"scaling": [{
            "run": "dp", "backend": "gloo", "op": "data_parallel", "mode": "weak", "bytes": 600000,
            "base_world_size": 1, "workload": "custom ddp overlap on", "batch_size": 8,
            "throughput": "samples_per_s",
            "points": [{"world_size": 1, "efficiency": 1.0}, {"world_size": 2, "efficiency": 0.646}]}]}
        (line,) = sentences([j], "Scaling across world sizes")
        self.assertIn("**custom ddp overlap on, gloo**, weak scaling of batch 8 per rank", line)
        self.assertIn("2 ranks 64.6 %", line)
        self.assertIn("samples/s", line)

    def test_each_batch_size_of_a_workload_keeps_its_own_scaling(self):
        # The series were keyed without batch_size: of batches 8 and 32, one was dropped.
        def entry(batch, eff):
            return {"run": "dp", "backend": "gloo", "op": "data_parallel", "mode": "weak", "bytes": 600000,
                    "base_world_size": 1, "workload": "custom ddp overlap on", "batch_size": batch,
                    "throughput": "samples_per_s",
                    "points": [{"world_size": 1, "efficiency": 1.0}, {"world_size": 2, "efficiency": eff}]}
        j = job([])
        j.summary = {"scaling": [entry(8, 0.5), entry(32, 0.9)]}
        lines = sentences([j], "Scaling across world sizes")
        self.assertEqual(len(lines), 2, lines)
        self.assertIn("batch 8 per rank", " ".join(lines))
        self.assertIn("batch 32 per rank", " ".join(lines))

    def test_runs_of_one_op_and_backend_are_named(self):
        # msg_rate on ucx in two runs (window 64 and window 1) once gave two sentences that
        # differed only in their numbers: "**msg_rate, ucx**, weak scaling of 4 KiB per rank...".
        def entry(run, eff):
            return {"run": run, "backend": "ucx", "op": "msg_rate", "dtype": "f32", "redop": "",
                    "placement": "out_of_place", "memory": "host", "mode": "weak", "bytes": 4096,
                    "base_world_size": 2,
                    "points": [{"world_size": 2, "efficiency": 1.0},
                               {"world_size": 3, "efficiency": eff}]}
        j = job([])
        j.summary = {"scaling": [entry("w64", 0.651), entry("w1", 0.0875)]}
        lines = sentences([j], "Scaling across world sizes")
        self.assertEqual(len(lines), 2, lines)
        self.assertIn("**msg_rate, w64, ucx**, weak scaling of 4 KiB per rank, relative to 2 rank(s): "
                      "3 ranks 65.1 %", lines[0])
        self.assertIn("**msg_rate, w1, ucx**, weak scaling of 4 KiB per rank, relative to 2 rank(s): "
                      "3 ranks 8.75 %", lines[1])
        # One run per op and backend: nothing more to name (another op's run does not count).
        other = dict(entry("other", 0.9), op="pingpong")
        j.summary = {"scaling": [entry("w64", 0.651), other]}
        lines = sentences([j], "Scaling across world sizes")
        self.assertTrue(lines[0].startswith("**msg_rate, ucx**, weak"), lines)
        self.assertTrue(lines[1].startswith("**pingpong, ucx**, weak"), lines)
        # The same op and backend in two jobs, each its own run: the run and the job are named.
        a, b = job([]), job([])
        a.label, b.label = "job-a", "job-b"
        a.summary = {"scaling": [entry("w64", 0.651)]}
        b.summary = {"scaling": [entry("w1", 0.0875)]}
        lines = sentences([a, b], "Scaling across world sizes")
        self.assertIn("**msg_rate, w64, ucx** in job-a, weak", lines[0])
        self.assertIn("**msg_rate, w1, ucx** in job-b, weak", lines[1])

    def test_an_unfinished_job_says_it_has_no_scaling(self):
        j = job([rec(world=2), rec(world=4)])   # summary None: the job did not finish
        (line,) = sentences([j], "Scaling across world sizes")
        self.assertIn("known did not finish, so it has no scaling table", line)

    def test_overlap_on_and_off_are_two_series_not_two_repeats(self):
        def step(overlap, mean):
            return rec(op="data_parallel", bytes_=600000, mean=mean, world=2, redop="",
                       method="per_step", agg="slowest_per_step",
                       workload={"model": "custom", "sharding": "ddp", "overlap": overlap,
                                 "batch_size": 8})
        ss = series_of([job([step(True, 20000.0), step(False, 26000.0)])])
        self.assertEqual(sorted((s["variant"], s["overlap"]) for s in ss),
                         [("custom ddp, batch 8", "overlap off"), ("custom ddp, batch 8", "overlap on")])
        text = analysis.markdown([job([step(True, 20000.0), step(False, 26000.0)])])
        self.assertIn("## Backends and memory types compared", text)
        compared = text.split("## Backends and memory types compared")[1]
        self.assertIn("overlap on", compared)
        self.assertIn("overlap off", compared)
        self.assertNotIn("t-test on the 2 repeats", text)   # once: overlap on and off as repeats
        self.assertIn("method per_step (workload", text)


@unittest.skipUnless(have_matplotlib(), "matplotlib is not installed")
class PlotStyles(unittest.TestCase):
    def series12(self):
        cases = [rec(backend=b, world=w, dtype=d, bytes_=s, mean=s / 100 + w)
                 for b in ("gloo", "ucx") for w in (1, 2, 4) for d in ("f32", "f64")
                 for s in (1024, 65536)]
        return series_of([job(cases)])

    def test_colour_per_backend_marker_per_dtype_style_per_world(self):
        group = self.series12()
        self.assertEqual(len(group), 12)
        look = plots.styles(group)
        by = {}
        for s in group:
            c, m, ls = look[id(s)]
            by.setdefault(("colour", s["backend"]), set()).add(c)
            by.setdefault(("marker", s["dtype"]), set()).add(m)
            by.setdefault(("style", s["world_size"]), set()).add(str(ls))
        for k, v in by.items():
            self.assertEqual(len(v), 1, f"{k} drawn in several ways: {v}")
        self.assertNotEqual(by[("colour", "gloo")], by[("colour", "ucx")])
        self.assertNotEqual(by[("marker", "f32")], by[("marker", "f64")])
        self.assertEqual(len({next(iter(by[("style", w)])) for w in (1, 2, 4)}), 3)
        self.assertEqual(len({look[id(s)] for s in group}), 12, "two series look the same")

    def test_legend_is_outside_the_axes(self):
        plt = plots.require_matplotlib()
        fig = plots.op_figure(plt, "allreduce", self.series12())
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        legends = fig.legends
        self.assertEqual(len(legends), 1)
        lb = legends[0].get_window_extent(r)
        for ax in fig.axes:
            self.assertEqual(ax.get_legend(), None, "a legend inside an axes")
            ab = ax.get_window_extent(r)
            self.assertFalse(lb.overlaps(ab), f"legend {lb} overlaps axes {ab}")
        self.assertEqual(len(legends[0].get_texts()), 12)
        plt.close(fig)


def _drawn(plt, draw):
    """The figures `draw(written)` would save, kept open for measuring (plots._save patched)."""
    from unittest import mock
    figs = []
    with mock.patch.object(plots, "_save", lambda plt_, fig, *a, **k: figs.append(fig)):
        draw()
    return figs


def _extents(fig, texts):
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    return [t.get_window_extent(r) for t in texts if t.get_visible() and t.get_text()]


@unittest.skipUnless(have_matplotlib(), "matplotlib is not installed")
class PlotLayout(unittest.TestCase):
    """op-msg_rate.png's size labels ran together ("16 KiB" over "256 KiB"), workload-steps.png
    cut its long labels off on the left, and the time axis of the windowed patterns said "time
    per operation" for a time per message."""

    def op_group(self, op, sizes):
        cases = [rec(op=op, backend=b, world=2, bytes_=n, mean=n / 1000 + k, redop="", agg="rank0")
                 for k, b in enumerate(("gloo", "ucx"), 1) for n in sizes]
        return series_of([job(cases)])

    def test_size_ticks_are_few(self):
        self.assertEqual(plots.size_ticks([4096 << (2 * i) for i in range(7)]),
                         [4096, 65536, 1 << 20, 16 << 20])
        self.assertEqual(plots.size_ticks([1 << i for i in range(21)]),
                         [1, 32, 1024, 32768, 1 << 20])       # 1 B..1 MiB: every 32x
        self.assertEqual(plots.size_ticks([1000]), [1000.0])   # no power of 2 in the span
        self.assertEqual(plots.size_ticks([]), [])

    def test_size_tick_labels_never_overlap(self):
        plt = plots.require_matplotlib()
        for sizes in ([4096 << (2 * i) for i in range(7)],       # seed004: 4 KiB..16 MiB, x4
                      [1 << i for i in range(21)],               # p2p_patterns: 1 B..1 MiB, x2
                      [1 << i for i in range(0, 31, 2)]):        # 1 B..1 GiB
            fig = plots.op_figure(plt, "msg_rate", self.op_group("msg_rate", sizes))
            width = fig.get_figwidth() * fig.dpi
            for ax in fig.axes:
                boxes = _extents(fig, ax.get_xticklabels())
                self.assertGreaterEqual(len(boxes), 2, sizes)
                self.assertLessEqual(len(boxes), 5)
                for a, b in zip(boxes, boxes[1:]):
                    self.assertFalse(a.overlaps(b), f"{sizes[-1]} B: tick labels {a} and {b} overlap")
                self.assertTrue(all(b.x0 >= 0 and b.x1 <= width for b in boxes))
            plt.close(fig)

    def test_time_axis_says_what_one_sample_is(self):
        plt = plots.require_matplotlib()
        want = {"msg_rate": "time per message", "unidir_bw": "time per message",
                "bidir_bw": "time per message", "pingpong": "half a round trip",
                "allreduce": "time per operation", "sendrecv": "time per operation"}
        for op, words in want.items():
            fig = plots.op_figure(plt, op, self.op_group(op, [4096, 65536]))
            label = fig.axes[0].get_ylabel()
            self.assertIn(words, label, op)
            if op != "allreduce" and op != "sendrecv":
                self.assertNotIn("per operation", label, op)
            plt.close(fig)

    def test_long_workload_labels_stay_inside_the_figure(self):
        # seed004: two training runs, two models, two backends, 1-4 ranks, overlap on and off.
        def step(run, model, sharding, batch, backend, world, overlap):
            return rec(op="data_parallel", run=run, backend=backend, world=world, bytes_=600000,
                       mean=5000.0, redop="", method="per_step", agg="slowest_per_step",
                       workload={"model": model, "sharding": sharding, "overlap": overlap,
                                 "batch_size": batch, "compute_ms": {"p50": 4.0},
                                 "step_ms": {"p50": 5.0}, "exposed_comm_ms": 1.0,
                                 "samples_per_s": 100.0})
        cases = [step("train-resnet50-ddp", "resnet50", "ddp", 32, b, w, o)
                 for b in ("gloo", "ucx") for w in (1, 2, 4) for o in (True, False)]
        cases += [step("train-bert-fsdp", "bert_large", "fsdp", 8, "gloo", w, o)
                  for w in (2, 4) for o in (True, False)]
        j = job(cases)
        labels = [b[0] for b in plots_workload.workload_bars([j])]
        self.assertIn("train-resnet50-ddp, gloo, 1 rank, resnet50 ddp, batch 32, overlap on", labels)
        plt = plots.require_matplotlib()
        (fig,) = _drawn(plt, lambda: plots_workload.workload_figure(plt, [j], "/nonexistent", []))
        self.assertEqual(tuple(round(x * fig.dpi) for x in fig.get_size_inches()), (800, 500))
        ax = fig.axes[0]
        texts = [t for t in ax.get_yticklabels() if t.get_text()]
        # every label whole (wrapped at its commas at most), in the bars' order from the top
        self.assertEqual(sorted(t.get_text().replace("\n", ", ") for t in texts), sorted(labels))
        boxes = _extents(fig, texts)
        self.assertEqual(len(boxes), len(labels))
        for b in boxes:
            self.assertGreaterEqual(b.x0, 0, "a label cut off on the left")
            self.assertLessEqual(b.x1, ax.get_window_extent().x0)
        ordered = sorted(boxes, key=lambda b: b.y0)
        for a, b in zip(ordered, ordered[1:]):
            self.assertLessEqual(a.y1, b.y0 + 0.5, "labels drawn over each other")
        plt.close(fig)


class ScalingFigures(unittest.TestCase):
    """The scaling figures draw summary.json's `scaling` (the job's own numbers): strong series,
    whose per-rank size shrinks with N, were once left out, and overlap on/off looked alike."""

    def scaling_job(self):
        def entry(op, mode, bytes_, effs, **extra):
            e = {"run": "r", "backend": "ucx", "op": op, "dtype": "f32", "redop": "sum",
                 "placement": "in_place", "memory": "host", "mode": mode, "bytes": bytes_,
                 "base_world_size": 1,
                 "points": [{"world_size": w, "time_us": 100.0 * w, "throughput_gbps": 1.0 / w,
                             "efficiency": x, "samples_per_s": 50.0 * w * x}
                            for w, x in zip((1, 2, 4), effs)]}
            e.update(extra)
            return e
        dp = dict(throughput="samples_per_s", batch_size=8, redop="", placement="")
        j = job([])
        j.summary = {"scaling": [
            entry("allgather", "strong", 1 << 20, (1.0, 0.5, 0.25)),
            entry("allgather", "strong", 1 << 16, (1.0, 0.6, 0.3)),   # a smaller size: not drawn
            entry("data_parallel", "weak", 600000, (1.0, 0.9, 0.8), workload="custom ddp overlap on", **dp),
            entry("data_parallel", "weak", 600000, (1.0, 0.7, 0.6), workload="custom ddp overlap off", **dp)]}
        return j

    def test_strong_and_workload_series_are_lines(self):
        lines = plots.scaling_lines([self.scaling_job()])
        self.assertEqual(sorted(lines), ["allgather", "data_parallel"])
        (text, e), = lines["allgather"]
        self.assertEqual(e["bytes"], 1 << 20)
        self.assertEqual(text, "ucx, 1 MiB in total")
        texts = sorted(t for t, _ in lines["data_parallel"])
        self.assertEqual(texts, ["ucx, custom ddp overlap off, batch 8 per rank",
                                 "ucx, custom ddp overlap on, batch 8 per rank"])
        looks = plots.scaling_looks([e for _, e in lines["data_parallel"]])
        self.assertNotEqual(looks[0], looks[1])

    def test_unfinished_job_draws_no_scaling(self):
        j = self.scaling_job()
        j.summary = None
        self.assertEqual(plots.scaling_lines([j]), {})

    @unittest.skipUnless(have_matplotlib(), "matplotlib not installed (python3-matplotlib)")
    def test_figures_are_written_for_strong_and_workload_runs(self):
        import os
        import tempfile
        plt = plots.require_matplotlib()
        written = []
        with tempfile.TemporaryDirectory() as d:
            plots.scaling_figures(plt, [self.scaling_job()], d, written)
            self.assertEqual(sorted(f.name for f in written), ["scaling-allgather", "scaling-data_parallel"])
            for f in written:
                self.assertTrue(os.path.getsize(os.path.join(d, f.png())) > 0)


class WorkloadFigure(unittest.TestCase):
    """data_parallel records get a step figure, not an op figure against a size (their busbw is 0
    and their size axis meaningless)."""

    def steps(self):
        def step(world, overlap, compute, exposed, p50, sps):
            return rec(op="data_parallel", bytes_=600000, mean=p50 * 1e3, world=world, redop="",
                       method="per_step", agg="slowest_per_step",
                       workload={"model": "custom", "sharding": "ddp", "overlap": overlap,
                                 "batch_size": 8, "compute_ms": {"p50": compute},
                                 "step_ms": {"p50": p50}, "exposed_comm_ms": exposed,
                                 "samples_per_s": sps})
        return job([step(2, True, 4.0, 0.5, 4.6, 3478.0), step(2, False, 4.0, 2.0, 6.1, 2623.0),
                    rec(world=2)])

    def test_bars_are_the_records_steps(self):
        bars = plots_workload.workload_bars([self.steps()])
        self.assertEqual(bars, [("gloo, 2 ranks, overlap on", 4.0, 0.5, 4.6, 3478.0),
                                ("gloo, 2 ranks, overlap off", 4.0, 2.0, 6.1, 2623.0)])

    @unittest.skipUnless(have_matplotlib(), "matplotlib not installed (python3-matplotlib)")
    def test_workloads_have_a_step_figure_and_no_op_figure(self):
        import os
        import tempfile
        plt = plots.require_matplotlib()
        written = []
        with tempfile.TemporaryDirectory() as d:
            plots.op_figures(plt, [self.steps()], d, written)
            plots_workload.workload_figure(plt, [self.steps()], d, written)
            self.assertEqual([f.name for f in written], ["op-allreduce", "workload-steps"])


class MarkdownDocument(unittest.TestCase):
    def test_names_cannot_break_headings_or_inject_html(self):
        from commbench.document import Doc, to_markdown
        d = Doc()
        d.h(2, "run line1\nline2 <b>x</b>")
        d.items(["a\nb <img src=x>, p < 0.05"])
        d.table(["h"], [["x|y\n<i>"]])
        md = to_markdown(d).splitlines()
        self.assertEqual(md[0], "## run line1 line2 &lt;b>x&lt;/b>")
        self.assertIn("- a b &lt;img src=x>, p < 0.05", md)
        self.assertIn("| x\\|y &lt;i> |", md)

    def test_html_links_are_only_the_reports_own(self):
        from commbench.document import _inline
        self.assertEqual(_inline("[combined.csv](combined.csv)"), '<a href="combined.csv">combined.csv</a>')
        self.assertEqual(_inline("[doc](https://example.org/x)"), '<a href="https://example.org/x">doc</a>')
        for evil in ("[x](javascript:alert(1))", "[x](JaVaScRiPt:alert`1`)", "[x](data:text/html,hi)",
                     "[x](//evil.example/)"):
            self.assertNotIn("<a ", _inline(evil), evil)


if __name__ == "__main__":
    unittest.main()
