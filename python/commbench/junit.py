"""JUnit XML for CI dashboards (the format Jenkins, GitLab and GitHub test reporters read):
one <testcase> per compared case or checked expectation, <failure> when it failed, <skipped>
when it could not be judged (a case on one side only)."""
from xml.sax.saxutils import escape, quoteattr

from . import safe_files
from .load import ResultsError

HINT = "give --junit a path in a folder of yours"


def why(e):
    """An error in words: 'path: reason' for an OSError (its strerror, not "[Errno 20] ...")."""
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    return str(e)


def check(path):
    """Refuses a --junit `path` that could not be written (its folder missing, a file, not ours,
    not writable; `path` a folder) before any work: ResultsError naming the flag and the path
    (exit 2), rather than a whole comparison printed and then an error that loses its verdict.
    A link planted in the folder (safe_files.UnsafeOutput) says so in its own words."""
    try:
        safe_files.check_file(path, hint=HINT)
    except safe_files.UnsafeOutput:
        raise
    except OSError as e:
        raise ResultsError(f"--junit {path}: the file cannot be written there ({why(e)}); "
                           "give --junit a path in an existing folder you can write") from None


def write(path, suite, cases, properties=None):
    """`cases`: iterable of (name, classname, failure message or None, details text[, skipped
    message or None]); `properties`: {name: value} written as the suite's <properties>."""
    cases = [tuple(c) + (None,) * (5 - len(c)) for c in cases]
    failures = sum(1 for c in cases if c[2])
    skipped = sum(1 for c in cases if c[4] and not c[2])
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f"<testsuites name={quoteattr(suite)} tests=\"{len(cases)}\" failures=\"{failures}\">",
           f"  <testsuite name={quoteattr(suite)} tests=\"{len(cases)}\" "
           f"failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">"]
    if properties:
        out.append("    <properties>")
        out += [f"      <property name={quoteattr(k)} value={quoteattr(str(v))}/>"
                for k, v in properties.items()]
        out.append("    </properties>")
    for name, classname, failure, details, skip in cases:
        out.append(f"    <testcase name={quoteattr(name)} classname={quoteattr(classname)}>")
        if failure:
            out.append(f"      <failure message={quoteattr(failure)}>{escape(details or '')}"
                       "</failure>")
        elif skip:
            out.append(f"      <skipped message={quoteattr(skip)}/>")
        elif details:
            out.append(f"      <system-out>{escape(details)}</system-out>")
        out.append("    </testcase>")
    out += ["  </testsuite>", "</testsuites>", ""]
    # Through its folder, which must be ours (or root's); a link at `path` is replaced, not
    # written through (safe_files.py).
    with safe_files.create_file(path, hint=HINT) as f:
        f.write("\n".join(out))
