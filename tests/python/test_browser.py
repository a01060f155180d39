"""report.html in a real headless browser (Debian's chromium): it renders, every image loads,
and the console stays clean. Skipped, with the reason, where no chromium is installed."""
import os
import re
import shutil
import subprocess
import unittest

from helpers import ALL_PAIRS, QUICKSTART, TempDirCase, commbench, have_matplotlib, png_size

# Appended to a copy of the report (never to the report itself): counts images that did not load.
PROBE = ('<script>window.addEventListener("load",()=>{const imgs=[...document.images];'
         'const bad=imgs.filter(i=>!(i.complete&&i.naturalWidth>0)).length;'
         'document.body.setAttribute("data-probe",imgs.length+" images, "+bad+" broken");'
         '});</script>')


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserTest(TempDirCase):
    def setUp(self):
        super().setUp()
        self.chrome = browser()
        if not self.chrome:
            self.skipTest("no headless browser installed (Debian: apt-get install chromium)")
        if not have_matplotlib():
            self.skipTest("matplotlib not installed (python3-matplotlib)")

    def run_chrome(self, *args):
        cmd = [self.chrome, "--headless", "--no-sandbox", "--disable-gpu",
               f"--user-data-dir={os.path.join(self.tmp, 'profile')}",
               "--enable-logging=stderr", "--v=0", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=180)

    @staticmethod
    def console_lines(stderr):
        # Chromium logs page console messages as ":CONSOLE(line)]" or ":CONSOLE:line]" (versions differ)
        return [l for l in stderr.splitlines() if re.search(r":CONSOLE[:(]\d+\)?\]", l)]

    def probe(self, page):
        p = self.run_chrome("--virtual-time-budget=5000", "--dump-dom", f"file://{page}")
        m = re.search(r'data-probe="(\d+) images, (\d+) broken"', p.stdout)
        return p, m

    def test_console_check_sees_errors(self):
        # The check below could pass by never seeing anything: show it sees a console error.
        page = os.path.join(self.tmp, "bad.html")
        with open(page, "w") as f:
            f.write('<!DOCTYPE html><html><body><img src="missing.png">'
                    '<script>console.error("deliberate")</script>' + PROBE + "</body></html>")
        p, m = self.probe(page)
        self.assertTrue(any("deliberate" in l for l in self.console_lines(p.stderr)), p.stderr)
        self.assertIsNotNone(m, p.stdout[-2000:])
        self.assertEqual(m.group(2), "1")

    def check_report(self, fixture):
        out = os.path.join(self.tmp, "out")
        commbench("report", fixture, "-o", out, check=0)
        with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
            text = f.read()
        n_images = text.count("<img ")
        self.assertGreater(n_images, 0)
        page = os.path.join(out, "probe.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(text.replace("</body>", PROBE + "</body>"))
        p, m = self.probe(page)
        self.assertIsNotNone(m, f"the page did not finish loading:\n{p.stderr[-2000:]}")
        self.assertEqual(int(m.group(1)), n_images)
        self.assertEqual(m.group(2), "0", "images that did not load")
        self.assertEqual(self.console_lines(p.stderr), [])
        # The real report (no probe) renders to a screenshot of the window's size.
        shot = os.path.join(self.tmp, "shot.png")
        p = self.run_chrome(f"--screenshot={shot}", "--window-size=1200,1600",
                            f"file://{os.path.join(out, 'report.html')}")
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertEqual(png_size(shot), (1200, 1600))
        self.assertEqual(self.console_lines(p.stderr), [])

    def test_quickstart_report_in_chromium(self):
        self.check_report(QUICKSTART)

    def test_all_pairs_report_in_chromium(self):
        self.check_report(ALL_PAIRS)


if __name__ == "__main__":
    unittest.main()
