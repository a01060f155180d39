"""`commbench compare` as a CI gate, measured (issue 27 §1): on this machine, pairs of identical
runs give no regression at the default settings (false-alarm rate <= 5 %), and a real 1.3x
slowdown is flagged in >= 95 % of pairs.

The runs are real jobs of the `sleep` test plugin (tests/plugins/sleep: an allreduce of a known
duration, no communication, so the "backend" is exactly as fast in every run and only the
machine's noise differs: a preempted rank, a late wake-up; on a loaded machine about one repeat
in ten is 15-130 % slow) with `repeats = 3` and every other setting at its default (method batch,
5 warm-up and 20 timed iterations). Baseline jobs sleep 1000 µs per op; slow jobs 1300 µs. 40
baseline jobs give 20 disjoint identical pairs; 20 slow jobs pair with the first 20 baseline
jobs. The rates are printed (docs/performance.md quotes them)."""
import os
import subprocess
import time
import unittest

from helpers import EXE, TempDirCase

PLUGIN_DIR = os.environ.get("COMMBENCH_TEST_PLUGIN_DIR", "")
PAIRS = int(os.environ.get("COMMBENCH_GATE_PAIRS", "20"))

EXPERIMENT = """
name = "{name}"
output_dir = "{out}"
plugin_path = ["{plugins}"]
[[run]]
name = "{name}"
backends = ["sleep"]
ops = ["allreduce"]
sizes = ["4KiB", "64KiB"]
world_size = 2
repeats = 3
check = false
options.sleep = {{ sleep_us = {us} }}
"""


def run_job(tmp, name, us, index):
    out = os.path.join(tmp, f"{name}-{index}")
    exp = os.path.join(tmp, f"{name}.toml")
    with open(exp, "w") as f:
        f.write(EXPERIMENT.format(name=name, out=out, plugins=PLUGIN_DIR, us=us))
    p = subprocess.run([EXE, "run", exp, "--quiet"], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError(f"run {name} #{index}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return out


def gate(base, new):
    # The slowdown is the plugin's `sleep_us` option, which the records carry: the two sides are
    # two configurations compared on purpose, as a code change would be (same options).
    p = subprocess.run([EXE, "compare", base, new, "--ignore", "options"], capture_output=True,
                       text=True, timeout=120)
    if p.returncode not in (0, 1):
        raise AssertionError(f"compare: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.returncode == 1, p.stdout


@unittest.skipUnless(EXE and PLUGIN_DIR, "run through ctest (COMMBENCH_EXE, COMMBENCH_TEST_PLUGIN_DIR)")
class CompareGate(TempDirCase):
    def test_false_alarm_and_detection_rates(self):
        t0 = time.monotonic()
        base = [run_job(self.tmp, "base", 1000, i) for i in range(2 * PAIRS)]
        slow = [run_job(self.tmp, "slow", 1300, i) for i in range(PAIRS)]
        false_alarms, misses, example = 0, 0, ""
        for i in range(PAIRS):
            flagged, text = gate(base[2 * i], base[2 * i + 1])
            if flagged:
                false_alarms += 1
                example = example or text
            flagged, text = gate(base[i], slow[i])
            if not flagged:
                misses += 1
                example = example or text
            self.assertIn("judged by run-to-run noise", text, text)
        print(f"\ncompare gate on this machine ({os.cpu_count()} CPUs, load average "
              f"{os.getloadavg()[0]:.1f}): {false_alarms} false alarm(s) in {PAIRS} identical pairs "
              f"({100 * false_alarms / PAIRS:.0f} %), 1.3x slowdown flagged in "
              f"{PAIRS - misses} of {PAIRS} pairs ({100 * (PAIRS - misses) / PAIRS:.0f} %); "
              f"{3 * PAIRS} jobs in {time.monotonic() - t0:.0f} s", flush=True)
        self.assertLessEqual(false_alarms, PAIRS // 20, "false-alarm rate above 5 %:\n" + example)
        self.assertLessEqual(misses, PAIRS // 20, "detection rate below 95 %:\n" + example)


if __name__ == "__main__":
    unittest.main()
