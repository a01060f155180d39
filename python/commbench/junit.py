"""JUnit XML for CI dashboards (the format Jenkins, GitLab and GitHub test reporters read):
one <testcase> per compared case or checked expectation, <failure> when it failed."""
from xml.sax.saxutils import escape, quoteattr


def write(path, suite, cases):
    """`cases`: iterable of (name, classname, failure message or None, details text)."""
    cases = list(cases)
    failures = sum(1 for c in cases if c[2])
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f"<testsuites name={quoteattr(suite)} tests=\"{len(cases)}\" failures=\"{failures}\">",
           f"  <testsuite name={quoteattr(suite)} tests=\"{len(cases)}\" "
           f"failures=\"{failures}\" errors=\"0\">"]
    for name, classname, failure, details in cases:
        out.append(f"    <testcase name={quoteattr(name)} classname={quoteattr(classname)}>")
        if failure:
            out.append(f"      <failure message={quoteattr(failure)}>{escape(details or '')}"
                       "</failure>")
        elif details:
            out.append(f"      <system-out>{escape(details)}</system-out>")
        out.append("    </testcase>")
    out += ["  </testsuite>", "</testsuites>", ""]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))
