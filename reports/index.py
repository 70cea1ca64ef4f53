"""The report's index page: the campaign, its passes, its findings (new,
known, fixed), and a plot of the nights stored in the database.

:func:`render_index` takes plain dicts and lists, so that the campaign
database can be read by whoever owns it; the shapes are below.  Fields marked
optional may be missing or None; unknown extra fields are ignored.

``campaigns`` — list, newest first; the first one is "this campaign"::

    {"id": 3,                                   # any str or int
     "started": "2025-01-03T02:00:00Z",         # ISO 8601 string or Unix seconds
     "ended": "2025-01-03T02:10:00Z",           # optional (None while running)
     "budget_s": 600.0,                         # the --budget, in seconds
     "settings": {"workers": 2, ...},           # any JSON object, shown as given
     "version": "0.1.0",                        # tfsem version
     "host": "ci-runner", "status": "finished"} # optional

``pass_stats`` — list, one per pass of this campaign::

    {"pass": "hoist-reads",
     "programs": 4210,                          # programs tested
     "seconds": 150.0,                          # time spent on the pass
     "programs_per_second": 28.1,               # optional; else programs / seconds
     "findings": {"unsound": 1, "invalid": 0, "crash": 0, "timeout": 0},
     "claims": {"atomic": "sound", "decomposed": "unsound"}}
                                                # optional: what the pass claims, per
                                                # semantics mode (a plain string means
                                                # the same claim in every mode)

``findings`` — list (any order; grouped by ``status`` here)::

    {"id": "f12",                               # unique in the report
     "pass": "hoist-reads",
     "kind": "unsound",                         # unsound | invalid | crash | timeout
     "status": "new",                           # new | known | fixed
     "page": "findings/f12.html",               # optional: href relative to index.html
     "semantics": "atomic", "observe": "outputs+state",   # optional
     "differs": {"variable": "X"},              # optional (unsound): {"output": n} | {"variable": x}
     "summary": "text",                         # optional one-liner (crash message, ...)
     "nodes": 6,                                # optional: size of the minimized program
     "first_seen": "...", "last_seen": "...",   # optional, like "started"
     "seen": 3}                                 # optional: how often seen

``history`` — list, oldest first, one per night (campaign) in the database::

    {"campaign": 3, "started": "2025-01-03T02:00:00Z",
     "findings": 2,                             # distinct findings seen that night
     "new": 1,                                  # of which new
     "programs_per_second": 34.4}               # all passes together
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from typing import Any, Mapping, Sequence

from .html import attr, badge, esc, page, slug, truncate, when

KINDS = ("unsound", "invalid", "crash", "timeout")
STATUSES = ("new", "known", "fixed")


def _seconds(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return _dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = float(seconds)
    if s < 120:
        return f"{s:g} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def rate(stats: Mapping[str, Any]) -> float | None:
    """Programs per second of one pass."""
    if stats.get("programs_per_second") is not None:
        return float(stats["programs_per_second"])
    secs = stats.get("seconds")
    if secs:
        return float(stats.get("programs") or 0) / float(secs)
    return None


def claim_checks(stats: Mapping[str, Any], findings: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(mode, claim, what was found, verdict class) for each claimed mode:
    `bad` when a claim of soundness met an unsound finding, `warn` when a
    claimed unsoundness was not found (yet), `good` otherwise."""
    claims = stats.get("claims")
    name = stats.get("pass")
    if not claims:
        return []
    if isinstance(claims, str):
        modes = sorted({f.get("semantics") or "any" for f in findings if f.get("pass") == name} or {"any"})
        claims = {m: claims for m in modes}
    out = []
    for mode, claim in claims.items():
        hits = [f for f in findings
                if f.get("pass") == name and f.get("kind") == "unsound" and f.get("status") != "fixed"
                and (mode == "any" or f.get("semantics") in (None, mode) or str(mode).startswith(str(f.get("semantics")) + "/"))]
        n = len(hits)
        found = f"{n} unsound finding{'s' if n != 1 else ''}" if n else "nothing unsound"
        if claim == "sound":
            cls = "bad" if n else "good"
        elif claim == "unsound":
            cls = "good" if n else "warn"
        else:
            cls = "none"
        out.append((str(mode), str(claim), found, cls))
    return out


