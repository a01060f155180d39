"""`commbench report` and `--junit` in folders others can reach (python/commbench/safe_files.py):
a link planted where a file is written is replaced, never written through; an output folder that
is a link, or another user's, is refused with exit 2 and a message naming -o; every file of a
normal report is a whole regular file, with no temporary file left behind."""
import csv
import os
import stat
import unittest

from commbench import safe_files
from commbench.safe_files import Folder, UnsafeOutput
from helpers import QUICKSTART, TempDirCase, commbench, have_matplotlib, png_size, records

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


    # Parent components: --junit through another user's link to a folder of ours is refused,
    # nothing written at the link's target (the probe's att/lnk/pwn.xml).
    @unittest.skipUnless(is_root(), "needs root, to give the link to another user")
    def test_junit_through_another_users_link_is_refused(self):
        victim_dir = os.path.join(self.tmp, "victim")
        os.mkdir(victim_dir)
        att = os.path.join(self.tmp, "att")
        os.mkdir(att)
        os.chown(att, OTHER, OTHER)
        lnk = os.path.join(att, "lnk")
        os.symlink(victim_dir, lnk)
        os.lchown(lnk, OTHER, OTHER)
        p = commbench("check", self.job, "--allow-none", "--junit",
                      os.path.join(lnk, "pwn.xml"), check=2)
        self.assertIn(f"goes through a symbolic link owned by uid {OTHER}", p.stderr)
        self.assertIn("give a path without it", p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(os.listdir(victim_dir), [])

    # report -o outl/sub with outl another user's link: refused, nothing made at its target.
    @unittest.skipUnless(is_root(), "needs root, to give the link to another user")
    def test_report_through_another_users_link_is_refused(self):
        victim_dir = os.path.join(self.tmp, "victim")
        os.mkdir(victim_dir)
        outl = os.path.join(self.tmp, "outl")
        os.symlink(victim_dir, outl)
        os.lchown(outl, OTHER, OTHER)
        p = commbench("report", self.job, "-o", os.path.join(outl, "sub"), *self.plots, check=2)
        self.assertIn(f"goes through a symbolic link owned by uid {OTHER}", p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(os.listdir(victim_dir), [])

    # A link of root's (or our own) above the output folder is followed: report -o link/sub.
    def test_report_through_our_own_link_works(self):
        mine = os.path.join(self.tmp, "mine")
        os.mkdir(mine)
        link = os.path.join(self.tmp, "link")
        os.symlink(mine, link)
        self.assertIn(os.lstat(link).st_uid, (os.geteuid(), 0))
        commbench("report", self.job, "-o", os.path.join(link, "sub"), *self.plots, check=0)
        self.assert_complete(os.path.join(mine, "sub"))
        self.assertTrue(os.path.islink(link))

    # An output folder writable by all without the sticky bit (even root's) is refused.
    def test_world_writable_output_folder_without_sticky_bit_is_refused(self):
        out = os.path.join(self.tmp, "open")
        os.mkdir(out)
        os.chmod(out, 0o777)
        if is_root():
            os.chown(out, 0, 0)
        p = commbench("report", self.job, "-o", out, *self.plots, check=2)
        self.assertIn(f"{out} is writable by every user and has no sticky bit", p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual(os.listdir(out), [])
        # With the sticky bit (like /tmp) it is accepted; group-writable is accepted.
        os.chmod(out, 0o1777)
        commbench("report", self.job, "-o", out, *self.plots, check=0)
        self.assert_complete(out)
        out2 = os.path.join(self.tmp, "group")
        os.mkdir(out2)
        os.chmod(out2, 0o775)
        commbench("report", self.job, "-o", out2, *self.plots, check=0)
        self.assert_complete(out2)

    # A ./matplotlibrc where commbench runs does not change the figures.
    @unittest.skipUnless(have_matplotlib(), "needs matplotlib")
    def test_matplotlibrc_in_the_current_folder_is_ignored(self):
        import subprocess
        from helpers import EXE
        if not EXE:
            raise unittest.SkipTest("COMMBENCH_EXE is not set")
        plain = os.path.join(self.tmp, "plain")
        commbench("report", self.job, "-o", plain, check=0)
        cwd = os.path.join(self.tmp, "cwd")
        os.mkdir(cwd)
        with open(os.path.join(cwd, "matplotlibrc"), "w", encoding="utf-8") as f:
            f.write("savefig.dpi: 5\nfigure.dpi: 5\nsavefig.bbox: tight\nfigure.figsize: 2, 2\n")
        rc = os.path.join(self.tmp, "rc")
        p = subprocess.run([EXE, "report", self.job, "-o", rc], cwd=cwd, capture_output=True,
                           text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        pngs = sorted(n for n in os.listdir(os.path.join(plain, "plots")) if n.endswith(".png"))
        self.assertGreater(len(pngs), 0)
        self.assertEqual(pngs, sorted(n for n in os.listdir(os.path.join(rc, "plots"))
                                      if n.endswith(".png")))
        for n in pngs:
            self.assertEqual(png_size(os.path.join(rc, "plots", n)), (800, 500), n)
            self.assertEqual(png_size(os.path.join(rc, "plots", n)),
                             png_size(os.path.join(plain, "plots", n)), n)


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


    # A component swapped for a link after resolve(): open_resolved() refuses, writes nothing.
    def test_a_component_swapped_for_a_link_after_resolving_is_refused(self):
        chain = os.path.join(self.tmp, "a", "b", "c")
        os.makedirs(chain)
        elsewhere = os.path.join(self.tmp, "elsewhere")
        os.makedirs(os.path.join(elsewhere, "b", "c"))
        parts = safe_files.resolve(chain)
        self.assertEqual(safe_files._join(parts), os.path.realpath(chain))
        a = os.path.join(self.tmp, "a")
        os.rename(a, os.path.join(self.tmp, "a.moved"))
        os.symlink(elsewhere, a)  # our own link, even: swapped in after resolution
        with self.assertRaisesRegex(UnsafeOutput, "became a symbolic link"):
            safe_files.open_resolved(parts, create=True)
        # The last component swapped the same way.
        os.remove(a)
        os.rename(os.path.join(self.tmp, "a.moved"), a)
        parts = safe_files.resolve(chain)
        os.rename(chain, chain + ".moved")
        os.symlink(os.path.join(elsewhere, "b", "c"), chain)
        with self.assertRaises(UnsafeOutput):
            safe_files.open_resolved(parts, create=True)
        self.assertEqual(os.listdir(os.path.join(elsewhere, "b", "c")), [])

    # Missing folders are made one by one below the resolved path, never through a link.
    def test_resolve_follows_our_links_and_keeps_missing_components(self):
        real = os.path.join(self.tmp, "real")
        os.mkdir(real)
        os.symlink("real", os.path.join(self.tmp, "rel"))  # a relative link
        parts = safe_files.resolve(os.path.join(self.tmp, "rel", "x", "y"))
        self.assertEqual(safe_files._join(parts),
                         os.path.join(os.path.realpath(real), "x", "y"))
        with Folder.open(os.path.join(self.tmp, "rel", "x", "y")) as d:
            d.write("f", "x")
        self.assertTrue(os.path.isfile(os.path.join(real, "x", "y", "f")))

    @unittest.skipUnless(is_root(), "needs root, to give the link to another user")
    def test_folder_open_through_another_users_link_is_refused(self):
        target = os.path.join(self.tmp, "target")
        os.mkdir(target)
        link = os.path.join(self.tmp, "link")
        os.symlink(target, link)
        os.lchown(link, OTHER, OTHER)
        with self.assertRaisesRegex(UnsafeOutput, f"symbolic link owned by uid {OTHER}"):
            Folder.open(os.path.join(link, "a", "b"))
        self.assertEqual(os.listdir(target), [])


if __name__ == "__main__":
    unittest.main()


class PassThroughFolderTest(TempDirCase):
    @unittest.skipUnless(is_root() and os.path.exists("/usr/bin/setpriv"), "needs root to act as another user")
    def test_folders_one_may_pass_through_but_not_list_are_no_obstacle(self):
        # A review: every folder on the way was opened for reading, so a path through a cluster's
        # drwx--x--x project folder failed with "Permission denied" where open() had worked.
        # Folders passed through need only x; the output folder itself is the user's.
        import subprocess
        import sys
        outer = os.path.join(self.tmp, "projects")
        os.mkdir(outer)
        os.chmod(self.tmp, 0o755)
        out = os.path.join(outer, "mine")
        os.mkdir(out)
        os.chown(out, OTHER, OTHER)
        os.chmod(outer, 0o711)
        code = ("import sys; sys.path.insert(0, sys.argv[1]); from commbench import safe_files\n"
                "f = safe_files.Folder.open(sys.argv[2]); f.write('x.md', 'ok\\n')\n"
                "with safe_files.create_file(sys.argv[3]) as g: g.write('ok\\n')\n")
        p = subprocess.run(["/usr/bin/setpriv", f"--reuid={OTHER}", f"--regid={OTHER}", "--clear-groups",
                            "/usr/bin/python3", "-c", code, os.path.join(safe_files.__file__, "..", ".."),
                            os.path.join(out, "report"), os.path.join(out, "junit.xml")],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "report", "x.md"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "ok\n")
        self.assertTrue(os.path.isfile(os.path.join(out, "junit.xml")))
