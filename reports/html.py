"""Shared pieces of the HTML report: escaping, the page shell, the CSS, and
value formatting.

Every page is self-contained: CSS inline, graphs as inline SVG, the case file
as a `data:` URI.  A Content-Security-Policy meta tag forbids the browser to
fetch anything at all (no script, no font, no image but `data:`), so a page
that accidentally referenced a network resource would fail visibly in the
browser test instead of phoning home from a user's laptop.

Every string that comes from a program, a case or a database (node names,
variable names, notes, tracebacks) goes through :func:`esc` (text) or
:func:`attr` (attribute values) before it reaches the page.
"""

from __future__ import annotations

import datetime as _dt
import html as _html
import json
import re
import urllib.parse
from typing import Any, Iterable, Mapping

from tfsem.oracle.values import ValueFormatError, format_value, value_from_json

#: The page may load nothing; inline styles only.  `img-src data:` keeps the
#: door open for inline images; SVG is inline markup, not a fetched image.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def esc(text: Any) -> str:
    """Escape text content (also safe inside double-quoted attributes)."""
    return _html.escape(str(text), quote=True)


def attr(text: Any) -> str:
    """A double-quoted attribute value, escaped."""
    return '"' + _html.escape(str(text), quote=True) + '"'


def truncate(text: str, limit: int) -> str:
    """Shorten to at most `limit` characters with an ellipsis."""
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


def slug(text: Any, limit: int = 60) -> str:
    """A file-name-safe slug of `text` (letters, digits, `-`, `_`, `.`)."""
    s = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-.")
    return (s or "x")[:limit]


def data_uri(text: str, mime: str = "application/json") -> str:
    """`text` as a percent-encoded `data:` URI (for download links)."""
    return f"data:{mime};charset=utf-8," + urllib.parse.quote(clean(text), safe="")


