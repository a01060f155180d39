"""Entry point of `commbench report|compare|check|after-run` (the C++ CLI runs
`python3 -m commbench ...` with this package on PYTHONPATH; it works on its own too).

Exit codes: 0 fine; 1 a regression (compare) or a missed expectation (check, after-run);
2 bad input or a missing dependency (the message says which and what to do), and a --junit file
that could not be written, whatever the verdict (printed before it: _write_junit).
"""
import argparse
import math
import os
import signal
import sys

from . import analysis, compare, expect, junit
from .load import ResultsError, read_jobs
from .plots import MissingMatplotlib

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2


class Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 2 like the C++ commands, with a hint
        sys.stderr.write(f"{self.prog}: {message}\nTry '{self.prog} --help'.\n")
        sys.exit(EXIT_INVALID)


def parser_report():
    p = Parser(prog="commbench report", description=(
        "Writes plots (PNG and SVG), report.html (self-contained), report.md, analysis.md and "
        "combined.csv for one or more results folders. Several folders give one combined "
        "report."))
    p.add_argument("dirs", nargs="+", metavar="DIR", help="job folder, or a folder of job folders")
    p.add_argument("-o", "--output", metavar="OUT", help="where to write (default: DIR/report "
                   "for one job, ./report-<time> for several)")
    p.add_argument("--no-plots", action="store_true", help="tables and text only (no matplotlib)")
    return p


def cmd_report(argv):
    from .report import default_out_dir, write_report
    a = parser_report().parse_args(argv)
    jobs = read_jobs(a.dirs)
    out = os.path.abspath(a.output or default_out_dir(a.dirs, jobs))
    files = write_report(jobs, out, plots=not a.no_plots)
    figures = sum(1 for f in files if f.endswith(".png"))
    print(f"commbench report: {len(jobs)} job(s) -> {out}")
    print(f"  report.html, report.md, analysis.md, combined.csv, {figures} plot(s) (PNG + SVG)")
    for warning in analysis.unfinished(jobs):  # also at the top of analysis.md and the reports
        sys.stderr.write(f"commbench report: warning: {warning}\n")
    return EXIT_OK


def _write_junit(command, code, path, *args, **kwargs):
    """junit.write(path, ...), and the exit code: `code` (the verdict's) when it was written, else
    2 with the --junit file named. Its folder was checked before the work (junit.check), so this
    is a failure found late (a full disk): the verdict above stands and the message says which
    it was, but the step still fails (2, never 0 over a regression) — a gate that asked for the
    file is not done without it."""
    try:
        junit.write(path, *args, **kwargs)
    except (OSError, ResultsError) as e:
        sys.stderr.write(f"commbench {command}: could not write the --junit file {path} "
                         f"({junit.why(e)}); the verdict above stands (exit {code} without "
                         "--junit); exit 2\n")
        return EXIT_INVALID
    return code


def _expectation_cases(outcomes):
    for o in outcomes:
        yield (f"{o.where()}: {o.metric} {o.condition}", f"expect.{o.run}",
               None if o.ok else o.describe(), o.describe())


def _print_outcomes(outcomes, prefix="", out=None):
    missed = [o for o in outcomes if not o.ok]
    print(f"{prefix}Expectations: {len(outcomes) - len(missed)} of {len(outcomes)} met, "
          f"{len(missed)} missed", file=out)
    several = len({o.job for o in outcomes}) > 1  # then each miss names its job
    for o in missed:
        print(f"{prefix}  {o.describe(with_job=several)}", file=out)


def parser_check():
    p = Parser(prog="commbench check", description=(
        "Checks the expectations (`expect` in the experiment's runs) against a results folder. "
        "Exit code 1 when any is missed, and when the experiment sets none (nothing was "
        "checked: a gate that passes on nothing passes on anything) unless --allow-none."))
    p.add_argument("dirs", nargs="+", metavar="DIR")
    p.add_argument("--junit", metavar="FILE", help="also write the outcomes as JUnit XML")
    p.add_argument("--allow-none", action="store_true", help="exit 0 when the experiment sets "
                   "no expectations (a warning is still printed)")
    return p


