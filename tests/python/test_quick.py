"""`commbench quick`: nccl-tests' flags instead of a file, the same results folder, errors that
name the flag, --save writing an experiment `commbench run` accepts."""
import json
import os
import unittest

from helpers import TempDirCase, commbench, records


class QuickTest(TempDirCase):
    def job(self, out):
        (d,) = os.listdir(out)
        return os.path.join(out, d)

    def test_flags_become_the_experiment_and_results_folder(self):
        out = os.path.join(self.tmp, "results")
        save = os.path.join(self.tmp, "saved.toml")
        p = commbench("quick", "all_reduce,allgather", "--backend", "gloo", "--ranks", "2",
                      "-b", "1K", "-e", "16K", "-f", "4", "-n", "3", "-w", "1", "-d", "float",
                      "-o", "max", "-c", "1", "-O", out, "--save", save, check=0)
        self.assertIn("# Exit code 0", p.stdout)
        job = self.job(out)
        recs = records(job)
        self.assertEqual({r["op"] for r in recs}, {"allreduce", "allgather"})
        self.assertEqual(sorted({r["bytes"] for r in recs}), [1024, 4096, 16384])
        self.assertEqual({r["iterations"] for r in recs}, {3})
        self.assertEqual({r["warmup"] for r in recs}, {1})
        self.assertEqual({r["dtype"] for r in recs}, {"f32"})
        self.assertEqual({r["redop"] for r in recs if r["op"] == "allreduce"}, {"max"})
        self.assertTrue(all(r["wrong"] == 0 for r in recs))
        # --save: an experiment file that validates and describes the same cases
        v = commbench("validate", save, check=0)
        self.assertIn("1 execution(s), 6 case record(s)", v.stdout)

    def test_step_bytes_make_an_arithmetic_list(self):
        save = os.path.join(self.tmp, "saved.toml")
        commbench("quick", "allreduce", "-b", "1K", "-e", "4K", "-i", "1K", "-n", "2", "-w", "0",
                  "-O", os.path.join(self.tmp, "results"), "--save", save, check=0)
        recs = records(self.job(os.path.join(self.tmp, "results")))
        self.assertEqual(sorted(r["bytes"] for r in recs), [1024, 2048, 3072, 4096])

    def test_errors_name_the_flag(self):
        p = commbench("quick", "allreduse", "-n", "0", "-d", "floatx", "-O", self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("commbench quick: OPS allreduse: error: unknown op 'allreduse'; did you "
                      "mean 'allreduce'?", p.stderr)
        self.assertIn("commbench quick: -n 0: error: 'iterations' must be at least 1", p.stderr)
        self.assertIn("commbench quick: -d floatx: error: unknown dtype", p.stderr)
        self.assertEqual(os.listdir(self.tmp), [])       # nothing ran, nothing written
        p = commbench("quick", "allreduce", "-n", "1\nname = \"x\"")
        self.assertEqual(p.returncode, 2)                # a value cannot rewrite the experiment
        self.assertIn("-n 1", p.stderr)

    def test_nccl_tests_flags_without_a_counterpart_say_what_to_do(self):
        p = commbench("quick", "allreduce", "-g", "8")
        self.assertEqual(p.returncode, 2)
        self.assertIn("nccl-tests' -g (GPUs per thread) has no counterpart", p.stderr)
        self.assertIn("--ranks N", p.stderr)

    def test_save_never_replaces_a_file_it_did_not_write(self):
        mine = os.path.join(self.tmp, "notes.txt")
        with open(mine, "w") as f:
            f.write("precious\n")
        p = commbench("quick", "allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "--ranks", "1",
                      "-O", os.path.join(self.tmp, "r"), "--save", mine)
        self.assertEqual(p.returncode, 2)
        self.assertIn("the file exists and commbench quick did not write it", p.stderr)
        with open(mine) as f:
            self.assertEqual(f.read(), "precious\n")
        p = commbench("quick", "allreduce", "--save", self.tmp)
        self.assertEqual(p.returncode, 2)
        self.assertIn("a folder; name a file", p.stderr)

    def test_a_step_the_file_cannot_express_is_an_error_naming_it(self):
        # These once reached the parser as a range with a 'step' key it does not know, and it
        # named that key instead of the flag.
        for args, message in ((("-i", "-8"), "-i -8: error: expected a positive step in bytes"),
                              (("-i", "0K"), "-i 0K: error: expected a positive step in bytes"),
                              (("-e", "1G", "-i", "8"), "-b 8 -e 1G -i 8: error: more than 4096 sizes")):
            p = commbench("quick", "allreduce", "-b", "8", *args, "-O", os.path.join(self.tmp, "r"))
            self.assertEqual(p.returncode, 2, args)
            self.assertIn("commbench quick: " + message, p.stderr)
            self.assertNotIn("step' in the 'sizes' range", p.stderr)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_average_and_graph_flags_choose_aggregation_and_method(self):
        save = os.path.join(self.tmp, "saved.toml")
        commbench("quick", "allreduce", "-a", "2", "-G", "1", "-n", "2", "-w", "0", "--memory", "cuda",
                  "-O", os.path.join(self.tmp, "results"), "--save", save, check=None)
        with open(save) as f:
            text = f.read()
        self.assertIn('rank_aggregation = "min"', text)   # nccl-tests -a 2
        self.assertIn('method = "graph"', text)           # nccl-tests -G N
        # Graphs capture device work: on host memory every case would be unsupported, and the
        # job would pass having measured nothing. Refused, naming the flag.
        p = commbench("quick", "allreduce", "-G", "1", "-O", os.path.join(self.tmp, "host"))
        self.assertEqual(p.returncode, 2)
        self.assertIn('commbench quick: -G 1: error: method = "graph" captures the timed iterations', p.stderr)
        p = commbench("quick", "allreduce", "-a", "7")
        self.assertEqual(p.returncode, 2)
        self.assertIn("commbench quick: -a 7: error: expected 0 (rank 0's time), 1 (the ranks' average), 2 (minimum) "
                      "or 3 (maximum)", p.stderr)
        p = commbench("quick", "allreduce", "-a", "mean")  # a name: the parser lists the names
        self.assertEqual(p.returncode, 2)
        self.assertIn("commbench quick: -a mean: error: unknown rank aggregation 'mean'", p.stderr)


    def test_sizes_take_decimal_binary_units(self):
        save = os.path.join(self.tmp, "decimal.toml")
        p = commbench("quick", "allreduce", "-b", "1.5K", "-e", "3K", "-n", "1", "-w", "0", "--ranks", "1",
                      "-O", os.path.join(self.tmp, "d"), "--save", save, check=0)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(save) as f:
            self.assertIn("1.5KiB", f.read())

    def test_check_flag_takes_one_zero_true_or_false_and_nothing_else(self):
        save = os.path.join(self.tmp, "saved.toml")
        # nccl-tests' -c N is a count of check iterations: any N > 0 checks (twice a case, as
        # commbench always does: docs/metrics.md; the note once said "once").
        for value, line in (("0", "check = false"), ("false", "check = false"), ("1", "check = true"),
                            ("true", "check = true"), ("2", "check = true"), ("00", "check = false")):
            p = commbench("quick", "allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "--ranks", "1",
                          "-c", value, "-O", os.path.join(self.tmp, "r" + value), "--save", save, check=0)
            with open(save) as f:
                self.assertIn(line, f.read().splitlines(), value)
            if value == "2":
                self.assertIn("-c 2: commbench checks each case twice, on its first op and on one op "
                              "after its timed loop", p.stderr)
        for value in ("no", "off", "-1", "1.5"):  # the first two once turned checking on
            p = commbench("quick", "allreduce", "-c", value, "-O", os.path.join(self.tmp, "bad"))
            self.assertEqual(p.returncode, 2, value)
            self.assertIn(f"commbench quick: -c {value}: error: expected a number of check iterations", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "bad")))
    def test_flag_values_cannot_rewrite_the_file_and_an_invalid_one_saves_nothing(self):
        save = os.path.join(self.tmp, "saved.toml")
        # -f was pasted into the file as it came: this once ran with checking off.
        p = commbench("quick", "allreduce", "-b", "1K", "-e", "2K", "-f", '2 }\ncheck = false\nenv = { X = "1"',
                      "-O", os.path.join(self.tmp, "r"), "--save", save)
        self.assertEqual(p.returncode, 2)
        self.assertIn("-f 2 }\\ncheck = false\\nenv = { X = \"1\": error: expected a whole factor of 2 or more",
                      p.stderr)
        self.assertFalse(os.path.exists(save), "an experiment that does not validate was saved")
        p = commbench("quick", "allreduce", "-n", "0", "--save", save)
        self.assertEqual(p.returncode, 2)
        self.assertFalse(os.path.exists(save))
        for value in ("1 2", "abc"):  # once the TOML parser's own words, not the key's
            p = commbench("quick", "allreduce", "-n", value, "-O", os.path.join(self.tmp, "g"))
            self.assertEqual(p.returncode, 2, value)
            self.assertIn(f"commbench quick: -n {value}: error: expected an integer for 'iterations'", p.stderr)
        for value in ("-1", "abc", "0.5"):  # each once meant method = "graph"
            p = commbench("quick", "allreduce", "-G", value, "-O", os.path.join(self.tmp, "g"))
            self.assertEqual(p.returncode, 2, value)
            self.assertIn(f"commbench quick: -G {value}: error: expected a number of iterations", p.stderr)
        for args in (("-G", "1", "--method", "per_iteration"), ("--method", "batch", "--timing", "per_iteration")):
            p = commbench("quick", "allreduce", *args, "-O", os.path.join(self.tmp, "c"))
            self.assertEqual(p.returncode, 2, args)   # the last flag once won silently
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "g")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "c")))
        # A bad --ranks entry is named: once "expected an integer for 'world_sizes[0]'" for any.
        for value, named in (("2,abc", "'abc'"), ("2,3,x", "'x'"), ("2,,4", "an empty entry"), ("-2", "'-2'")):
            p = commbench("quick", "allreduce", "--ranks", value, "-O", os.path.join(self.tmp, "r"))
            self.assertEqual(p.returncode, 2, value)
            self.assertIn(f"commbench quick: --ranks {value}: error: {named} is not a number of ranks", p.stderr)
            self.assertNotIn("world_sizes[0]", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "r")))

    def test_timeout_takes_fractional_seconds(self):
        save = os.path.join(self.tmp, "saved.toml")
        commbench("quick", "allreduce", "-b", "8", "-e", "8", "-n", "1", "-w", "0", "--ranks", "1", "-T", "1.5",
                  "-O", os.path.join(self.tmp, "r"), "--save", save, check=0)
        with open(save) as f:
            self.assertIn('timeout = "1.5s"', f.read().splitlines())


if __name__ == "__main__":
    unittest.main()
