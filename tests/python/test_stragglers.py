"""Stragglers: the analysis' sentence and the report's heat map, from records built here: each
repeat its own execution, and only the ranks that take part in a case compared (a point-to-point
pattern's idle ranks report 0 and must be neither the fastest nor lower the median)."""
import math
import unittest

from commbench import plots, plots_ranks
from helpers import have_matplotlib
from test_analysis import job, rec, sentences


class Stragglers(unittest.TestCase):
    def test_each_repeat_is_its_own_execution(self):
        # Rank 1 slow in repeat 0's only case, rank 3 in repeat 1's: two executions, each said
        # once (it once read "in 1 of 2 cases", two executions pooled).
        slow1 = rec(rank_mean_us=[10.0, 20.0, 10.0, 10.0], repeat=0)
        slow3 = rec(rank_mean_us=[10.0, 10.0, 10.0, 20.0], repeat=1)
        s = sentences([job([slow1, slow3])], "Stragglers")
        self.assertEqual(len(s), 2, s)
        # Repeats counted from 1, as the console counts them ("repeat 1/2").
        self.assertIn("r gloo 4 ranks, repeat 1 (known): rank 1 is the slowest rank", s[0])
        self.assertIn("in 1 of 1 cases", s[0])
        self.assertIn("repeat 2 (known): rank 3", s[1])

    @unittest.skipUnless(have_matplotlib(), "matplotlib is not installed")
    def test_each_repeat_gets_its_own_straggler_figure(self):
        # Pooled, the two repeats' one case shared a column: one figure showed only the last.
        import tempfile
        slow1 = rec(rank_mean_us=[10.0, 20.0, 10.0, 10.0], repeat=0)
        slow3 = rec(rank_mean_us=[10.0, 10.0, 10.0, 20.0], repeat=1)
        with tempfile.TemporaryDirectory() as out:
            figs = plots.draw_all([job([slow1, slow3])], out)
            titles = [f.title for f in figs if f.kind == "stragglers"]
        self.assertEqual(len(titles), 2, titles)
        self.assertTrue(any("repeat 1" in t for t in titles) and any("repeat 2" in t for t in titles), titles)

    # Ranks that take no part in a point-to-point pattern report a rank_mean_us of 0 (and so does
    # pingpong's second peer: docs/metrics.md): they are no data, not the fastest ranks.
    @staticmethod
    def p2p(op, means, peers=None, **extra):
        if peers is not None:
            extra["peers"] = peers
        return rec(op=op, redop="", agg="rank0", world=len(means), rank_mean_us=means, **extra)

    def test_pingpong_with_one_reporting_peer_is_not_judged(self):
        # The probe's 2-rank pingpong: rank 0 was "2× the median" of itself and idle rank 1.
        for peers in ([0, 1], None):
            s = sentences([job([self.p2p("pingpong", [3541.40, 0.0], peers)])], "Stragglers")
            self.assertEqual(s, [], peers)
            self.assertEqual(plots_ranks.straggler_rows([self.p2p("pingpong", [3541.40, 0.0], peers)], 2),
                             [], peers)

    def test_idle_ranks_are_not_the_fastest(self):
        # bidir_bw between ranks 0 and 1 of 3, equally fast: no straggler, and the heat map has
        # no value for idle rank 2 (it showed 0.00, the fastest rank).
        s = sentences([job([self.p2p("bidir_bw", [10.0, 10.0, 0.0], [0, 1])])], "Stragglers")
        self.assertEqual(s, [])
        (label_, row), = plots_ranks.straggler_rows([self.p2p("bidir_bw", [10.0, 10.0, 0.0], [0, 1])], 3)
        self.assertEqual(row[:2], [1.0, 1.0])
        self.assertTrue(math.isnan(row[2]), row)

    def test_median_is_over_participating_ranks(self):
        # msg_rate on 4 ranks, rank 3 idle: the median of 10, 11 and 12 is 11, and rank 2 is
        # 1.09×, no straggler. With rank 3's 0 the median was 10.5 and rank 2 "1.14×".
        means = [10.0, 11.0, 12.0, 0.0]
        self.assertEqual(sentences([job([self.p2p("msg_rate", means)])], "Stragglers"), [])
        (_, row), = plots_ranks.straggler_rows([self.p2p("msg_rate", means)], 4)
        self.assertEqual(row[:3], [10 / 11, 1.0, 12 / 11])
        self.assertTrue(math.isnan(row[3]), row)
        # 10, 10, 12: median 10, rank 2 1.2× — a straggler among the ranks that took part.
        s = sentences([job([self.p2p("sendrecv", [10.0, 10.0, 12.0, 0.0])])], "Stragglers")
        self.assertEqual(len(s), 1, s)
        self.assertIn("rank 2 is the slowest rank", s[0])
        self.assertIn("median participating rank, in 1 of 1 cases (up to 1.2× the median", s[0])

    def test_two_peers_of_many_are_compared_with_each_other_only(self):
        # unidir_bw between ranks 1 and 3 of 4: rank 3 is 1.5× rank 1, 1.2× their median. The
        # idle ranks' zeros made the median 5 and rank 3 "4×" it.
        s = sentences([job([self.p2p("unidir_bw", [0.0, 10.0, 0.0, 15.0], [1, 3])])], "Stragglers")
        self.assertEqual(len(s), 1, s)
        self.assertIn("rank 3 is the slowest rank", s[0])
        self.assertIn("(up to 1.2× the median; rank_mean_us)", s[0])

    def test_ranks_outside_peers_are_left_out_even_when_not_zero(self):
        # A two-peer pattern's other ranks are no part of it, whatever they report.
        case = self.p2p("unidir_bw", [10.0, 10.0, 30.0], [0, 1])
        self.assertEqual(sentences([job([case])], "Stragglers"), [])
        (_, row), = plots_ranks.straggler_rows([case], 3)
        self.assertTrue(math.isnan(row[2]), row)

    def test_cases_not_judged_are_not_counted(self):
        # One judged allreduce with rank 1 slow is "1 of 1 cases", not "1 of 2": the 4-rank
        # pingpong, one peer reporting (its median was 0), is no case that could show a straggler.
        cases = [rec(rank_mean_us=[10.0, 20.0, 10.0, 10.0]),
                 self.p2p("pingpong", [3541.40, 0.0, 0.0, 0.0], [0, 1])]
        s = sentences([job(cases)], "Stragglers")
        self.assertEqual(len(s), 1, s)
        self.assertIn("rank 1 is the slowest rank", s[0])
        self.assertIn("in 1 of 1 cases", s[0])

    @unittest.skipUnless(have_matplotlib(), "matplotlib is not installed")
    def test_heat_map_leaves_idle_ranks_blank(self):
        # The figure draws a number in every cell with data and none in a rank that took no part
        # (it once wrote 0.00 there, coloured as the fastest rank).
        import tempfile
        plt = plots.require_matplotlib()
        drawn = []
        real_text = plt.Axes.text

        def spy(ax, x, y, s, *a, **k):
            drawn.append((x, y, s))
            return real_text(ax, x, y, s, *a, **k)

        case = self.p2p("bidir_bw", [10.0, 12.0, 0.0], [0, 1])
        plt.Axes.text = spy
        try:
            with tempfile.TemporaryDirectory() as out:
                written = []
                plots_ranks.straggler_figures(plt, [job([case])], out, written)
        finally:
            plt.Axes.text = real_text
        self.assertEqual(len([f for f in written if f.kind == "stragglers"]), 1)
        # median of 10 and 12 is 11
        self.assertEqual(sorted((x, y, t) for x, y, t in drawn),
                         [(0, 0, f"{10 / 11:.2f}"), (0, 1, f"{12 / 11:.2f}")])

    @unittest.skipUnless(have_matplotlib(), "matplotlib is not installed")
    def test_no_heat_map_for_a_pingpong_only_execution(self):
        import tempfile
        with tempfile.TemporaryDirectory() as out:
            figs = plots.draw_all([job([self.p2p("pingpong", [3541.40, 0.0], [0, 1])])], out)
        self.assertEqual([f for f in figs if f.kind == "stragglers"], [])


if __name__ == "__main__":
    unittest.main()
