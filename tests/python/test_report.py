"""`commbench report` (the real binary) on the quickstart results and the saved all_pairs
result: every file written, plots of the documented size, report.html's references resolve,
analysis.md's numbers are the records' numbers."""
import base64
import csv
import html.parser
import json
import os
import re
import unittest
import xml.etree.ElementTree as ET

from commbench import analysis as analysis_module
from commbench import fmt, report
from commbench.document import to_html, to_markdown
from commbench.load import Job, read_jobs
from helpers import (ALL_PAIRS, GLOO_VS_UCX, QUICKSTART, TempDirCase, commbench, fill_disk_mid_run,
                     have_matplotlib, png_size, png_size_bytes, records)

PNG_SIZE = (800, 500)  # docs/reports.md: every figure is 800 x 500 pixels


class Refs(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.hrefs, self.srcs, self.tags = set(), [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "href" in a:
            self.hrefs.append(a["href"])
        for k in ("src",):
            if k in a:
                self.srcs.append(a[k])
        if tag == "link" and "href" in a:
            self.srcs.append(a["href"])


class ReportTest(TempDirCase):
    def report(self, *dirs, extra=()):
        out = os.path.join(self.tmp, "out")
        commbench("report", *dirs, "-o", out, *extra, check=0)
        return out

    def check_common(self, out, n_cases):
        for f in ("report.html", "report.md", "analysis.md", "combined.csv"):
            self.assertGreater(os.path.getsize(os.path.join(out, f)), 0, f)
        with open(os.path.join(out, "combined.csv")) as f:
            self.assertEqual(len(list(csv.DictReader(f))), n_cases)

    def check_plots(self, out, kinds):
        plots = os.path.join(out, "plots")
        pngs = sorted(p for p in os.listdir(plots) if p.endswith(".png"))
        for k in kinds:
            self.assertTrue(any(p.startswith(k + "-") for p in pngs), f"no {k} plot in {pngs}")
        for p in pngs:
            path = os.path.join(plots, p)
            self.assertGreater(os.path.getsize(path), 5000, p)   # a drawn figure, not a blank
            self.assertEqual(png_size(path), PNG_SIZE, p)
            svg = path[:-4] + ".svg"
            root = ET.parse(svg).getroot()                     # well-formed XML
            self.assertTrue(root.tag.endswith("svg"), svg)
        return pngs

    def check_html(self, out, n_figures):
        with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
            text = f.read()
        refs = Refs()
        refs.feed(text)
        self.assertNotIn("script", refs.tags)                  # nothing to run, nothing fetched
        self.assertEqual(len(refs.srcs), n_figures)
        for src in refs.srcs:                                  # every image embedded and a PNG
            self.assertTrue(src.startswith("data:image/png;base64,"), src[:40])
            self.assertEqual(png_size_bytes(base64.b64decode(src.split(",", 1)[1])), PNG_SIZE)
        for href in refs.hrefs:
            if href.startswith("#"):
                self.assertIn(href[1:], refs.ids, href)
            else:
                self.assertNotIn("://", href)
                self.assertTrue(os.path.exists(os.path.join(out, href)), href)
        with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
            md = f.read()
        for link in re.findall(r"\]\(([^)#]+)\)", md):
            self.assertTrue(os.path.exists(os.path.join(out, link)), link)

    @unittest.skipUnless(have_matplotlib(), "matplotlib not installed (python3-matplotlib)")
    def test_quickstart_report(self):
        out = self.report(QUICKSTART)
        recs = records(QUICKSTART)
        self.check_common(out, len(recs))
        pngs = self.check_plots(out, ["op", "stragglers"])
        # one time/busbw figure per op the quickstart ran
        self.assertEqual(sorted(p for p in pngs if p.startswith("op-")),
                         sorted(f"op-{op}.png" for op in {r["op"] for r in recs}))
        self.check_html(out, len(pngs))
        with open(os.path.join(out, "analysis.md"), encoding="utf-8") as f:
            analysis = f.read()
        # Every op: the peak busbw and its size, and the latency floor, are the records' own.
        for op in {r["op"] for r in recs}:
            ok = [r for r in recs if r["op"] == op and r["status"] == "ok"]
            line = next(l for l in analysis.splitlines() if l.startswith(f"- **{op},"))
            best = max(ok, key=lambda r: r["busbw_gbps"])
            self.assertIn(f"peak busbw {fmt.num(best['busbw_gbps'])} GB/s at "
                          f"{fmt.size(best['bytes'])}", line)
            small = [r for r in ok if r["bytes"] <= 64 * 1024]
            fastest = min(small, key=lambda r: r["time_us"]["mean"])
            self.assertIn(f"latency floor {fmt.num(fastest['time_us']['mean'])} µs", line)
            self.assertIn(f"at {fmt.size(fastest['bytes'])})", line)
        checked = [r for r in recs if r.get("wrong", -1) >= 0]
        self.assertIn(f"All {len(checked)} checked cases returned correct results", analysis)
        noisy = [r for r in recs if r["status"] == "ok" and r["time_us"]["cv"] > 0.05]
        if noisy:
            self.assertIn(f"{len(noisy)} of {len(recs)} measured cases have a CV above", analysis)

    @unittest.skipUnless(have_matplotlib(), "matplotlib not installed (python3-matplotlib)")
    def test_all_pairs_report(self):
        out = self.report(ALL_PAIRS)
        recs = records(ALL_PAIRS)
        self.check_common(out, len(recs))
        pngs = self.check_plots(out, ["pairs"])
        sizes = sorted({r["bytes"] for r in recs})
        self.assertEqual(len([p for p in pngs if p.startswith("pairs-")]), len(sizes))
        self.check_html(out, len(pngs))
        with open(os.path.join(out, "analysis.md"), encoding="utf-8") as f:
            analysis = f.read()
        for size in sizes:
            at = [r for r in recs if r["bytes"] == size and r["status"] == "ok"]
            hi = max(at, key=lambda r: r["algbw_gbps"])
            lo = min(at, key=lambda r: r["algbw_gbps"])
            line = next(l for l in analysis.splitlines() if f", {fmt.size(size)}: fastest" in l)
            self.assertIn(f"fastest pair {hi['src']}→{hi['dst']} {fmt.num(hi['algbw_gbps'])} GB/s",
                          line)
            self.assertIn(f"slowest {lo['src']}→{lo['dst']} {fmt.num(lo['algbw_gbps'])} GB/s", line)
        with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn("src \\ dst", md)   # the matrix tables

    @unittest.skipUnless(have_matplotlib(), "matplotlib not installed (python3-matplotlib)")
    def test_several_folders_make_one_report(self):
        out = self.report(QUICKSTART, GLOO_VS_UCX)
        n = len(records(QUICKSTART)) + len(records(GLOO_VS_UCX))
        self.check_common(out, n)
        pngs = self.check_plots(out, ["op", "scaling", "stragglers"])
        self.check_html(out, len(pngs))
        with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
            md = f.read()
        # the side-by-side table of Gloo and UCX at the same op and world size
        self.assertRegex(md, r"allreduce f32 sum out_of_place, 4 ranks: .*gloo.* vs .*ucx")
        with open(os.path.join(out, "analysis.md"), encoding="utf-8") as f:
            analysis = f.read()
        self.assertIn("## Scaling across world sizes", analysis)
        # As the job computed it (summary.json `scaling`), at the largest size every world ran.
        with open(os.path.join(GLOO_VS_UCX, "summary.json"), encoding="utf-8") as f:
            entries = json.load(f)["scaling"]
        e = max((x for x in entries if x["backend"] == "ucx" and x["op"] == "allreduce"),
                key=lambda x: x["bytes"])
        self.assertIn(f"**allreduce, ucx, sum** in {os.path.basename(GLOO_VS_UCX)}, weak scaling of "
                      f"{fmt.size(e['bytes'])} per rank, relative to 1 rank(s): 2 ranks "
                      f"{fmt.pct(e['points'][1]['efficiency'])}", analysis)

    def test_memory_records_have_their_table(self):
        # Memory records once reached only the console and the JSON.
        d = self.copy_fixture(QUICKSTART, "mem-job")
        mem = {"type": "memory", "schema_version": 2, "run": "mem", "run_index": 1, "backend": "gloo",
               "world_size": 2, "workload": "memory", "model": "custom", "batch_size": 8,
               "dtype": "bf16", "optimizer": "momentum", "sharding": "fsdp", "memory": "host",
               "status": "ok",
               "computed": {"model_state_bytes": 16 << 20, "activation_bytes": 3 << 19,
                            "total_bytes": (16 << 20) + (3 << 19)},
               "measured": {"host": {"buffers_bytes": 17 << 20, "workload_bytes": 19 << 20,
                                     "backend_bytes": 1 << 19}, "device": None}}
        with open(os.path.join(d, "results.jsonl"), "a") as f:
            f.write(json.dumps(mem) + "\n")
        out = self.report(d, extra=("--no-plots",))
        with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn("## Memory", md)
        self.assertIn("| mem | gloo | 2 | memory | custom | fsdp | bf16 | momentum | host | 8 | 16 | 1.5 | "
                      "17.5 | 17 | 19 | 0.5 | host RSS |", md)

    def test_memory_types_are_compared(self):
        # Seed 001/002: Gloo on host memory against NCCL on GPU memory, from two jobs. No GPU
        # here: a copy of the quickstart relabelled nccl/cuda stands in for the second job (the
        # test is about the report's structure, not about GPU numbers).
        gpu = self.copy_fixture(QUICKSTART, "gpu-job")
        jl = os.path.join(gpu, "results.jsonl")
        with open(jl) as f:
            lines = [json.loads(l) for l in f]
        for l in lines:
            if l.get("type") == "case":
                l["backend"], l["memory"] = "nccl", "cuda"
                l["time_us"]["mean"] /= 2
        with open(jl, "w") as f:
            f.writelines(json.dumps(l) + "\n" for l in lines)
        out = self.report(QUICKSTART, gpu, extra=("--no-plots",))
        with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertRegex(md, r"### allreduce f32 sum out_of_place, 4 ranks: .*gloo, host vs "
                             r".*nccl, cuda")
        self.assertIn("| 0.5× ! |", md)   # nccl's time over gloo's, every size; CV 17-44 %: marked
        with open(os.path.join(out, "analysis.md"), encoding="utf-8") as f:
            analysis = f.read()
        self.assertIn("(different memory: host vs cuda)", analysis)
        with open(os.path.join(out, "combined.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual({(r["backend"], r["memory"]) for r in rows},
                         {("gloo", "host"), ("nccl", "cuda")})

    def test_without_matplotlib_a_clear_message(self):
        # A matplotlib that cannot be imported, ahead of the real one on PYTHONPATH.
        fake = os.path.join(self.tmp, "fake")
        os.makedirs(os.path.join(fake, "matplotlib"))
        with open(os.path.join(fake, "matplotlib", "__init__.py"), "w") as f:
            f.write("raise ImportError('No module named matplotlib (test)')\n")
        p = commbench("report", QUICKSTART, "-o", os.path.join(self.tmp, "out"),
                      env={"PYTHONPATH": fake})
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("python3-matplotlib", p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        # --no-plots still gives the tables and the analysis
        out = os.path.join(self.tmp, "out2")
        commbench("report", QUICKSTART, "-o", out, "--no-plots", env={"PYTHONPATH": fake},
                  check=0)
        self.check_common(out, len(records(QUICKSTART)))
        self.check_html(out, 0)

    def read(self, out, name):
        with open(os.path.join(out, name), encoding="utf-8") as f:
            return f.read()

    def test_a_killed_job_is_said_to_be_unfinished(self):
        # kill -9 after 3 of 9 cases: no job_end, no summary.json. analysis.md said "From 3 case
        # records" and "All 3 checked cases returned correct results" and nothing else.
        d = self.copy_fixture(QUICKSTART, "killed")
        os.remove(os.path.join(d, "summary.json"))
        with open(os.path.join(d, "results.jsonl")) as f:
            lines = f.readlines()
        with open(os.path.join(d, "results.jsonl"), "w") as f:
            f.writelines(lines[:4])   # the job line and 3 cases
        out = os.path.join(self.tmp, "out")
        p = commbench("report", d, "-o", out, "--no-plots", check=0)
        warning = ("killed did not finish: results.jsonl has no job_end line and there is no "
                   "summary.json")
        self.assertIn(warning, p.stderr)
        self.assertIn("rerun the experiment (`commbench run configs/quickstart.toml`)", p.stderr)
        analysis = self.read(out, "analysis.md")
        self.assertIn(f"**⚠ {warning}", analysis)
        self.assertIn("only the 3 case records measured before it stopped", analysis)
        self.assertLess(analysis.index(warning), analysis.index("From 3 case records"))
        self.assertIn(f"**⚠ {warning}", self.read(out, "report.md"))
        self.assertIn(f"# ⚠ {warning}", analysis_module.console(read_jobs([d])))  # after-run
        # A job that finished says nothing of the kind.
        out = os.path.join(self.tmp, "healthy")
        p = commbench("report", QUICKSTART, "-o", out, "--no-plots", check=0)
        self.assertNotIn("did not", p.stderr)
        self.assertNotIn("did not", self.read(out, "analysis.md"))

    def test_a_full_disk_job_reports_every_measured_case_and_says_so(self):
        # Disk full after 40 of 72 cases, 30 of them on results.jsonl: the report once said
        # "From 30 case records" (0: "No case was measured") with no word of the failure.
        d = fill_disk_mid_run(self.copy_fixture(GLOO_VS_UCX, "full"), 40, 30)
        out = os.path.join(self.tmp, "out")
        p = commbench("report", d, "-o", out, "--no-plots", check=0)
        warning = ("full did not complete normally (exit code 3: results could not be written, a "
                   "full disk or an I/O error): results.jsonl holds only 30 of the job's 40 case "
                   "records and no job_end line; the other 10 case records and 4 execution "
                   "outcomes were read from summary.json")
        self.assertIn(warning, p.stderr)
        analysis = self.read(out, "analysis.md")
        self.assertIn(f"**⚠ {warning}", analysis)
        self.assertLess(analysis.index(warning), analysis.index("From 40 case records"))
        self.assertIn("allreduce-scaling ucx 1 rank in full: interrupted", analysis)
        with open(os.path.join(out, "combined.csv")) as f:
            self.assertEqual(len(list(csv.DictReader(f))), 40)
        self.assertIn(f"**⚠ {warning}", self.read(out, "report.md"))

    def test_not_a_results_folder(self):
        p = commbench("report", self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("not a results folder", p.stderr)
        self.assertNotIn("Traceback", p.stderr)


class BackendVersions(TempDirCase):
    """report.md said "backend ucx | 0.1.0": the plugin's version, read as UCX's. It names the
    library's version the plugin reported (metadata `<library>_version`) and labels the plugin's."""

    def test_the_librarys_version_and_the_plugins(self):
        out = os.path.join(self.tmp, "out")
        commbench("report", GLOO_VS_UCX, "-o", out, "--no-plots", check=0)
        with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
            md = f.read()
        with open(os.path.join(GLOO_VS_UCX, "summary.json"), encoding="utf-8") as f:
            backends = json.load(f)["job"]["backends"]
        for name, key in (("gloo", "gloo_version"), ("ucx", "ucx_version")):
            b = backends[name]
            lib = b["metadata"]["ranks"]["0"]["backend"][key]
            self.assertIn(f"| backend {name} | {name} {lib} (plugin {b['version']}) — "
                          f"{b['description']} |", md)
            self.assertNotIn(f"| backend {name} | {b['version']} —", md)

    @staticmethod
    def markdown(backends, executions=()):
        j = Job("/nonexistent", "known")
        j.summary = {"job": {"backends": backends}}
        j.executions = list(executions)
        return to_markdown(report.build([j], [], [])[1])

    def test_without_a_reported_version_and_from_the_executions(self):
        nccl = {"name": "nccl", "version": "0.1.0", "description": "NVIDIA NCCL", "metadata": {}}
        # The backend never started (no GPU): no library version to show, and none made up.
        md = self.markdown({"nccl": nccl})
        self.assertIn("| backend nccl | library version not reported (plugin 0.1.0) — NVIDIA NCCL |",
                      md)
        # Reported by an execution only; ranks that disagree are both named.
        ranks = {"0": {"backend": {"nccl_version": "2.21.5", "library": "libnccl.so.2"}},
                 "1": {"backend": {"nccl_version": "2.23.4"}}}
        md = self.markdown({"nccl": nccl}, [{"run": "r", "backend": "nccl", "world_size": 2,
                                             "status": "ok", "metadata": {"ranks": ranks}}])
        self.assertIn("| backend nccl | nccl 2.21.5 / 2.23.4 (differs across ranks) (plugin 0.1.0) "
                      "— NVIDIA NCCL |", md)
        # No plugin version either: nothing dangling.
        md = self.markdown({"x": {"metadata": {"ranks": {"0": {"backend": {"x_version": "3"}}}}}})
        self.assertIn("| backend x | x 3 |", md)


class NothingMeasuredReport(TempDirCase):
    """A job whose every case was unsupported (or every backend unavailable) exits 1, "nothing
    was measured"; its report printed a Results header with nothing under it and "Only one
    configuration per op and world size", and analysis.md only "No case was measured"."""

    def test_a_job_of_only_unsupported_cases(self):
        exp = os.path.join(self.tmp, "unsup.toml")
        with open(exp, "w") as f:
            f.write('name = "unsup"\n[[run]]\nname = "f8"\nbackend = "gloo"\nworld_size = 2\n'
                    'ops = ["allreduce"]\ndtype = "f8e4m3"\nsizes = [1024, 4096]\n'
                    'iterations = 3\nwarmup = 1\n')
        results = os.path.join(self.tmp, "results")
        p = commbench("run", exp, "-o", results, "--quiet")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        (name,) = os.listdir(results)
        out = os.path.join(self.tmp, "out")
        commbench("report", os.path.join(results, name), "-o", out, "--no-plots", check=0)
        with open(os.path.join(out, "analysis.md"), encoding="utf-8") as f:
            analysis = f.read()
        self.assertIn("## ⚠ Nothing measured", analysis)
        self.assertIn(f"- Nothing was measured in {name} (its one run, f8): its 2 cases on gloo were "
                      "unsupported (", analysis)
        with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
            md = f.read()
        comparisons = md.split("## Comparisons")[1].split("## Results")[0]
        results_part = md.split("## Results")[1].split("## Jobs and metadata")[0]
        self.assertIn("Nothing was measured, so there is nothing to compare.", comparisons)
        self.assertNotIn("Only one configuration", comparisons)
        self.assertIn("Nothing was measured: no result to show.", results_part)
        self.assertNotIn("|", results_part)       # no table, no header without rows
        self.assertNotIn("###", results_part)


class RepeatsAreSaid(unittest.TestCase):
    """With `repeats`, the Results and Comparisons tables show each case's median repeat by mean
    time (docs/metrics.md); report.md and report.html once did so without saying it."""

    @staticmethod
    def case(backend, mean, repeat, op="allreduce", **extra):
        r = {"type": "case", "run": "r", "backend": backend, "world_size": 2, "op": op,
             "bytes": 4096, "dtype": "f32", "redop": "sum", "placement": "out_of_place",
             "memory": "host", "root": 0, "src": -1, "dst": -1, "status": "ok", "method": "batch",
             "rank_aggregation": "avg", "repeat": repeat,
             "time_us": {"n": 20, "mean": mean, "stddev": 0.1, "cv": 0.1 / mean, "p50": mean},
             "busbw_gbps": 4096 / mean / 1e3, "algbw_gbps": 4096 / mean / 1e3, "wrong": 0}
        r.update(extra)
        return r

    def build(self, cases):
        j = Job("/nonexistent", "known")
        j.cases = cases
        title, doc = report.build([j], [], [])
        return to_markdown(doc), to_html(doc, title, "/nonexistent")

    def test_median_repeat_and_repeat_count_are_said(self):
        # 3 repeats each; gloo's median repeat is 11 µs, ucx's 6 µs.
        cases = [self.case(b, m, i) for b, means in (("gloo", (10.0, 13.0, 11.0)),
                                                    ("ucx", (5.0, 7.0, 6.0)))
                 for i, m in enumerate(means)]
        md, page = self.build(cases)
        comparisons = md.split("## Comparisons")[1].split("## Results")[0]
        results = md.split("## Results")[1].split("## Jobs and metadata")[0]
        self.assertIn("With 3 repeats per case: each time and busbw below is the case's median "
                      "repeat by mean time", comparisons)
        self.assertIn(f"| 4 KiB | 11 | {fmt.num(4096 / 11.0 / 1e3)} | 6 | {fmt.num(4096 / 6.0 / 1e3)} "
                      f"| {fmt.ratio(6.0 / 11.0)} |", comparisons)
        self.assertIn("With 3 repeats per case: each row below is the case's median repeat by mean "
                      "time", results)
        self.assertIn("| 4 KiB | 11 |", results)
        self.assertIn("<p>With 3 repeats per case: each row below is the case&#x27;s median repeat "
                      "by mean time", page)
        self.assertIn("<p>With 3 repeats per case: each time and busbw below is", page)
        # all_pairs cells are median repeats too: said in Results (no comparison table for them).
        ap = [self.case("ucx", m, i, op="all_pairs", redop="", src=s, dst=1 - s)
              for s in (0, 1) for i, m in enumerate((10.0, 12.0))]
        md, _ = self.build(ap)
        self.assertIn("With 2 repeats per case: each all_pairs cell below is the case's median "
                      "repeat by mean time", md.split("## Results")[1])
        # Nothing compared, nothing to say there.
        self.assertNotIn("repeats per case", md.split("## Results")[0].split("## Comparisons")[1])
        md, _ = self.build(cases + ap)   # 3 repeats of allreduce, 2 of all_pairs
        self.assertIn("With 2 to 3 repeats per case: each row below, and each all_pairs cell, is the "
                      "case's median repeat by mean time", md.split("## Results")[1])
        self.assertIn("With 3 repeats per case: each time and busbw below",
                      md.split("## Results")[0].split("## Comparisons")[1])

    def test_a_ratio_within_the_repeats_spread_is_marked(self):
        # A probe: report printed 2.06x between two identical jobs (median repeats 289 and 596 us)
        # where compare, on the fastest repeats, said unchanged. Overlapping repeats are marked ~.
        spread = [self.case(b, m, i) for b, means in (("gloo", (184.0, 289.0, 300.0)),
                                                     ("ucx", (181.0, 596.0, 700.0)))
                  for i, m in enumerate(means)]
        md, _ = self.build(spread)
        self.assertIn(f"| {fmt.ratio(596.0 / 289.0)} ~ |", md)
        self.assertIn("`~`: the two configurations' repeats overlap", md)
        apart = [self.case(b, m, i) for b, means in (("gloo", (10.0, 13.0, 11.0)), ("ucx", (5.0, 7.0, 6.0)))
                 for i, m in enumerate(means)]
        md, _ = self.build(apart)
        self.assertIn(f"| {fmt.ratio(6.0 / 11.0)} |", md)  # 5..7 against 10..13: no mark
        noisy = [self.case("gloo", 10.0, 0), self.case("ucx", 5.0, 0, time_us={"n": 20, "mean": 5.0, "cv": 0.3})]
        md, _ = self.build(noisy)
        self.assertIn(f"| {fmt.ratio(0.5)} ! |", md)

    def test_a_windowed_pattern_has_its_message_rate(self):
        # report.md's tables had no messages/s column where summary.md has one.
        md, _ = self.build([self.case("ucx", 5.0, 0, op="msg_rate", redop="", msg_rate_mps=1.234)])
        results = md.split("## Results")[1]
        self.assertIn("| CV | #wrong | messages/s |", results)
        self.assertIn("| 1.23 M |", results)
        md, _ = self.build([self.case("ucx", 5.0, 0)])
        self.assertNotIn("messages/s", md.split("## Results")[1])

    def test_workload_steps_are_compared_by_their_p50_without_busbw(self):
        # A probe: report.md compared data_parallel steps by their mean with busbw 0, where the
        # console and summary.md show the step p50 and '-'; and put fsdp steps in ddp's table.
        def step(backend, mean, p50, sharding="ddp", nbytes=4194304):
            return self.case(backend, mean, 0, op="data_parallel", redop="", bytes=nbytes,
                             time_us={"n": 5, "mean": mean, "stddev": 1.0, "cv": 0.01, "p50": p50},
                             busbw_gbps=0.0, algbw_gbps=0.0,
                             workload={"model": "custom", "sharding": sharding, "batch_size": 8,
                                       "overlap": False})
        md, _ = self.build([step("gloo", 10997.0, 11523.8), step("ucx", 4548.0, 4576.2),
                            step("gloo", 9000.0, 9100.0, "fsdp", 4194320)])
        comparisons = md.split("## Comparisons")[1].split("## Results")[0]
        self.assertIn(f"| 4 MiB | 11524 | - | 4576 | - | {fmt.ratio(4576.2 / 11523.8)} |", comparisons)
        self.assertEqual(comparisons.count("### "), 1, comparisons)   # fsdp has no partner
        self.assertIn("custom ddp, batch 8", comparisons)
        results = md.split("## Results")[1]
        self.assertNotIn("| 0 | 0 |", results)
        # The analysis' ratio is of the same numbers.
        from commbench import crossovers
        from commbench.series import series_of
        j = Job("/nonexistent", "known")
        j.cases = [step("gloo", 10997.0, 11523.8), step("ucx", 4548.0, 4576.2)]
        text = " ".join(crossovers.comparisons(series_of([j])))
        self.assertIn(f"by {fmt.ratio(11523.8 / 4576.2)} (time ratio)", text)
        # A review: judged by the means, printed by the p50s, a long tail made "gloo is faster
        # than ucx by 0.98x". Where the two disagree, no claim.
        j.cases = [step("gloo", 10000.0, 10000.0), step("ucx", 11000.0, 9800.0)]
        for c in j.cases:
            c["time_us"].update(n=50, stddev=100.0)
        text = " ".join(crossovers.comparisons(series_of([j])))
        self.assertNotIn("is faster", text)
        j.cases = [dict(c, repeat=i) for c in (step("gloo", 10000.0, 10000.0), step("ucx", 11000.0, 9800.0))
                   for i in range(3)]
        text = " ".join(crossovers.comparisons(series_of([j])))
        self.assertNotIn("gloo is faster", text)

    def test_no_such_sentence_without_repeats(self):
        md, page = self.build([self.case("gloo", 10.0, 0), self.case("ucx", 5.0, 0)])
        self.assertIn("### allreduce f32 sum out_of_place, 2 ranks: gloo vs ucx", md)
        self.assertNotIn("median repeat", md)
        self.assertNotIn("median repeat", page)


if __name__ == "__main__":
    unittest.main()
