"""JUnit XML for CI dashboards (the format Jenkins, GitLab and GitHub test reporters read):
one <testcase> per compared case or checked expectation, <failure> when it failed, <skipped>
when it could not be judged (a case on one side only)."""
from xml.sax.saxutils import escape, quoteattr

from . import safe_files


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
    with safe_files.create_file(path, hint="give --junit a path in a folder of yours") as f:
        f.write("\n".join(out))
