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

``cells`` — optional list, one per pass and (semantics, observe) cell of this
campaign (``Store.pass_statistics``); without it the cells come from each
pass's ``claims``::

    {"pass": "prune", "semantics": "atomic", "observe": "outputs",
     "claim": "sound",                          # or "unsound", or None
     "programs": 284, "seconds": 3.4,
     "identical": 28,                           # rewrites that changed nothing
     "sound": 256, "no_counterexample": 0, "unknown": 0}   # verdicts of the rest

A claim is judged only by the findings of its own cell (semantics AND
observe): `prune` claims `sound` for atomic/outputs and `unsound` for
atomic/outputs+state, and a finding in the second says nothing of the first.

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

from tfsem.campaigns.evidence import MIN_CHANGED, weak_reason

from .html import attr, badge, esc, json_text, page, slug, truncate, when

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


def _num(value: Any) -> float | None:
    """A finite number, or None."""
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) else None


def _int(value: Any) -> int:
    x = _num(value)
    return int(x) if x is not None and abs(x) < 1e15 else 0


def duration_text(seconds: float | None) -> str:
    """Seconds, rounded the way a person reads them: 7.2 s, 15 s, 3.5 min."""
    s = _num(seconds)
    if s is None:
        return "—"
    if s < 10:
        return f"{s:.1f} s"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def rate(stats: Mapping[str, Any]) -> float | None:
    """Programs per second of one pass."""
    if _num(stats.get("programs_per_second")) is not None:
        return _num(stats["programs_per_second"])
    secs = _num(stats.get("seconds"))
    if secs:
        return _int(stats.get("programs")) / secs
    return None


def _cell_of(mode: str) -> tuple[str | None, str | None]:
    """"atomic/outputs" -> ("atomic", "outputs"); "atomic" -> ("atomic", None);
    "any" -> (None, None)."""
    if mode == "any":
        return None, None
    sem, _, obs = str(mode).partition("/")
    return sem, (obs or None)


def in_cell(f: Mapping[str, Any], semantics: str | None, observe: str | None) -> bool:
    """Is finding f in the cell (None matches any)?"""
    return ((semantics is None or f.get("semantics") == semantics)
            and (observe is None or f.get("observe") == observe))


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
        sem, obs = _cell_of(mode)
        hits = [f for f in findings
                if f.get("pass") == name and f.get("kind") == "unsound" and f.get("status") != "fixed"
                and in_cell(f, sem, obs)]
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
                 title: str = "tfsem campaign report",
                 cells: Sequence[Mapping[str, Any]] | None = None,
                 problems: Sequence[str] = ()) -> str:
    """The index page (self-contained HTML); see the module's docstring for
    the shapes of the arguments.  It leads with the verdict per pass and
    cell, then the findings; the campaign's settings are folded away.
    `problems`: pages that could not be written, said at the top."""
    body = ["<main>", f"<h1>{esc(title)}</h1>"]
    current = campaigns[0] if campaigns else None
    rows = cell_verdicts(pass_stats, cells, findings)
    body.append(_lead(rows, findings))
    if problems:
        body.append('<div class="warning problems"><strong>Pages not written:</strong><ul>'
                    + "".join(f"<li>{esc(m)}</li>" for m in problems) + "</ul></div>")
    body.append(_verdicts(rows))
    body.append(_findings(findings))
    body.append(_passes(pass_stats, findings))
    body.append(_campaign(current))
    body.append(_history(history, campaigns))
    body.append('<p class="muted">Written by <code>tfsem report</code>; this page loads nothing from a network.</p>')
    body.append("</main>")
    return page(title, "\n".join(body), INDEX_CSS)


#: verdict of a cell -> (text, badge class)
CELL_VERDICTS = {
    "broken": ("claim broken", "bad"),
    "unclaimed": ("unsound, no claim", "bad"),
    "fails": ("pass fails", "bad"),
    "shown": ("unsound, as claimed", "good"),
    "holds": ("claim holds so far", "good"),
    "weak": ("claim holds so far, on weak evidence", "warn"),
    "not-shown": ("unsoundness not shown yet", "warn"),
    "untested": ("nothing tested", "warn"),
    "no-claim": ("no claim", "none"),
}


