"""Shared by the Python tests: where the fixtures and the real binary are, running commands."""
import json
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(SOURCE, "tests", "data", "results")
QUICKSTART = os.path.join(DATA, "quickstart")      # configs/quickstart.toml, Gloo, 4 ranks
ALL_PAIRS = os.path.join(DATA, "all_pairs")        # UCX all_pairs, 4 ranks, 1 KiB and 64 KiB
GLOO_VS_UCX = os.path.join(DATA, "gloo_vs_ucx")    # Gloo and UCX, 1/2/4 ranks
EXE = os.environ.get("COMMBENCH_EXE", "")          # set by ctest: the binary users run


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def commbench(*args, env=None, check=None):
    """Runs the real `commbench` binary; returns the CompletedProcess (text)."""
    if not EXE:
        raise unittest.SkipTest("COMMBENCH_EXE is not set (run these tests through ctest)")
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run([EXE, *args], capture_output=True, text=True, env=e, timeout=600)
    if check is not None and p.returncode != check:
        raise AssertionError(f"commbench {' '.join(args)}: exit {p.returncode}, expected {check}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def records(path, kind="case"):
    with open(os.path.join(path, "results.jsonl")) as f:
        return [r for r in map(json.loads, f) if r.get("type") == kind]


def png_size(path):
    """(width, height) from the PNG header; AssertionError when it is not a PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise AssertionError(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


def png_size_bytes(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("not a PNG")
    return struct.unpack(">II", data[16:24])


class TempDirCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="commbench-pytest-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def copy_fixture(self, src, name=None):
        dst = os.path.join(self.tmp, name or os.path.basename(src))
        shutil.copytree(src, dst)
        return dst


def fill_disk_mid_run(path, measured, written):
    """Makes the healthy job folder at `path` look as `commbench run` leaves a job whose disk
    filled up mid-run (docs/output.md, "Faults and exit codes"): it measured its first `measured`
    cases, then the execution it was in was `interrupted` and no later one started; results.jsonl
    kept only what came before its first line that did not fit (its first `written` case lines,
    no job_end line), while summary.json, written into the space reserved for it, holds every
    measured case and every execution, with exit_code 3."""
    jl = os.path.join(path, "results.jsonl")
    with open(jl) as f:
        lines = [json.loads(l) for l in f]
    kept, cases = [], 0
    for line in lines:
        if line["type"] == "case":
            if cases == written:
                break
            cases += 1
        kept.append(line)
    with open(jl, "w") as f:
        f.writelines(json.dumps(l) + "\n" for l in kept)
    sp = os.path.join(path, "summary.json")
    with open(sp) as f:
        summary = json.load(f)
    summary["results"] = summary["results"][:measured]
    before = 0
    for e in summary["executions"]:
        done = e["cases_done"]
        if before + done > measured:
            e.update(status="interrupted", cases_done=max(0, measured - before),
                     failure_kind="interrupted",
                     reason="the job stopped because results could not be written: cannot write "
                            f"'{jl}': No space left on device (test)" if before <= measured else
                            "not started: the job stopped because results could not be written")
        before += done
    summary["exit_code"] = 3
    with open(sp, "w") as f:
        json.dump(summary, f)
    return path