def cmd_check(argv):
    a = parser_check().parse_args(argv)
    if a.junit:
        junit.check(a.junit)
    outcomes = [o for j in read_jobs(a.dirs) for o in expect.evaluate(j)]
    if not outcomes:
        sys.stderr.write("commbench check: the experiment sets no expectations (`expect` in a "
                         "[[run]], docs/configuration.md#expectations): nothing was checked"
                         + ("\n" if a.allow_none else "; exit 1 (--allow-none accepts this)\n"))
    else:
        _print_outcomes(outcomes)
    code = EXIT_FAILED if (not outcomes and not a.allow_none) or any(not o.ok for o in outcomes) \
        else EXIT_OK
    if a.junit:
        return _write_junit("check", code, a.junit, "commbench expectations",
                            _expectation_cases(outcomes))
    return code


def parser_compare():
    p = Parser(prog="commbench compare", description=(
        "Compares two results folders case by case (matched by backend, op, size, dtype, redop, "
        "placement, memory, world size, method, peers, window, the backend's options and the "
        "run's env; not by run name): the ratio of each side's fastest repeat's time and busbw, "
        "and a verdict. Each side may hold several job folders, and runs may set "
        "`repeats`: every record of a case is one repeat. With 2 or more repeats per side the "
        "verdict judges run-to-run noise: a one-sided Student's t-test on the difference of "
        "the two sides' fastest repeats' log mean times, scaled by the repeats' robust spread "
        "(1.4826 x their median absolute deviation; the larger of the case's own and the one "
        "pooled over every case) and by the spread of the fastest of n repeats (0.67 of one "
        "repeat's at n = 5, not a mean's 1/sqrt(n)), with n_b + n_n - 2 degrees of freedom, "
        "Holm-corrected over "
        "every case, plus an effect size and a minimum change. With 1 repeat on a side: the "
        "iterations' standard errors (--sigma) and the minimum change. A case NEW lost (not "
        "measured in one of its repeats, or at all, because an execution failed or the job did "
        "not finish) regresses. Exit code 1 when a case regressed or NEW missed one of its own "
        "expectations (`expect`), 2 when no case matches (or on bad input)."))
    p.add_argument("baseline", metavar="BASELINE")
    p.add_argument("new", metavar="NEW")
    p.add_argument("--min-change", "--threshold", dest="min_change", default="5%",
                   help="smallest change of the compared (fastest repeat's) time that can be a "
                   "verdict (default 5%%; --threshold is the former name)")
    p.add_argument("--ignore", action="append", metavar="FIELD", help="leave FIELD out of the "
                   "match, to compare two configurations on purpose (e.g. --ignore env for "
                   "NCCL_ALGO=Ring against Tree); one of " + ", ".join(compare.IGNORABLE)
                   + "; repeat it or separate fields by commas")
    p.add_argument("--alpha", type=float, default=compare.ALPHA, help="family-wise false-alarm "
                   f"rate of the run-to-run test (default {compare.ALPHA:g})")
    p.add_argument("--min-effect", type=float, default=compare.MIN_EFFECT, help="smallest effect "
                   "size |d| called a change: the change of the fastest repeats' log time over "
                   f"the noise scale (default {compare.MIN_EFFECT:g})")
    p.add_argument("--sigma", type=float, default=compare.SIGMA, help="with 1 repeat on a side: "
                   "standard errors of the iterations a change must exceed (default "
                   f"{compare.SIGMA:g})")
    p.add_argument("--junit", metavar="FILE", help="also write one JUnit test case per case")
    return p