def cell_verdicts(pass_stats: Sequence[Mapping[str, Any]], cells: Sequence[Mapping[str, Any]] | None,
                  findings: Sequence[Mapping[str, Any]]) -> list[dict]:
    """One row per pass and cell: the claim, what was tried, the findings of
    that cell only (fixed ones left out) and the verdict:

    - `fails`: the pass crashed, hung or returned an invalid program there
      (a bug whatever it claims);
    - `broken`: it claims `sound` and an unsound finding is in this cell;
    - `shown`: it claims `unsound` and an unsound finding shows it;
    - `unclaimed`: it claims nothing and an unsound finding is in the cell
      (a failure, as for `tfsem fuzz`'s exit status);
    - `not-shown`: it claims `unsound` and nothing showed it yet;
    - `holds`: it claims `sound` and nothing contradicts it;
    - `weak`: the same, but the pass changed too few programs there (or
      too few distinct change shapes) for it to say much
      (tfsem.campaigns.evidence): never shown green;
    - `untested`: no program was tested in the cell; `no-claim` otherwise.
    """
    if cells is None:  # from the per-pass claims (semantics, or semantics/observe)
        cells = []
        for st in pass_stats:
            claims = st.get("claims") or {}
            if isinstance(claims, str):
                claims = {"any": claims}
            for mode, claim in claims.items():
                sem, obs = _cell_of(str(mode))
                cells.append({"pass": st.get("pass"), "semantics": sem, "observe": obs, "claim": claim,
                              "programs": None})
    out = []
    for c in cells:
        sem, obs = c.get("semantics"), c.get("observe")
        mine = [f for f in findings if f.get("pass") == c.get("pass") and f.get("status") != "fixed"
                and in_cell(f, sem, obs)]
        by_kind = {k: [f for f in mine if f.get("kind") == k] for k in KINDS}
        claim = c.get("claim")
        programs = c.get("programs")
        if by_kind["crash"] or by_kind["timeout"] or by_kind["invalid"]:
            verdict = "fails"
        elif claim == "sound" and by_kind["unsound"]:
            verdict = "broken"
        elif claim == "unsound" and by_kind["unsound"]:
            verdict = "shown"
        elif by_kind["unsound"]:   # a pass that claims nothing is expected to be sound (the exit rule)
            verdict = "unclaimed"
        elif programs is not None and not _int(programs):
            verdict = "untested"
        elif claim == "unsound":
            verdict = "not-shown"
        elif claim == "sound" and programs is not None and weak_reason(c):
            verdict = "weak"
        elif claim == "sound":
            verdict = "holds"
        else:
            verdict = "no-claim"
        out.append({"pass": c.get("pass"), "semantics": sem, "observe": obs, "claim": claim,
                    "verdict": verdict, "programs": programs, "shapes": c.get("shapes"),
                    "weak_reason": weak_reason(c) if programs is not None else None,
                    "identical": c.get("identical"), "sound": c.get("sound"),
                    "no_counterexample": c.get("no_counterexample"), "unknown": c.get("unknown"),
                    "findings": by_kind})
    return out


def _lead(rows: Sequence[Mapping[str, Any]], findings: Sequence[Mapping[str, Any]]) -> str:
    """One line: how many cells are broken or failing, how many hold, and the
    findings by status."""
    n = {k: sum(1 for r in rows if r["verdict"] == k) for k in CELL_VERDICTS}
    bad = n["broken"] + n["fails"] + n["unclaimed"]
    parts = []
    if rows:
        parts.append(badge(f"{bad} of {len(rows)} cells failing", "bad" if bad else "good"))
        for k in ("broken", "unclaimed", "fails", "shown", "holds", "weak", "not-shown", "untested"):
            if n[k]:
                parts.append(f"{n[k]} {esc(CELL_VERDICTS[k][0])}")
    counts = {s: sum(1 for f in findings if f.get("status") == s) for s in STATUSES}
    parts.append(" ".join(badge(f"{counts[s]} {s}", s) for s in STATUSES)
                 + f" finding{'s' if len(findings) != 1 else ''}")
    return '<p class="lead summary">' + " · ".join(parts) + "</p>"