def finite(obj: Any) -> Any:
    """`obj` with non-finite floats written as SPEC 1's strings ("nan",
    "inf", "-inf") and anything not JSON as its text."""
    if isinstance(obj, float):
        if obj != obj:
            return "nan"
        if obj in (float("inf"), float("-inf")):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    if isinstance(obj, Mapping):
        return {str(k): finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return str(obj)


def json_text(obj: Any, indent: int | None = 2) -> str:
    """Strict JSON (as written to case files), indented by default; a
    non-finite float becomes SPEC 1's string rather than failing the page."""
    try:
        return json.dumps(obj, indent=indent, allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        try:
            return json.dumps(finite(obj), indent=indent, allow_nan=False)
        except RecursionError:
            return '"(nested too deeply to show)"'


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean(text: str) -> str:
    """Text that UTF-8 can encode: a lone surrogate becomes U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def value_text(raw: Any, limit: int = 40) -> str:
    """A SPEC JSON value (feed, initial value, outcome part) as short text,
    the way `tfsem outcomes` prints it.  Undecodable values are shown as JSON
    rather than failing the whole page."""
    try:
        return truncate(format_value(value_from_json(raw)), limit)
    except (ValueFormatError, TypeError, ValueError):
        return truncate(json_text(raw, None), limit)


def when(value: Any) -> str:
    """An ISO 8601 string or Unix seconds as `YYYY-MM-DD HH:MM UTC`."""
    if value is None or value == "":
        return "—"
    try:
        if isinstance(value, (int, float)):
            t = _dt.datetime.fromtimestamp(float(value), _dt.timezone.utc)
        else:
            t = _dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
            if t.tzinfo is None:
                t = t.replace(tzinfo=_dt.timezone.utc)
        return t.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except (ValueError, OverflowError, OSError):
        return str(value)


def page(title: str, body: str, extra_css: str = "") -> str:
    """A complete, self-contained HTML5 document."""
    return clean("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content={attr(CSP)}>\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{esc(title)}</title>\n<style>\n{BASE_CSS}{GRAPH_CSS}{extra_css}</style>\n"
            f"</head>\n<body>\n{body}\n</body>\n</html>\n")


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], cls: str = "") -> str:
    """A table from already-escaped cell HTML."""
    head = "".join(f"<th>{h}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    c = f" class={attr(cls)}" if cls else ""
    return f"<table{c}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def badge(text: str, kind: str) -> str:
    return f"<span class={attr('badge ' + kind)}>{esc(text)}</span>"


# Colours: tensor edges ink, variable edges blue, control edges grey; the
# rewrite's changes green (added), red (removed), amber (modified); the step
# that just fired orange.  Shapes carry the meaning too (dash patterns, halo
# widths, labels), so the page stays readable in greyscale.
ADDED, REMOVED, MODIFIED, FIRED = "#1a7f37", "#cf222e", "#b08800", "#e8590c"

BASE_CSS = """
:root { --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --bg:#ffffff; --panel:#f6f8fa;
        --added:#1a7f37; --removed:#cf222e; --modified:#b08800; --fired:#e8590c; --accent:#0969da; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 64px; color: var(--ink); background: var(--bg);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
main { max-width: 1400px; margin: 0 auto; }
h1 { font-size: 22px; margin: 0 0 6px; }
h2 { font-size: 17px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 12px 0 6px; }
code, pre, .mono { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 10px;
      overflow: auto; max-height: 420px; }
a { color: var(--accent); }
p.lead { font-size: 15px; margin: 4px 0 10px; }
.muted { color: var(--muted); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600;
         border: 1px solid transparent; vertical-align: middle; }
.badge.unsound, .badge.bad, .badge.crash, .badge.timeout, .badge.invalid, .badge.new
       { background: #ffebe9; color: #a40e26; border-color: #ffcecb; }
.badge.sound, .badge.good, .badge.fixed { background: #dafbe1; color: #116329; border-color: #aceebb; }
.badge.unknown, .badge.no-counterexample, .badge.warn, .badge.known
       { background: #fff8c5; color: #7d4e00; border-color: #f5e0a0; }
.badge.none { background: var(--panel); color: var(--muted); border-color: var(--line); }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--panel); font-weight: 600; }
tr.extra td { background: #ffebe9; }
td.differs, span.differs { outline: 2px solid var(--removed); outline-offset: -2px; font-weight: 700; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.warning { background: #fff8c5; border: 1px solid #f5e0a0; border-radius: 8px; padding: 8px 12px; margin: 8px 0; }
.graphs { display: flex; gap: 16px; flex-wrap: wrap; align-items: flex-start; }
.graphs figure { flex: 1 1 560px; margin: 0; min-width: 0; }
.graphs.focus figure { flex-basis: 100%; }
.user-terms { font-size: 1.1em; margin: 4px 0 10px; padding-left: 1.2em; }
.user-terms code { background: #fff8c5; padding: 0 3px; border-radius: 3px; }
figure figcaption { font-weight: 600; margin-bottom: 4px; }
.chips { display: flex; flex-wrap: wrap; gap: 4px; margin: 6px 0; padding: 0; list-style: none; }
.chips li { border: 1px solid var(--line); border-radius: 4px; padding: 0 6px; background: var(--panel); }
.chips li.key { border-color: var(--ink); font-weight: 700; }
table.steps tr.key td:nth-child(2) { font-weight: 700; }
.chips li .n { color: var(--muted); font-size: 11px; margin-right: 3px; }
table.steps { width: 100%; }
table.steps td { font-size: 13px; }
table.steps td.vars, table.steps td.in-transit { min-width: 150px; }
table.steps td.fig { padding: 2px; }
table.steps tr.initial td { background: #f6f8fa; }
.var.changed, .transit.changed { background: #fff1e5; border-radius: 3px; font-weight: 700; }
.transit { white-space: nowrap; }
ul.meta { display: flex; flex-wrap: wrap; gap: 4px 22px; list-style: none; margin: 8px 0; }
ul.meta li { white-space: nowrap; }
.side-by-side { display: flex; flex-wrap: wrap; gap: 0 40px; align-items: flex-start; }
.side-by-side section { min-width: 0; }
.wrap, pre.wrap { white-space: pre-wrap; overflow-wrap: anywhere; }
ul.commands { list-style: none; padding-left: 0; }
ul.commands li { margin: 6px 0; }
ul.commands code.command { background: var(--panel); border: 1px solid var(--line); border-radius: 4px;
       padding: 2px 6px; white-space: pre-wrap; overflow-wrap: anywhere; display: inline-block; }
.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; }
"""

GRAPH_CSS = """
svg.graph { display: block; max-width: 100%; height: auto; background: #fff; }
svg.graph text { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; }
"""


def join(parts: Iterable[str], sep: str = "") -> str:
    return sep.join(parts)