def render_index(campaigns: Sequence[Mapping[str, Any]], pass_stats: Sequence[Mapping[str, Any]],
                 findings: Sequence[Mapping[str, Any]], history: Sequence[Mapping[str, Any]],
                 title: str = "tfsem campaign report") -> str:
    """The index page (self-contained HTML); see the module's docstring for
    the shapes of the arguments."""
    body = ["<main>", f"<h1>{esc(title)}</h1>"]
    current = campaigns[0] if campaigns else None
    counts = {s: sum(1 for f in findings if f.get("status") == s) for s in STATUSES}
    body.append('<p class="lead summary">'
                + " · ".join(f"{badge(str(counts[s]) + ' ' + s, s)}" for s in STATUSES)
                + f" &nbsp;finding{'s' if len(findings) != 1 else ''} in this campaign's database</p>")
    body.append(_campaign(current))
    body.append(_passes(pass_stats, findings))
    body.append(_findings(findings))
    body.append(_history(history, campaigns))
    body.append('<p class="muted">Written by <code>tfsem report</code>; this page loads nothing from a network.</p>')
    body.append("</main>")
    return page(title, "\n".join(body), INDEX_CSS)


INDEX_CSS = """
table.passes td.num, table.findings td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.zero { color: var(--muted); }
ul.claims { margin: 0; padding-left: 0; list-style: none; }
.settings code { white-space: pre-wrap; }
"""


def _campaign(c: Mapping[str, Any] | None) -> str:
    if c is None:
        return '<h2>The campaign</h2><p class="muted">No campaign in the database yet.</p>'
    start, end = _seconds(c.get("started")), _seconds(c.get("ended"))
    ran = duration_text(end - start) if start is not None and end is not None else "still running or killed"
    items = [("campaign", c.get("id", "—")), ("started", when(c.get("started"))),
             ("ended", when(c.get("ended"))), ("ran for", ran),
             ("budget", duration_text(c.get("budget_s"))), ("tfsem version", c.get("version") or "—")]
    for key in ("host", "status"):
        if c.get(key):
            items.append((key, c[key]))
    rows = "".join(f"<span class=\"muted\">{esc(k)}</span><span>{esc(v)}</span>" for k, v in items)
    settings = c.get("settings") or {}
    if isinstance(settings, Mapping):
        srows = "".join(f"<span class=\"muted\">{esc(k)}</span><span><code>{esc(json.dumps(v, default=str))}</code></span>"
                        for k, v in settings.items())
    else:
        srows = f"<span class=\"muted\">settings</span><span><code>{esc(json.dumps(settings, default=str))}</code></span>"
    return ('<h2>The campaign</h2><div class="graphs">'
            f'<div class="kv panel campaign">{rows}</div>'
            f'<div class="kv panel settings"><span class="muted"><strong>settings</strong></span><span></span>{srows}</div>'
            "</div>")