def _count(value: Any) -> str:
    return "—" if value is None else f"{_int(value):,}"


def _verdicts(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return '<h2>Verdict per pass and cell</h2><p class="muted">No pass statistics recorded.</p>'
    body = []
    warnings = []
    for r in rows:
        text, cls = CELL_VERDICTS[r["verdict"]]
        fs = r["findings"]
        found = ", ".join(badge(f"{len(bug_groups(fs[k]))} {k}", k) for k in KINDS if fs[k]) or "none"
        cell = " / ".join(str(x) for x in (r["semantics"], r["observe"]) if x) or "every cell"
        programs, identical = r.get("programs"), r.get("identical")
        share = ""
        if programs and identical is not None and _int(programs):
            pct = 100.0 * _int(identical) / _int(programs)
            share = f" ({pct:.0f}%)"
            if pct >= 90:
                warnings.append(f"{r['pass']} ({cell}) left {pct:.0f}% of the programs it was given "
                                "unchanged: few rewrites were checked there.")
        claim = r["claim"] or "—"
        evidence = "—"
        if programs is not None and identical is not None:
            evidence = f"{max(0, _int(programs) - _int(identical)):,} changed"
            if r.get("shapes") is not None:
                evidence += f", {_int(r['shapes']):,} shapes"
        if r.get("weak_reason"):
            evidence += f" <span class=\"weak-why\">(weak: {esc(r['weak_reason'])})</span>"
        body.append(
            f"<tr class={attr('cell ' + r['verdict'])} data-pass={attr(r['pass'])} "
            f"data-cell={attr(cell)}>"
            f"<td class=\"mono\">{esc(r['pass'])}</td><td>{esc(cell)}</td>"
            f"<td>{badge(claim, 'sound' if claim == 'sound' else 'unsound' if claim == 'unsound' else 'none')}</td>"
            f"<td class=\"verdict\">{badge(text, cls)}</td>"
            f"<td class=\"num\">{_count(programs)}</td>"
            f"<td class=\"num\">{_count(identical)}{share}</td>"
            f"<td class=\"num\">{_count(r.get('sound'))}</td>"
            f"<td class=\"num\">{_count(r.get('no_counterexample'))}</td>"
            f"<td class=\"num\">{_count(r.get('unknown'))}</td>"
            f"<td class=\"found\">{found}</td>"
            f"<td class=\"evidence\">{evidence}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in
                   ["pass", "cell (semantics / observe)", "claims", "verdict", "programs tested",
                    "unchanged", "proved sound", "no counterexample", "unknown",
                    "findings in this cell", "evidence (programs the pass changed)"])
    warn = "".join(f'<div class="warning few-changes">{esc(w)}</div>' for w in warnings)
    return ('<h2>Verdict per pass and cell</h2>'
            '<p class="muted">A claim is judged by the findings of its own cell only. '
            "“pass fails”: it crashed, hung or returned an invalid program. "
            "A claim of soundness rests on the programs the pass changed in that cell: "
            f"fewer than {MIN_CHANGED} is weak evidence, never shown as holding.</p>"
            f'<table class="verdicts"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
            + warn)


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
    if _num(start) is None:
        ran = "—"
    items = [("campaign", c.get("id", "—")), ("started", when(c.get("started"))),
             ("ended", when(c.get("ended"))), ("ran for", ran),
             ("budget", duration_text(c.get("budget_s"))), ("tfsem version", c.get("version") or "—")]
    for key in ("host", "status"):
        if c.get(key):
            items.append((key, c[key]))
    rows = "".join(f"<span class=\"muted\">{esc(k)}</span><span>{esc(v)}</span>" for k, v in items)
    settings = c.get("settings") or {}
    if isinstance(settings, Mapping):
        srows = "".join(f"<span class=\"muted\">{esc(k)}</span><span><code>{esc(json_text(v, None))}</code></span>"
                        for k, v in settings.items())
    else:
        srows = f"<span class=\"muted\">settings</span><span><code>{esc(json_text(settings, None))}</code></span>"
    return ('<h2>The campaign</h2>'
            f'<div class="kv panel campaign">{rows}</div>'
            '<details class="settings"><summary>settings</summary>'
            f'<div class="kv panel settings">{srows}</div></details>')


def _passes(pass_stats: Sequence[Mapping[str, Any]], findings: Sequence[Mapping[str, Any]]) -> str:
    if not pass_stats:
        return ''
    rows = []
    for st in pass_stats:
        r = rate(st)
        fcounts = st.get("findings") or {}
        cells = [f"<td class=\"mono\">{esc(st.get('pass', '?'))}</td>",
                 f"<td class=\"num\">{_int(st.get('programs')):,}</td>",
                 f"<td class=\"num\">{'—' if r is None else f'{r:.1f}'}</td>"]
        for k in KINDS:
            n = _int(fcounts.get(k) if isinstance(fcounts, Mapping) else 0)
            cells.append(f"<td class={attr('num ' + ('zero' if not n else 'kind-' + k))}>"
                         f"{badge(str(n), k) if n else '0'}</td>")
        rows.append(f"<tr data-pass={attr(st.get('pass', ''))}>{''.join(cells)}</tr>")
    head = "".join(f"<th>{h}</th>" for h in
                   ["pass", "programs tested", "programs / s", *KINDS])
    return (f'<h2>Passes, all cells together</h2><table class="passes"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def finding_href(f: Mapping[str, Any]) -> str | None:
    """Where a finding's page is, relative to index.html."""
    if f.get("page"):
        return str(f["page"])
    return None


def finding_what(f: Mapping[str, Any]) -> str:
    """What a finding is, in one line, without the cell (it has a column)."""
    d = f.get("differs") if isinstance(f.get("differs"), Mapping) else {}
    if "output" in d:
        return f"output {d['output']} differs"
    if "variable" in d:
        return f"final value of {d['variable']} differs"
    what = str(f.get("summary") or "")
    sem, obs = f.get("semantics"), f.get("observe")
    for suffix in (f" ({sem}, {obs})", f" [{sem}/{obs}]", f" ({sem}/{obs})"):
        if what.endswith(suffix):
            what = what[: -len(suffix)]
    return what


def bug_groups(findings: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], list]]:
    """One bug, one row: findings with the same `group` (the store's
    group_key: the pass, the cell, what the rewrite changed on the witness,
    the part that differs) as (smallest example, the other members); a
    finding without a group is its own.  Ordered by pass, kind, then id."""
    groups: dict[Any, list] = {}
    for i, f in enumerate(findings):
        key = ("g", str(f.get("pass")), str(f["group"])) if f.get("group") else ("f", i)
        groups.setdefault(key, []).append(f)
    out = []
    for members in groups.values():
        members = sorted(members, key=lambda f: (_int(f["rank"]) if _num(f.get("rank")) is not None else 10**9,
                                                 _int(f.get("nodes")) or 10**9, str(f.get("id"))))
        out.append((members[0], members[1:]))
    return sorted(out, key=lambda g: (str(g[0].get("pass")), str(g[0].get("kind")), str(g[0].get("id"))))