def _attach_dash_values(argv, options):
    """`--min-change -5%` -> `--min-change=-5%`: argparse takes '-5%' for an option and would
    say only "expected one argument"; attached, the value reaches our own range check."""
    out, i = [], 0
    argv = list(argv)
    while i < len(argv):
        if argv[i] in options and i + 1 < len(argv) and argv[i + 1].startswith("-") \
                and argv[i + 1][1:2].isdigit():
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def _warn_mixed_sides(baseline, new, sides):
    """Says (stderr) when a side holds jobs of several experiments, whose shared cases are then
    pooled as repeats of one another, and when both sides are the same job folders."""
    for side, path, jobs in (("BASELINE", baseline, sides[0]), ("NEW", new, sides[1])):
        names = compare.experiments(jobs)
        if len(names) > 1:
            found = ", ".join(f"'{n}' ({c} job folder{'s' if c > 1 else ''})"
                              for n, c in names.items())
            sys.stderr.write(f"commbench compare: warning: {side} {path} holds jobs of "
                             f"{len(names)} experiments: {found}; cases they share are pooled as "
                             "repeats of one case. Pass one experiment's job folders per side\n")
    paths = [{os.path.realpath(j.path) for j in jobs} for jobs in sides]
    if paths[0] and paths[0] == paths[1]:  # read_sides refused a partial overlap
        sys.stderr.write("commbench compare: warning: BASELINE and NEW are the same job "
                         "folder(s): every case is compared with itself\n")


def cmd_compare(argv):
    p = parser_compare()
    a = p.parse_args(_attach_dash_values(argv, ("--min-change", "--threshold")))
    try:
        min_change = compare.parse_threshold(a.min_change)
    except ValueError as e:
        p.error(str(e))
    # `not x >= 0` also refuses nan, which compares false with everything and would turn every
    # regression into "within noise"; inf would do the same.
    if not (math.isfinite(a.sigma) and a.sigma >= 0):
        p.error(f"--sigma {a.sigma}: expected a finite number of standard errors >= 0, such as 3")
    if not 0 < a.alpha < 1:
        p.error(f"--alpha {a.alpha}: expected a probability between 0 and 1, such as 0.05")
    if not (math.isfinite(a.min_effect) and a.min_effect >= 0):
        p.error(f"--min-effect {a.min_effect}: expected a finite effect size >= 0, such as 0.8")
    try:
        ignore = compare.parse_ignore(a.ignore)
    except ValueError as e:
        p.error(str(e))
    if a.junit:
        junit.check(a.junit)
    sides = compare.read_sides(a.baseline, a.new)
    _warn_mixed_sides(a.baseline, a.new, sides)
    rows = compare.compare(a.baseline, a.new, min_change, a.alpha, a.min_effect, a.sigma, ignore,
                           sides)
    print(f"commbench compare: baseline {a.baseline}\n                   new      {a.new}\n")
    print(compare.render_text(rows, min_change, a.alpha, a.min_effect, a.sigma))
    # NEW's cases lost to a failed execution or an unfinished job are regressions (exit 1), not
    # two experiments that share nothing (exit 2).
    if not any(r.matched or r.verdict == "regressed" for r in rows):
        why = compare.why_nothing_matches(a.baseline, a.new, ignore, sides)
        fields = [f for f, _ in why]
        hint = (f" To compare them anyway, --ignore {','.join(fields)}."
                if fields and all(f in compare.IGNORABLE for f in fields) else "")
        sys.stderr.write("commbench compare: no case of NEW matches a case of BASELINE, so nothing "
                         "was compared" + (": they differ in " + "; ".join(t for _, t in why) if why else "")
                         + ". Compare results of the same experiment (the run names may differ)."
                         + hint + "\n")
        return EXIT_INVALID
    outcomes = [o for j in sides[1] for o in expect.evaluate(j)]
    if outcomes:
        print()
        _print_outcomes(outcomes)
    regressed = any(r.verdict == "regressed" for r in rows)
    code = EXIT_FAILED if regressed or any(not o.ok for o in outcomes) else EXIT_OK
    if a.junit:
        cases = [(r.name, "compare", f"{r.verdict}: {r.note}" if r.verdict == "regressed"
                  else None, f"time × {r.time_ratio}, busbw × {r.bw_ratio}, {r.verdict} {r.note}",
                  None if r.matched or r.verdict == "regressed" else r.verdict)
                 for r in rows]
        return _write_junit("compare", code, a.junit, "commbench compare",
                            cases + list(_expectation_cases(outcomes)),
                            properties={"method": compare.method_text(rows, min_change, a.alpha,
                                                                      a.min_effect, a.sigma)})
    return code