def _passes(pass_stats: Sequence[Mapping[str, Any]], findings: Sequence[Mapping[str, Any]]) -> str:
    if not pass_stats:
        return '<h2>Passes</h2><p class="muted">No pass statistics recorded.</p>'
    rows = []
    for st in pass_stats:
        r = rate(st)
        fcounts = st.get("findings") or {}
        cells = [f"<td class=\"mono\">{esc(st.get('pass', '?'))}</td>",
                 f"<td class=\"num\">{int(st.get('programs') or 0):,}</td>",
                 f"<td class=\"num\">{'—' if r is None else f'{r:.1f}'}</td>"]
        for k in KINDS:
            n = int(fcounts.get(k) or 0)
            cells.append(f"<td class={attr('num ' + ('zero' if not n else 'kind-' + k))}>"
                         f"{badge(str(n), k) if n else '0'}</td>")
        checks = claim_checks(st, findings)
        claims = "".join(
            f"<li>{esc(mode)}: claims {badge(claim, 'sound' if claim == 'sound' else 'unsound' if claim == 'unsound' else 'none')}"
            f" — found {esc(found)} {badge({'bad': 'claim broken', 'warn': 'not found yet', 'good': 'consistent', 'none': '?'}[cls], cls)}</li>"
            for mode, claim, found, cls in checks) or '<li class="muted">no claims</li>'
        cells.append(f'<td><ul class="claims">{claims}</ul></td>')
        rows.append(f"<tr data-pass={attr(st.get('pass', ''))}>{''.join(cells)}</tr>")
    head = "".join(f"<th>{h}</th>" for h in
                   ["pass", "programs tested", "programs / s", *KINDS, "claims beside what was found"])
    return (f'<h2>Passes</h2><table class="passes"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def finding_href(f: Mapping[str, Any]) -> str | None:
    """Where a finding's page is, relative to index.html."""
    if f.get("page"):
        return str(f["page"])
    return None


def _findings(findings: Sequence[Mapping[str, Any]]) -> str:
    out = ["<h2>Findings</h2>"]
    explain = {"new": "first seen in this campaign",
               "known": "seen on an earlier night, seen again in this one",
               "fixed": "seen on an earlier night, no longer reproduced"}
    for status in STATUSES:
        group = [f for f in findings if f.get("status") == status]
        out.append(f'<h3 id="{status}">{badge(status, status)} {len(group)} {esc(explain[status])}</h3>')
        if not group:
            out.append(f'<p class="muted none-{status}">none</p>')
            continue
        rows = []
        for f in sorted(group, key=lambda f: (str(f.get("pass")), str(f.get("kind")), str(f.get("id")))):
            href = finding_href(f)
            fid = esc(truncate(str(f.get("id", "?")), 24))
            link = f'<a class="finding-link" href={attr(href)}>{fid}</a>' if href else fid
            what = f.get("summary") or ""
            d = f.get("differs") or {}
            if "output" in d:
                what = f"output {d['output']} differs" + (f"; {what}" if what else "")
            elif "variable" in d:
                what = f"final value of {d['variable']} differs" + (f"; {what}" if what else "")
            mode = " / ".join(str(f[k]) for k in ("semantics", "observe") if f.get(k))
            rows.append(f"<tr class={attr('finding ' + status)}><td>{link}</td>"
                        f"<td class=\"mono\">{esc(f.get('pass', '?'))}</td>"
                        f"<td>{badge(str(f.get('kind', '?')), slug(f.get('kind', 'none')))}</td>"
                        f"<td>{esc(truncate(str(what), 120))}</td><td>{esc(mode)}</td>"
                        f"<td class=\"num\">{esc(f.get('nodes', '—'))}</td>"
                        f"<td>{esc(when(f.get('first_seen')))}</td><td>{esc(when(f.get('last_seen')))}</td>"
                        f"<td class=\"num\">{esc(f.get('seen', '—'))}</td></tr>")
        head = "".join(f"<th>{h}</th>" for h in ["finding", "pass", "kind", "what", "semantics / observe",
                                                   "nodes", "first seen", "last seen", "times seen"])
        out.append(f'<table class={attr("findings " + status)}><thead><tr>{head}</tr></thead>'
                   f"<tbody>{''.join(rows)}</tbody></table>")
    return "".join(out)


def _history(history: Sequence[Mapping[str, Any]], campaigns: Sequence[Mapping[str, Any]]) -> str:
    out = ["<h2>Over the nights</h2>"]
    if not history:
        out.append('<p class="muted">No earlier nights recorded.</p>')
        return "".join(out)
    out.append(history_plot(history))
    if len(campaigns) > 1:
        rows = "".join(f"<tr><td>{esc(c.get('id', '—'))}</td><td>{esc(when(c.get('started')))}</td>"
                       f"<td>{esc(duration_text(c.get('budget_s')))}</td><td>{esc(c.get('version') or '—')}</td></tr>"
                       for c in campaigns[1:])
        out.append('<h3>Earlier campaigns</h3><table class="campaigns"><thead><tr><th>campaign</th>'
                   f"<th>started</th><th>budget</th><th>version</th></tr></thead><tbody>{rows}</tbody></table>")
    return "".join(out)


def history_plot(history: Sequence[Mapping[str, Any]], width: int = 720, height: int = 240) -> str:
    """Bars: findings per night (new ones dark); line: programs per second."""
    n = len(history)
    left, right, top, bottom = 48, 64, 28, 40
    pw, ph = width - left - right, height - top - bottom
    step = max(1, math.ceil(max([int(h.get("findings") or 0) for h in history] + [1]) / 4))
    fmax = step * 4  # integer ticks: findings are counted
    rates = [h.get("programs_per_second") for h in history]
    rmax = max([float(r) for r in rates if r is not None] + [1.0])
    slot = pw / n
    bw = min(36.0, slot * 0.6)
    parts = [f'<svg class="graph plot history" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'role="img" aria-label="findings and throughput per night"><title>findings and programs per second per night</title>']
    # axes and grid
    for i in range(5):
        y = top + ph - ph * i / 4
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#eaeef2"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end" fill="#57606a">'
                     f"{step * i}</text>")
        parts.append(f'<text x="{left + pw + 6}" y="{y + 4:.1f}" font-size="11" fill="#0969da">'
                     f"{rmax * i / 4:.3g}</text>")
    parts.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#8c959f"/>')
    pts = []
    for i, h in enumerate(history):
        cx = left + slot * (i + 0.5)
        total, new = int(h.get("findings") or 0), int(h.get("new") or 0)
        new = min(new, total)
        ht, hn = ph * total / fmax, ph * new / fmax
        label = f"campaign {h.get('campaign', i + 1)}, {when(h.get('started'))}: {total} findings ({new} new)"
        if rates[i] is not None:
            label += f", {float(rates[i]):.1f} programs/s"
        parts.append(f'<g class="night"><title>{esc(label)}</title>'
                     f'<rect class="bar known" x="{cx - bw / 2:.1f}" y="{top + ph - ht:.1f}" width="{bw:.1f}" '
                     f'height="{max(ht - hn, 0):.1f}" fill="#d4a72c"/>'
                     f'<rect class="bar new" x="{cx - bw / 2:.1f}" y="{top + ph - hn:.1f}" width="{bw:.1f}" '
                     f'height="{hn:.1f}" fill="#cf222e"/></g>')
        date = when(h.get("started"))[5:10] if h.get("started") else str(h.get("campaign", i + 1))
        parts.append(f'<text x="{cx:.1f}" y="{top + ph + 16}" font-size="11" text-anchor="middle" '
                     f'fill="#57606a">{esc(date)}</text>')
        if rates[i] is not None:
            pts.append((cx, top + ph - ph * float(rates[i]) / rmax))
    if pts:
        parts.append('<polyline class="throughput" fill="none" stroke="#0969da" stroke-width="2" points="'
                     + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
        parts.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="#0969da"/>' for x, y in pts)
    parts.append(f'<text x="{left}" y="16" font-size="12" fill="#1f2328">findings per night '
                 f'(<tspan fill="#cf222e">new</tspan>, <tspan fill="#b08800">known</tspan>)</text>')
    parts.append(f'<text x="{left + pw + right - 4}" y="16" font-size="12" text-anchor="end" '
                 f'fill="#0969da">programs / s</text>')
    parts.append("</svg>")
    return "".join(parts)