def _findings(findings: Sequence[Mapping[str, Any]]) -> str:
    out = ["<h2>Findings</h2>"]
    explain = {"new": "first seen in this campaign",
               "known": "seen on an earlier night, seen again in this one",
               "fixed": "seen on an earlier night, no longer reproduced"}
    for status in STATUSES:
        group = [f for f in findings if f.get("status") == status]
        bugs = bug_groups(group)
        n = len(bugs)
        more = f" ({len(group)} findings)" if len(group) != n else ""
        out.append(f'<h3 id="{status}">{badge(status, status)} {n} {"bug" if n == 1 else "bugs"}{more}, '
                   f"{esc(explain[status])}</h3>")
        if not group:
            out.append(f'<p class="muted none-{status}">none</p>')
            continue
        rows = []
        for f, members in bugs:
            href = finding_href(f)
            fid = esc(truncate(str(f.get("id", "?")), 24))
            link = f'<a class="finding-link" href={attr(href)}>{fid}</a>' if href else fid
            if members:
                link += ('<br><span class="members muted">same bug: '
                         + ", ".join(f'<a class="member-link" href={attr(finding_href(m))}>'
                                     f'{esc(truncate(str(m.get("id", "?")), 24))}</a>' if finding_href(m)
                                     else esc(truncate(str(m.get("id", "?")), 24)) for m in members)
                         + "</span>")
            mode = " / ".join(str(f[k]) for k in ("semantics", "observe") if f.get(k))
            what = finding_what(f)
            rows.append(f"<tr class={attr('finding ' + status)}><td>{link}</td>"
                        f"<td class=\"mono\">{esc(f.get('pass', '?'))}</td>"
                        f"<td>{badge(str(f.get('kind', '?')), slug(f.get('kind', 'none')))}</td>"
                        f"<td>{esc(truncate(str(what), 120))}</td><td>{esc(mode)}</td>"
                        f"<td class=\"num\">{esc(f.get('nodes', '—'))}</td>"
                        f"<td>{esc(when(f.get('first_seen')))}</td><td>{esc(when(f.get('last_seen')))}</td>"
                        f"<td class=\"num\">{esc(f.get('seen', '—'))}</td></tr>")
        head = "".join(f"<th>{h}</th>" for h in ["finding (smallest example)", "pass", "kind", "what",
                                                   "semantics / observe",
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


def history_labels(history: Sequence[Mapping[str, Any]]) -> list[str]:
    """One x-axis label per night, no two alike: the day (`MM-DD`); where
    campaigns share a day, the day and the time (`MM-DD HH:MM`); where they
    share the minute too, the campaign's number after it (`MM-DD HH:MM #7`)."""
    def campaign(i: int, h: Mapping[str, Any]) -> str:
        return str(h.get("campaign", i + 1))

    stamps = [when(h.get("started")) if h.get("started") else "" for h in history]
    labels = [s[5:10] if s and s[4:5] == "-" else (s or f"#{campaign(i, h)}")
              for i, (s, h) in enumerate(zip(stamps, history))]
    for step in ("time", "number"):
        seen: dict[str, int] = {}
        for label in labels:
            seen[label] = seen.get(label, 0) + 1
        for i, h in enumerate(history):
            if seen[labels[i]] < 2:
                continue
            if step == "time" and stamps[i][4:5] == "-":
                labels[i] = stamps[i][5:16]
            elif step == "number":
                labels[i] = f"{labels[i]} #{campaign(i, h)}"
    return labels


def history_plot(history: Sequence[Mapping[str, Any]], width: int = 720, height: int = 240) -> str:
    """Bars: findings per night (new ones dark); line: programs per second."""
    n = len(history)
    left, right, top, bottom = 48, 64, 28, 40
    pw, ph = width - left - right, height - top - bottom
    step = max(1, math.ceil(max([_int(h.get("findings")) for h in history] + [1]) / 4))
    fmax = step * 4  # integer ticks: findings are counted
    rates = [_num(h.get("programs_per_second")) for h in history]
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
    axis_labels = history_labels(history)
    pts = []
    for i, h in enumerate(history):
        cx = left + slot * (i + 0.5)
        total, new = max(_int(h.get("findings")), 0), max(_int(h.get("new")), 0)
        new = min(new, total)
        ht, hn = ph * total / fmax, ph * new / fmax
        label = (f"campaign {h.get('campaign', i + 1)}, {when(h.get('started'))}: "
                 f"{total} finding{'s' if total != 1 else ''} ({new} new)")
        if rates[i] is not None:
            label += f", {float(rates[i]):.1f} programs/s"
        parts.append(f'<g class="night"><title>{esc(label)}</title>'
                     f'<rect class="bar known" x="{cx - bw / 2:.1f}" y="{top + ph - ht:.1f}" width="{bw:.1f}" '
                     f'height="{max(ht - hn, 0):.1f}" fill="#d4a72c"/>'
                     f'<rect class="bar new" x="{cx - bw / 2:.1f}" y="{top + ph - hn:.1f}" width="{bw:.1f}" '
                     f'height="{hn:.1f}" fill="#cf222e"/></g>')
        parts.append(f'<text x="{cx:.1f}" y="{top + ph + 16}" font-size="11" text-anchor="middle" '
                     f'fill="#57606a">{esc(axis_labels[i])}</text>')
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