def cmd_after_run(argv):
    """Run by `commbench run` at the end of a job: the analysis for the console (and the
    report) when the experiment says `report = true`, the expectations when it sets any."""
    p = Parser(prog="commbench after-run")
    p.add_argument("dir")
    p.add_argument("--report", action="store_true")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    jobs = read_jobs([a.dir])
    code = EXIT_OK
    if a.report:
        from .report import write_report
        out = os.path.join(jobs[0].path, "report")
        try:
            write_report(jobs, out)
        except MissingMatplotlib as e:
            print(f"# {str(e).splitlines()[0]}\n# Writing the report without plots.",
                  file=sys.stderr)
            write_report(jobs, out, plots=False)
        if not a.quiet:
            print(analysis.console(jobs))
            print(f"# Report: {os.path.join(out, 'report.html')} (and report.md, analysis.md)")
    outcomes = [o for j in jobs for o in expect.evaluate(j)]
    if outcomes:  # --quiet (run -q / --json): stdout stays empty, the verdict goes to stderr
        _print_outcomes(outcomes, prefix="# ", out=sys.stderr if a.quiet else None)
        if any(not o.ok for o in outcomes):
            code = EXIT_FAILED
    return code


def cmd_cli_spec(argv):
    """The options of the user-facing commands as JSON, for the C++ CLI's generated shell
    completions and man page (cli/command_table.h): one definition, argparse's."""
    import json
    spec = {}
    for name, make in (("report", parser_report), ("compare", parser_compare),
                       ("check", parser_check)):
        opts = []
        for act in make()._actions:
            longs = [o[2:] for o in act.option_strings if o.startswith("--")]
            shorts = [o[1:] for o in act.option_strings if len(o) == 2]
            if not longs and not shorts:
                continue
            for i, long_name in enumerate(longs or [""]):
                opts.append({"long": long_name, "short": shorts[0] if shorts and i == 0 else "",
                             "help": (act.help or "").replace("%%", "%"),
                             "value": act.nargs != 0})
        spec[name] = opts
    print(json.dumps(spec))
    return EXIT_OK


COMMANDS = {"report": cmd_report, "compare": cmd_compare, "check": cmd_check,
            "after-run": cmd_after_run, "__cli-spec": cmd_cli_spec}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        sys.stderr.write("usage: python3 -m commbench {report|compare|check} ...\n")
        return EXIT_INVALID
    try:
        return COMMANDS[argv[0]](argv[1:])
    except (ResultsError, ValueError) as e:
        sys.stderr.write(f"commbench {argv[0]}: {e}\n")
        return EXIT_INVALID
    except MissingMatplotlib as e:
        sys.stderr.write(f"{e}\n")
        return EXIT_INVALID
    except BrokenPipeError:  # `commbench compare ... | head` (an OSError: caught before those)
        return EXIT_OK
    except KeyboardInterrupt:  # Ctrl-C reaches the whole group: commbench says what was left
        return 128 + signal.SIGINT
    except OSError as e:  # an output folder that cannot be written, a file that cannot be read
        hint = "choose another output folder with -o" if argv[0] == "report" else "check that path"
        where = f"{e.filename}: " if e.filename else ""
        sys.stderr.write(f"commbench {argv[0]}: {where}{e.strerror or e}; {hint}\n")
        return EXIT_INVALID
    except Exception as e:  # pylint: disable=broad-except
        # Input the readers did not foresee must still end in a message, never a traceback
        # (COMMBENCH_DEBUG=1 shows it, for a bug report).
        if os.environ.get("COMMBENCH_DEBUG"):
            raise
        sys.stderr.write(f"commbench {argv[0]}: could not finish ({type(e).__name__}: {e}); the "
                         "input is probably damaged. Rerun with COMMBENCH_DEBUG=1 for the details "
                         "and report it if the results folder is intact\n")
        return EXIT_INVALID


if __name__ == "__main__":
    sys.exit(main())
