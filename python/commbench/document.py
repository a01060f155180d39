"""A tiny document model rendered twice: report.md (figures linked) and a self-contained
report.html (figures embedded as data: URIs, no external file, script or font)."""
import base64
import html
import os
import re


class Doc:
    def __init__(self):
        self.blocks = []

    def h(self, level, text, anchor=None):
        self.blocks.append(("h", level, text, anchor))

    def p(self, text):
        self.blocks.append(("p", text))

    def items(self, items):
        if items:
            self.blocks.append(("list", list(items)))

    def table(self, headers, rows, align=None):
        self.blocks.append(("table", headers, rows, align))

    def figure(self, fig):
        self.blocks.append(("fig", fig))

    def pre(self, text):
        self.blocks.append(("pre", text))


_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def _md_text(v):
    """Text from the records in Markdown: line breaks would split a heading or a list item, and a
    '<' that opens a tag would be run as HTML by a renderer (report.html escapes on its own)."""
    return _TAG_START.sub("&lt;", str(v).replace("\r", " ").replace("\n", " "))


def _md_cell(v):
    return _md_text(v).replace("|", "\\|")


def to_markdown(doc):
    out = []
    for b in doc.blocks:
        kind = b[0]
        if kind == "h":
            out += [f"{'#' * b[1]} {_md_text(b[2])}", ""]
        elif kind == "p":
            out += [_md_text(b[1]), ""]
        elif kind == "list":
            out += [f"- {_md_text(i)}" for i in b[1]] + [""]
        elif kind == "table":
            headers, rows, align = b[1], b[2], b[3]
            out.append("| " + " | ".join(_md_cell(h) for h in headers) + " |")
            al = align or ["l"] + ["r"] * (len(headers) - 1)
            out.append("|" + "|".join("---:" if a == "r" else "---" for a in al) + "|")
            out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
            out.append("")
        elif kind == "fig":
            f = b[1]
            out += [f"![{f.title}]({f.png()})", "", f"*{f.title}* ([SVG]({f.svg()}))", ""]
        elif kind == "pre":
            out += ["```", b[1], "```", ""]
    return "\n".join(out)


_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


# Links the report itself writes: files beside it, anchors and web pages. Anything else (a
# "javascript:" URL inside a run name or a failure reason) stays text, never a live link.
_SAFE_URL = re.compile(r"^(?:https?://|#|[A-Za-z0-9_.][A-Za-z0-9_./-]*(?:#[A-Za-z0-9_-]*)?$)")


def _link(m):
    label, url = m.group(1), m.group(2)
    if not _SAFE_URL.match(html.unescape(url)):
        return m.group(0)
    return f'<a href="{url}">{label}</a>'


def _inline(text):
    t = html.escape(str(text))
    t = _BOLD.sub(r"<b>\1</b>", t)
    t = _LINK.sub(_link, t)
    return _CODE.sub(r"<code>\1</code>", t)


CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;
     color:#222;padding:0 1em}
h1{border-bottom:2px solid #ccc}h2{border-bottom:1px solid #ddd;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.2em .6em}th{background:#f3f3f3}td.r{text-align:right}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.85em;color:#555}pre{background:#f6f6f6;padding:.8em;overflow:auto;
font-size:.8em;max-height:30em}nav a{margin-right:1em}
"""


def to_html(doc, title, base_dir):
    """`base_dir`: where the figures' files are (they are read and embedded)."""
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           f"<title>{html.escape(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>"]
    toc = [(b[3], b[2]) for b in doc.blocks if b[0] == "h" and b[1] == 2 and b[3]]
    for b in doc.blocks:
        kind = b[0]
        if kind == "h":
            anchor = f' id="{html.escape(b[3])}"' if b[3] else ""
            out.append(f"<h{b[1]}{anchor}>{_inline(b[2])}</h{b[1]}>")
            if b[1] == 1 and toc:
                out.append("<nav>" + "".join(f'<a href="#{html.escape(a)}">{html.escape(t)}</a>'
                                             for a, t in toc) + "</nav>")
        elif kind == "p":
            out.append(f"<p>{_inline(b[1])}</p>")
        elif kind == "list":
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in b[1]) + "</ul>")
        elif kind == "table":
            headers, rows, align = b[1], b[2], b[3]
            al = align or ["l"] + ["r"] * (len(headers) - 1)
            out.append("<table><thead><tr>" + "".join(f"<th>{_inline(h)}</th>" for h in headers)
                       + "</tr></thead><tbody>")
            for r in rows:
                out.append("<tr>" + "".join(
                    f'<td{" class=r" if a == "r" else ""}>{_inline(c)}</td>'
                    for c, a in zip(r, al)) + "</tr>")
            out.append("</tbody></table>")
        elif kind == "fig":
            f = b[1]
            with open(os.path.join(base_dir, f.png()), "rb") as fh:
                data = base64.b64encode(fh.read()).decode("ascii")
            out.append(f'<figure><img alt="{html.escape(f.title)}" '
                       f'src="data:image/png;base64,{data}">'
                       f"<figcaption>{html.escape(f.title)}</figcaption></figure>")
        elif kind == "pre":
            out.append(f"<pre>{html.escape(b[1])}</pre>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)
