"""`commbench report` and `--junit` in folders others can reach (python/commbench/safe_files.py):
a link planted where a file is written is replaced, never written through; an output folder that
is a link, or another user's, is refused with exit 2 and a message naming -o; every file of a
normal report is a whole regular file, with no temporary file left behind."""
import csv
import os
import stat
import unittest

from commbench.safe_files import Folder, UnsafeOutput
from helpers import QUICKSTART, TempDirCase, commbench, have_matplotlib, records

OTHER = 65534  # nobody: the other user of a shared results area
VICTIM_TEXT = "a file the person running the report may write, and must not lose\n"
FILES = ("report.html", "report.md", "analysis.md", "combined.csv")


def is_root():
    return hasattr(os, "geteuid") and os.geteuid() == 0


def chown_tree(path, uid):
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            os.chown(os.path.join(root, n), uid, uid, follow_symlinks=False)
    os.chown(path, uid, uid)


class SafeReportTest(TempDirCase):
    def setUp(self):
        super().setUp()
        self.job = self.copy_fixture(QUICKSTART, "job")
        self.report_dir = os.path.join(self.job, "report")
        self.victim = os.path.join(self.tmp, "victim.conf")
        with open(self.victim, "w", encoding="utf-8") as f:
            f.write(VICTIM_TEXT)
        self.plots = () if have_matplotlib() else ("--no-plots",)

    def victim_intact(self):
        with open(self.victim, encoding="utf-8") as f:
            self.assertEqual(f.read(), VICTIM_TEXT, "the link's target was written through")

    def assert_regular(self, path, min_size=1):
        st = os.lstat(path)
        self.assertTrue(stat.S_ISREG(st.st_mode), f"{path} is not a regular file")
        self.assertGreaterEqual(st.st_size, min_size, path)

    def assert_complete(self, out):
        """Every file of the report a regular, whole file; no temporary file left."""
        for name in FILES:
            self.assert_regular(os.path.join(out, name))
        with open(os.path.join(out, "combined.csv"), encoding="utf-8") as f:
            self.assertEqual(len(list(csv.DictReader(f))), len(records(QUICKSTART)))
        with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
            html = f.read()
        self.assertTrue(html.rstrip().endswith("</html>"))
        leftovers = [n for n in os.listdir(out) if n.endswith(".tmp")]
        pngs = []
        if os.path.isdir(os.path.join(out, "plots")):
            plots = os.path.join(out, "plots")
            pngs = sorted(n for n in os.listdir(plots) if n.endswith(".png"))
            leftovers += [n for n in os.listdir(plots) if n.endswith(".tmp")]
            for n in os.listdir(plots):
                self.assert_regular(os.path.join(plots, n), 1000)
            for n in pngs:
                with open(os.path.join(plots, n), "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", n)
                with open(os.path.join(plots, n[:-4] + ".svg"), encoding="utf-8") as f:
                    self.assertTrue(f.read().rstrip().endswith("</svg>"), n)
        self.assertEqual(leftovers, [])
        self.assertEqual(html.count('src="data:image/png;base64,'), len(pngs))  # all embedded
        return pngs

    # (1) Links planted where the report's files go are replaced by the files.
    def test_planted_links_are_replaced_not_written_through(self):
        os.mkdir(self.report_dir)
        names = list(FILES)
        if have_matplotlib():
            os.mkdir(os.path.join(self.report_dir, "plots"))
            names += ["plots/op-allreduce.png", "plots/op-allreduce.svg"]
        for n in names:
            os.symlink(self.victim, os.path.join(self.report_dir, n))
        p = commbench("report", self.job, *self.plots, check=0)
        self.assertIn(self.report_dir, p.stdout)
        self.victim_intact()
        for n in names:
            self.assertFalse(os.path.islink(os.path.join(self.report_dir, n)), n)
        pngs = self.assert_complete(self.report_dir)
        if have_matplotlib():
            self.assertIn("op-allreduce.png", pngs)

    # (2) report/ itself a link to another folder: refused, that folder untouched.
    def test_report_folder_that_is_a_link_is_refused(self):
        target = os.path.join(self.tmp, "elsewhere")
        os.mkdir(target)
        os.symlink(target, self.report_dir)
        p = commbench("report", self.job, *self.plots, check=2)
        self.assertIn(f"commbench report: {self.report_dir} is a symbolic link", p.stderr)
        self.assertIn("-o DIR", p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(os.listdir(target), [])
        self.assertTrue(os.path.islink(self.report_dir))
        # -o names a folder of one's own instead: written there.
        out = os.path.join(self.tmp, "mine")
        commbench("report", self.job, "-o", out, *self.plots, check=0)
        self.assert_complete(out)

    # (3) The security probe's attack: another user's job with a report/ of theirs holding a link
    # to a file of ours. Refused, naming -o; nothing written there or through the link.
    @unittest.skipUnless(is_root(), "needs root, to give the folder to another user")
    def test_report_folder_of_another_user_is_refused(self):
        os.mkdir(self.report_dir)
        os.symlink(self.victim, os.path.join(self.report_dir, "report.md"))
        chown_tree(self.job, OTHER)
        p = commbench("report", self.job, *self.plots, check=2)
        self.assertIn(f"commbench report: {self.report_dir} belongs to another user (uid {OTHER})",
                      p.stderr)
        self.assertIn("write the report elsewhere with -o DIR", p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.victim_intact()
        self.assertEqual(os.listdir(self.report_dir), ["report.md"])
        # -o DIR elsewhere works on the same job.
        out = os.path.join(self.tmp, "mine")
        commbench("report", self.job, "-o", out, *self.plots, check=0)
        self.assert_complete(out)
        self.victim_intact()

    # (4) A job of another user without report/: we make report/, ours, and write it all.
    @unittest.skipUnless(is_root(), "needs root, to give the job to another user")
    def test_job_of_another_user_gets_a_report_folder_of_ours(self):
        chown_tree(self.job, OTHER)
        commbench("report", self.job, *self.plots, check=0)
        st = os.lstat(self.report_dir)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual(st.st_uid, os.geteuid())
        self.assert_complete(self.report_dir)

    # (4) A normal report writes every file whole, and a second run replaces them.
    def test_normal_report_writes_every_file(self):
        commbench("report", self.job, *self.plots, check=0)
        pngs = self.assert_complete(self.report_dir)
        if have_matplotlib():
            self.assertGreater(len(pngs), 0)
        before = sorted(os.listdir(self.report_dir))
        commbench("report", self.job, *self.plots, check=0)
        self.assertEqual(sorted(os.listdir(self.report_dir)), before)
        self.assert_complete(self.report_dir)

    # --junit FILE: a link at FILE is replaced; a folder of another user is refused.
    def test_junit_link_is_replaced(self):
        junit = os.path.join(self.tmp, "junit.xml")
        os.symlink(self.victim, junit)
        commbench("check", self.job, "--allow-none", "--junit", junit, check=0)
        self.victim_intact()
        self.assert_regular(junit)
        with open(junit, encoding="utf-8") as f:
            self.assertIn("<testsuites", f.read())

    @unittest.skipUnless(is_root(), "needs root, to give the folder to another user")
    def test_junit_in_a_folder_of_another_user_is_refused(self):
        shared = os.path.join(self.tmp, "shared")
        os.mkdir(shared)
        os.chown(shared, OTHER, OTHER)
        junit = os.path.join(shared, "junit.xml")
        p = commbench("check", self.job, "--allow-none", "--junit", junit, check=2)
        self.assertIn(f"commbench check: {shared} belongs to another user (uid {OTHER})", p.stderr)
        self.assertFalse(os.path.exists(junit))


class FolderTest(TempDirCase):
    """safe_files.Folder on its own."""

    def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(self):
        with Folder.open(self.tmp) as d:
            d.write("a.txt", "old")
            with self.assertRaises(RuntimeError):
                with d.create("a.txt") as f:
                    f.write("half")
                    raise RuntimeError("the writer failed")
        self.assertEqual(os.listdir(self.tmp), ["a.txt"])
        with open(os.path.join(self.tmp, "a.txt"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "old")

    def test_writes_go_to_the_folder_opened_not_to_its_path(self):
        first = os.path.join(self.tmp, "out")
        with Folder.open(first) as d:
            os.rename(first, os.path.join(self.tmp, "moved"))
            os.symlink(self.tmp, first)  # the path now leads elsewhere
            d.write("x.md", "x")
            d.sub("plots").write("p.png", b"png")
        self.assertTrue(os.path.isfile(os.path.join(self.tmp, "moved", "x.md")))
        self.assertTrue(os.path.isfile(os.path.join(self.tmp, "moved", "plots", "p.png")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "x.md")))

    def test_a_sub_folder_that_is_a_link_is_refused(self):
        os.mkdir(os.path.join(self.tmp, "elsewhere"))
        os.symlink(os.path.join(self.tmp, "elsewhere"), os.path.join(self.tmp, "plots"))
        with Folder.open(self.tmp) as d:
            with self.assertRaisesRegex(UnsafeOutput, "plots is a symbolic link"):
                d.sub("plots")
        self.assertEqual(os.listdir(os.path.join(self.tmp, "elsewhere")), [])

    def test_new_folders_and_files_honour_the_umask(self):
        old = os.umask(0o077)
        try:
            with Folder.open(os.path.join(self.tmp, "a", "b")) as d:
                d.write("f", "x")
        finally:
            os.umask(old)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.tmp, "a", "b")).st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.tmp, "a", "b", "f")).st_mode),
                         0o600)


if __name__ == "__main__":
    unittest.main()
