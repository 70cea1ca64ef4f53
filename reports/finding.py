"""A finding page: one rewrite, its verdict, and the run that breaks it.

:func:`render_finding_page` turns a case (original, rewrite, settings) and a
verdict object (SPEC 4, `tfsem check --json`) into one self-contained HTML
page.  For an `unsound` verdict the page replays the counterexample's schedule
of the rewritten program through the reference step semantics
(`tfsem.oracle.semantics`, seed 000 section 3.2.1) and draws the state after
every step, the way the seed's Figures 2-4 draw states: values in transit on
the edges, variable values at the side.  The replay is also a check of the
verdict: a schedule that does not replay, or that ends in another outcome
than the verdict says, or in one of the original's outcomes, is flagged on the
page instead of being drawn as if all were well.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from tfsem.oracle.jsonio import Case, case_from_json, case_to_json, program_from_json, program_to_json
from tfsem.oracle.outcomes import matches_json
from tfsem.oracle.program import Program, ProgramError
from tfsem.oracle.semantics import (ATOMIC, EMPTY, GO, State, VarRef, enabled, fire, graph_of,
                                    initial_state, outcome_of)
from tfsem.oracle.values import (Error, Tensor, Value, ValueFormatError, format_value, value_from_json,
                                 value_to_json)

from . import graph as G
from . import terms as T
from .html import (attr, badge, data_uri, esc, json_text, page, slug, truncate, value_text, when)

#: Beyond this many steps the table keeps its rows but drops the figures.
MAX_STEP_FIGURES = 60
BACKENDS = ("numpy", "cupy")
#: The headline of a page whose verdict names no differing part.
HEADLINE = {"crash": "the pass raised an exception", "timeout": "the pass did not return in time",
            "invalid": "the rewritten program is not valid", "sound": "the rewrite is sound",
            "no-counterexample": "no counterexample found", "unknown": "the check could not decide"}
#: A case or program longer than this (characters of JSON) is only a download, not also shown.
SHOW_JSON_MAX = 200_000
#: Exit status each verdict gives `tfsem check` (SPEC 4).
VERDICT_EXIT = {"sound": 0, "no-counterexample": 0, "unsound": 1, "invalid": 1, "unknown": 3}


# ---------------------------------------------------------------------------
# Replaying a schedule


@dataclass
class Step:
    """The state after step `index` (0: the initial state)."""
    index: int
    label: str | None
    state: State


@dataclass
class Replay:
    steps: list[Step]
    error: str | None = None        # why the replay stopped early, if it did
    final: Any = None               # the Outcome reached, if the run completed
    cut: int | None = None          # the step where the time budget stopped the replay


def _decode(raw: Mapping[str, Any], types: Mapping[str, str], what: str,
            problems: list[str]) -> dict[str, Value]:
    out = {}
    for name, v in (raw or {}).items():
        try:
            out[name] = value_from_json(v, f"{what} {name}", types.get(name))
        except ValueFormatError as exc:
            problems.append(str(exc))
    return out


def replay(p: Program, feeds: Mapping[str, Value], init: Mapping[str, Value],
           schedule: Sequence[str], semantics: str, observe: str,
           budget: G.DrawBudget | None = None) -> Replay:
    """Fire `schedule` step by step from σ, keeping every state (each step
    costs time linear in the program: past the budget's time, the replay
    stops and says at which step)."""
    g = graph_of(p)
    missing = [f for f in p.feed_names if f not in feeds]
    if missing:
        return Replay([], f"no value for feed(s) {', '.join(missing)} in σ")
    s = initial_state(p, g, feeds, init)
    steps = [Step(0, None, s)]
    for i, label in enumerate(schedule, 1):
        if budget is not None and budget.expired(0.5):   # leave time to draw what was replayed
            return Replay(steps, None, None, cut=i)
        if label not in enabled(p, g, s, semantics):
            return Replay(steps, f"step {i} ({label}) is not enabled in the state before it")
        s = fire(p, g, s, label)
        steps.append(Step(i, label, s))
    if enabled(p, g, s, semantics):
        return Replay(steps, "the schedule ends before the run does (steps "
                             f"{', '.join(enabled(p, g, s, semantics))} could still fire)")
    return Replay(steps, None, outcome_of(p, g, s, observe))


def _content_text(c: object) -> tuple[str, str] | None:
    """(text, token) for an edge's content; None for EMPTY (omitted, as in
    the seed's figures)."""
    if c is EMPTY:
        return None
    if c is GO:
        return ("GO", "go")
    if isinstance(c, VarRef):
        return (c.var, "var")
    if isinstance(c, (Tensor, Error)):
        return (format_value(c), "value")
    return (str(c), "value")


def _same(a: object, b: object) -> bool:
    if a is b:
        return True
    if isinstance(a, (Tensor, Error, VarRef)) and type(a) is type(b):
        return a == b
    return False


# ---------------------------------------------------------------------------
# The page


def render_finding_page(case: Case | Mapping[str, Any], verdict_json: Mapping[str, Any],
                        confirmed: Sequence[str] | None = None, *,
                        meta: Mapping[str, Any] | None = None,
                        index_href: str | None = None,
                        case_filename: str = "case.json",
                        steps: str = "key", steps_href: str | None = None,
                        budget: G.DrawBudget | None = None) -> str:
    """A self-contained HTML page for one checked rewrite.

    Never raises on what it is given: a finding the page cannot show in full
    (a graph past the drawing budget, a program that does not load, anything
    unexpected) still gives a page, with the reason where the picture or the
    section would be.  See :func:`_render_finding_page` for the arguments.
    """
    try:
        return _render_finding_page(case, verdict_json, confirmed, meta=meta, index_href=index_href,
                                    case_filename=case_filename, steps=steps, steps_href=steps_href,
                                    budget=budget)
    except Exception as exc:  # one bad finding must not take the report down
        return fallback_page(case, verdict_json, meta, index_href, exc)


def write_check_pages(path: str | Path, case: Case | Mapping[str, Any],
                      verdict_json: Mapping[str, Any]) -> list[Path]:
    """`tfsem check --html FILE`: FILE, and for a counterexample also
    FILE's `-steps.html` sibling with every step drawn (linked from FILE,
    which draws the steps that matter).  Returns the paths written; raises
    OSError when a file cannot be written."""
    path = Path(path)
    written = []
    cx = verdict_json.get("counterexample")
    steps_href = None
    if verdict_json.get("verdict") == "unsound" and isinstance(cx, Mapping):
        steps = path.with_name((path.stem or "case") + "-steps.html")
        steps.write_text(render_finding_page(case, verdict_json, steps="all"), encoding="utf-8")
        written.append(steps)
        steps_href = steps.name
    path.write_text(render_finding_page(case, verdict_json, steps_href=steps_href), encoding="utf-8")
    return [path, *written]


def fallback_page(case: Any, verdict_json: Any, meta: Mapping[str, Any] | None,
                  index_href: str | None, exc: BaseException) -> str:
    """The page of a finding that could not be rendered: the reason, and the
    raw case and verdict as JSON (non-finite numbers written as SPEC strings)."""
    meta = dict(meta or {})
    kernels = (verdict_json.get("stats") or {}).get("tensorflow_kernels")
    if isinstance(kernels, Mapping) and isinstance(kernels.get("text"), str):
        # the ops whose concrete values TensorFlow's kernels gave (oracle/kernels.py)
        meta = {**meta, "tensorflow_kernels": kernels["text"]}

    body = ["<main>"]
    if index_href:
        body.append(f'<p><a class="back" href={attr(index_href)}>← all findings</a></p>')
    body.append(f"<h1>{badge('PAGE NOT DRAWN', 'bad')} {esc(meta.get('pass', 'finding'))}</h1>")
    body.append(f'<div class="warning problems page-error"><strong>This page could not be drawn:</strong> '
                f"{esc(type(exc).__name__)}: {esc(truncate(str(exc), 2000))}</div>")
    for title, obj in (("The case", case_to_json(case) if isinstance(case, Case) else case),
                       ("The verdict", verdict_json)):
        body.append(f"<h2>{title}</h2><pre class=\"raw wrap\">{esc(json_text(obj))}</pre>")
    body.append("</main>")
    return page(f"{meta.get('pass', 'finding')}: page not drawn", "\n".join(body))


def _render_finding_page(case: Case | Mapping[str, Any], verdict_json: Mapping[str, Any],
                         confirmed: Sequence[str] | None = None, *,
                         meta: Mapping[str, Any] | None = None,
                         index_href: str | None = None,
                         case_filename: str = "case.json",
                         steps: str = "key", steps_href: str | None = None,
                         budget: G.DrawBudget | None = None) -> str:
    """A self-contained HTML page for one checked rewrite.

    - `case`: a :class:`tfsem.oracle.jsonio.Case` or its `tfsem.case/1` JSON;
    - `verdict_json`: the object `tfsem check --json` prints (SPEC 4): for
      `unsound`, `differs` and `counterexample` {feeds, init, schedule,
      outcome, original_outcomes}; other verdicts are shown with their fields;
    - `confirmed`: backends on which the counterexample was reproduced
      concretely (default: the verdict's `confirmed` field);
    - `meta` (optional, from a campaign): pass, kind, status (new/known/fixed),
      first_seen, last_seen, seen, id, signature, and anything else worth a
      line in the header;
    - `index_href`: a link back to the report's index, if there is one;
    - `case_filename`: the name the downloaded case gets (and the command uses);
    - `steps`: "key" draws the state only after the steps that matter (the
      initial state, each step that accesses a variable, the last step) and
      lists the others as text; "all" draws every step (a second page);
    - `steps_href`: where the page with every step drawn is, if there is one;
    - `budget`: the drawing budget (:class:`tfsem.reports.graph.DrawBudget`);
      past it, pictures are replaced by the reason.
    """
    meta = dict(meta or {})
    budget = budget or G.DrawBudget()
    budget.start()
    problems: list[str] = []
    lone: Program | None = None  # an original without a rewrite (the pass crashed or hung)
    if isinstance(case, Mapping):
        case_json = dict(case)
        case_obj: Case | None = None
        try:
            if case_json.get("rewritten") is None and case_json.get("original") is not None:
                lone = program_from_json(case_json["original"], validate=False, where="case.original")
            else:
                case_obj = case_from_json(case_json)
        except ProgramError as exc:
            problems.append(f"the case does not load: {exc}")
    else:
        case_obj = case
        case_json = case_to_json(case)
    verdict = str(verdict_json.get("verdict", "unknown"))
    semantics = str(verdict_json.get("semantics") or (case_obj.semantics if case_obj else ATOMIC))
    observe = str(verdict_json.get("observe") or (case_obj.observe if case_obj else "outputs+state"))
    if confirmed is None:
        confirmed = list(verdict_json.get("confirmed") or [])

    original = case_obj.original if case_obj else lone
    rewritten: Program | None = None
    if case_obj is not None:
        try:
            rewritten = case_obj.rewritten(validate=False)
        except (ProgramError, ValueError, KeyError, TypeError) as exc:
            problems.append(f"the rewritten program cannot be drawn: {exc}")

    differs = verdict_json.get("differs") or {}
    what = _differs_text(differs)
    if verdict == "unknown":
        what = _unknown_cause(verdict_json)
    pass_name = meta.get("pass")
    title = f"{pass_name + ': ' if pass_name else ''}{verdict}" + (f" — {what}" if what else "")

    # a runtime target's finding (tfsem fuzz --target xla): outcomes observed on
    # TensorFlow against the oracle's set, no rewritten program
    runtime = verdict_json.get("runtime") if isinstance(verdict_json.get("runtime"), Mapping) else None
    detail_json = verdict_json.get("detail") if isinstance(verdict_json.get("detail"), Mapping) else {}
    graphdef = verdict_json.get("graphdef") or detail_json.get("graphdef")
    graphdef = graphdef if isinstance(graphdef, Mapping) else None
    if graphdef is not None:   # a TensorFlow target: which optimizer, which TensorFlow (header line)
        for key in ("optimizer", "tensorflow"):
            if isinstance(graphdef.get(key), str):
                meta.setdefault(key, graphdef[key])

    body = ["<main>"]
    if index_href:
        body.append(f'<p><a class="back" href={attr(index_href)}>← all findings</a></p>')
    terms = (T.difference_lines(original, rewritten, verdict_json)
             if original is not None and rewritten is not None else [])
    body.append(_header(verdict, what, meta, case_obj, semantics, observe, confirmed, runtime, terms))
    reason = verdict_json.get("reason")
    if reason and "\n" in str(reason):
        body.append(f'<h2>Reason</h2><pre class="reason wrap">{esc(reason)}</pre>')
    elif reason:
        body.append(f'<p class="reason"><strong>Reason:</strong> {esc(reason)}</p>')
    body.append(_detail(verdict_json.get("detail"), str(reason or "")))

    # the programs
    layout = None
    diff = None
    body.append("<h2>The programs</h2>")
    if original is not None and rewritten is not None:
        try:
            svg_a, svg_b, diff, layout = G.draw_pair(original, rewritten, uid="prog", budget=budget)
            body.append(G.legend_svg("legend"))
            body.append('<div class="graphs">'
                        f'<figure class="original"><figcaption>Original P</figcaption>{svg_a}</figure>'
                        f'<figure class="rewritten"><figcaption>Rewritten P′</figcaption>{svg_b}</figure>'
                        "</div>")
        except G.TooBig as exc:
            diff = G.diff_programs(original, rewritten)
            body.append(_not_drawn("the programs", exc, original, rewritten))
            try:  # the part that matters, the rest folded by name scope
                focus, extra = T.focus_of(original, rewritten, verdict_json)
                svg_a, svg_b, flayout, fo = G.draw_pair_focus(original, rewritten, focus, extra=extra,
                                                             uid="prog", budget=budget)
                left_out = sum(len(m) for m in fo.groups.values())
                dropped = f"; names are shown without <code>{esc(fo.prefix)}</code>" if fo.prefix else ""
                body.append(f'<p class="summary-note">Drawn instead: the nodes the rewrite changed, the '
                            f"accesses that matter and their neighbours ({len(fo.kept)} nodes); the other "
                            f"{left_out} are folded by name scope (a grey box “scope/… ×count”, or a dashed "
                            f"“… name” for a scope of one, where an edge comes from them){dropped}. Hover for whole "
                            "names.</p>")
                body.append(G.legend_svg("legend"))
                body.append('<div class="graphs part focus">'
                            f'<figure class="original"><figcaption>Original P, the part that matters'
                            f"</figcaption>{svg_a}</figure>"
                            f'<figure class="rewritten"><figcaption>Rewritten P′, the part that matters'
                            f"</figcaption>{svg_b}</figure></div>")
            except G.TooBig as exc2:
                body.append(f'<p class="muted not-drawn">The part around the changes is too large '
                            f"as well: {esc(exc2)}.</p>")
        body.append(_changes(diff, original, rewritten))
    elif original is not None:
        caption = "The program TensorFlow ran (its GraphDef imported back)" if runtime else "Original P"
        try:
            body.append(f'<figure class="original"><figcaption>{esc(caption)}</figcaption>'
                        f'{G.draw_program(original, uid="prog", role="original", budget=budget)}</figure>')
        except G.TooBig as exc:
            body.append(_not_drawn("the program", exc, original))
    if runtime is not None:
        body.append(_runtime_section(runtime, original, semantics, observe))
    if graphdef is not None:
        body.append(_graphdef_section(graphdef))
    cx = verdict_json.get("counterexample")
    if verdict == "unsound" and isinstance(cx, Mapping) and rewritten is not None:
        body.append(_counterexample(cx, differs, original, rewritten, layout, semantics, observe,
                                    problems, steps, steps_href, budget))
    if runtime is None:
        body.append(_confirmation(confirmed, verdict, verdict_json.get("tensorflow_replay")))
    body.append(_reproducer(case_json, case_filename, original, rewritten, cx, semantics, observe,
                            verdict, meta, runtime))
    extra = {k: v for k, v in verdict_json.items() if v not in (None, "", [], {})
             and k not in ("verdict", "differs", "counterexample", "confirmed", "semantics", "observe", "reason",
                          "detail", "runtime", "graphdef")}
    if extra:
        body.append("<h2>More from the verdict</h2>"
                    f"<pre class=\"verdict-extra\">{esc(json_text(extra))}</pre>")
    if problems:
        warn = "".join(f"<li>{esc(m)}</li>" for m in problems)
        body.insert(2 if index_href else 1,
                    f'<div class="warning problems"><strong>Check this page:</strong><ul>{warn}</ul></div>')
    body.append('<p class="muted">Written by <code>tfsem</code>; this page loads nothing from a network.</p>')
    body.append("</main>")
    return page(title, "\n".join(body))


def _ticks(text: str) -> str:
    """Escaped text with `names` set in code."""
    parts = str(text).split("`")
    return "".join(f"<code>{esc(p)}</code>" if i % 2 else esc(p) for i, p in enumerate(parts))


def _not_drawn(what: str, exc: BaseException, *programs: Program) -> str:
    sizes = ", ".join(f"{label} has {len(q.nodes)} nodes" for label, q in zip(("P", "P′"), programs))
    sizes += "; together"
    return (f'<div class="warning not-drawn"><strong>{esc(what.capitalize())} are not drawn:</strong> '
            f"{esc(sizes)}; {esc(exc)}. The list of changes below and the case file "
            "(under Reproduce it) hold everything.</div>")


def _detail(detail: Any, reason: str) -> str:
    """A crash's traceback, a timeout's limit, an invalid program's
    violations: readable, wrapped text, never one escaped JSON line."""
    if not isinstance(detail, Mapping) or not detail:
        return ""
    out = []
    tb = detail.get("traceback")
    if isinstance(tb, str) and tb.strip() and tb.strip() not in reason:
        kind = detail.get("error_type")
        out.append(f"<h2>Traceback{' (' + esc(kind) + ')' if kind else ''}</h2>"
                   f'<pre class="traceback wrap">{esc(tb.rstrip())}</pre>')
    if detail.get("timeout") is not None:
        out.append(f'<p class="timeout-detail">The pass did not return within '
                   f"<strong>{esc(_round(detail['timeout']))} s</strong>.</p>")
    violations = detail.get("violations")
    if isinstance(violations, list) and [v for v in violations if str(v) and str(v) not in reason]:
        out.append('<h2>What is wrong with the rewritten program</h2><ul class="violations">'
                   + "".join(f"<li class=\"wrap mono\">{esc(v)}</li>" for v in violations) + "</ul>")
    return "".join(out)


def _round(x: Any) -> str:
    try:
        return f"{float(x):.3g}"
    except (TypeError, ValueError):
        return str(x)


def _unknown_cause(verdict_json: Mapping[str, Any]) -> str:
    """The cause an `unknown` verdict names (its stats' `cause`, else the
    first clause of its reason, as checking.verdict.cause_of makes it): an
    op with no concrete model, which budget ran out; "" when it names none."""
    stats = verdict_json.get("stats")
    cause = stats.get("cause") if isinstance(stats, Mapping) else None
    if isinstance(cause, str) and cause.strip():
        return cause.strip()
    reason = str(verdict_json.get("reason") or "").strip()
    cut = reason.find(";")
    head = reason[:cut] if cut > 0 else reason
    cut = head.find(": ")
    if len(head) > 120 and cut > 0:
        head = head[:cut]
    return head.strip()


def _differs_text(differs: Mapping[str, Any]) -> str:
    if "output" in differs:
        return f"output {differs['output']} differs"
    if "variable" in differs:
        return f"final value of variable {differs['variable']} differs"
    return ""


def _header(verdict: str, what: str, meta: Mapping[str, Any], case: Case | None,
            semantics: str, observe: str, confirmed: Sequence[str],
            runtime: Mapping[str, Any] | None = None, terms: Sequence[str] = ()) -> str:
    pass_name = meta.get("pass")
    h = ["<header>",
         f"<h1>{badge(verdict.upper(), slug(verdict))} "
         f"{esc(pass_name) + ' — ' if pass_name else ''}{esc(what or HEADLINE.get(verdict, 'rewrite check'))}</h1>"]
    if terms:   # the difference in the user's terms (reports/terms.py), first
        h.append('<ul class="user-terms">' + "".join(f"<li>{_ticks(t)}</li>" for t in terms) + "</ul>")
    if verdict == "unsound" and runtime is not None:
        h.append(f'<p class="lead runtime-lead">TensorFlow ({esc(runtime.get("target", "?"))}) ran the '
                 f"program <strong>{esc(runtime.get('runs', '?'))}</strong> times from the inputs σ "
                 f"below; <strong class=\"runtime-times\">{esc(runtime.get('times', '?'))}</strong> of "
                 "the runs ended in an outcome that is <strong>not</strong> among the "
                 f"<strong class=\"runtime-allowed\">{esc(runtime.get('allowed_count', '?'))}</strong> "
                 f"outcomes the oracle allows in the {esc(semantics)} semantics."
                 + (f" The first part that differs: <strong class=\"differs-what\">{esc(what)}</strong>."
                    if what else "") + "</p>")
    elif verdict == "unsound":
        h.append('<p class="lead">At the inputs σ below, the rewritten program P′ has a run whose '
                 "outcome is <strong>not</strong> among the outcomes of the original P: the rewrite "
                 "adds a behaviour, so it is unsound (Outcomes(P′, σ) ⊆ Outcomes(P, σ) fails)."
                 + (f" The first part that differs: <strong class=\"differs-what\">{esc(what)}</strong>."
                    if what else "") + "</p>")
    items = [("semantics", semantics), ("observe", observe)]
    for key in ("kind", "status", "first_seen", "last_seen", "seen", "id", "signature", "campaign"):
        if key in meta and meta[key] not in (None, ""):
            value = when(meta[key]) if key in ("first_seen", "last_seen") else meta[key]
            items.append((key.replace("_", " "), value))
    for key, value in meta.items():
        if key not in ("pass", "kind", "status", "first_seen", "last_seen", "seen", "id",
                       "signature", "campaign") and isinstance(value, (str, int, float)):
            items.append((key.replace("_", " "), value))
    if verdict == "unsound" and runtime is None:
        items.append(("confirmed on", ", ".join(confirmed) if confirmed else "—"))
    if case is not None and case.note:
        items.append(("note", case.note))
    if case is not None and case.expect:
        items.append(("case expects", case.expect))
    h.append('<ul class="meta panel">' + "".join(
        f"<li><span class=\"muted\">{esc(k)}</span> {esc(v)}</li>" for k, v in items) + "</ul>")
    h.append("</header>")
    return "".join(h)


def _runtime_section(rt: Mapping[str, Any], program: Program | None, semantics: str,
                     observe: str) -> str:
    """A runtime finding: σ, every outcome observed with how many runs gave
    it, and the oracle's allowed set (its size, and the outcomes listed)."""
    out = ['<section class="runtime"><h2>The runs on TensorFlow</h2>']
    rows = [f"<tr><td>feed</td><td class=\"mono\">${esc(k)}</td><td class=\"mono\">{esc(value_text(v))}</td></tr>"
            for k, v in sorted((rt.get("feeds") or {}).items())]
    rows += [f"<tr><td>initial value</td><td class=\"mono\">{esc(k)}</td><td class=\"mono\">"
             f"{esc(value_text(v))}</td></tr>" for k, v in sorted((rt.get("init") or {}).items())]
    if not rows:
        rows.append('<tr><td colspan="3" class="muted">no feeds, no variables</td></tr>')
    out.append("<h3>σ (every variable initialized: TensorFlow fails a run that reads an "
               "uninitialized one)</h3>"
               '<table class="sigma"><thead><tr><th>input</th><th>name</th><th>value</th></tr></thead>'
               f"<tbody>{''.join(rows)}</tbody></table>")
    runs = rt.get("runs", "?")
    obs_rows = []
    for o in rt.get("observed") or []:
        if not isinstance(o, Mapping):
            continue
        line = outcome_line(o.get("outcome") or {}) or json_text(o.get("outcome"), indent=None)
        ok = bool(o.get("allowed"))
        obs_rows.append(f'<tr class={attr("allowed" if ok else "outside")}><td class="mono">{esc(line)}</td>'
                        f"<td class=\"runs\">{esc(o.get('runs', '?'))} of {esc(runs)}</td>"
                        f"<td>{badge('allowed', 'good') if ok else badge('NOT ALLOWED', 'bad')}</td></tr>")
    out.append(f"<h3>Outcomes observed in {esc(runs)} runs ({esc(observe)})</h3>"
               '<table class="observed"><thead><tr><th>outcome</th><th>runs</th>'
               f"<th>in the {esc(semantics)} set?</th></tr></thead><tbody>{''.join(obs_rows)}</tbody></table>")
    allowed = [a for a in rt.get("allowed") or [] if isinstance(a, Mapping)]
    count = rt.get("allowed_count", len(allowed))
    items = "".join(f'<li class="mono">{esc(outcome_line(a) or json_text(a, indent=None))}</li>'
                    for a in allowed)
    more = (f'<p class="muted">… and {esc(count - len(allowed))} more.</p>'
            if isinstance(count, int) and count > len(allowed) else "")
    out.append(f'<h3>What the oracle allows: <span class="allowed-count">{esc(count)}</span> '
               f"outcome{'s' if count != 1 else ''} ({esc(semantics)} semantics)</h3>"
               f'<ol class="allowed">{items}</ol>{more}')
    out.append('<p class="muted runtime-note">Which outcome a run gives depends on timing. This '
               "finding states only what was observed: the counts above. A smaller program "
               "found while shrinking counted as the same finding only when its own runs "
               "showed an outcome outside its set again; one that did not was not kept. "
               "Running the program again may or may not show the outcome.</p></section>")
    return "".join(out)


def _graphdef_section(gd: Mapping[str, Any]) -> str:
    """The GraphDefs of a TensorFlow target's finding, as pbtxt: the one
    given to Grappler and Grappler's output (or the one XLA ran, with the
    clusters XLA formed)."""
    facts = []
    if gd.get("optimizer"):
        facts.append(f'Grappler optimizer <strong class="optimizer">{esc(gd["optimizer"])}</strong>')
    if gd.get("mode"):
        facts.append(f"run by <strong>{esc(gd['mode'])}</strong>")
    if gd.get("tensorflow"):
        facts.append(f'TensorFlow <strong class="tf-version">{esc(gd["tensorflow"])}</strong>')
    out = ['<section class="graphdefs"><h2>The TensorFlow graphs</h2>']
    if facts:
        out.append(f"<p>{', '.join(facts)}.</p>")
    if gd.get("optimizer"):
        out.append('<p class="muted">The programs drawn above are these GraphDefs imported back, '
                   "in the graph's own node names.</p>")
    for key, label in (("original", "The GraphDef given to Grappler (pbtxt)"),
                       ("optimized", "Grappler's output GraphDef (pbtxt)"),
                       ("run", "The GraphDef TensorFlow ran (pbtxt)")):
        text = gd.get(key)
        if isinstance(text, str):
            out.append(f'<details class="pbtxt {esc(key)}"><summary>{esc(label)}</summary>'
                       f'<pre class="pbtxt">{esc(text)}</pre></details>')
    clusters = gd.get("clusters")
    if isinstance(clusters, Mapping):
        items = "".join(f"<li><span class=\"mono\">{esc(name)}</span>: reads and writes "
                        f"{esc(', '.join(map(str, vs)) or 'no variable')}</li>"
                        for name, vs in (clusters.get("clusters") or {}).items())
        out.append("<h3>XLA clusters in one traced run</h3>"
                   + (f'<ul class="clusters">{items}</ul>' if items else
                      '<p class="muted">XLA formed no cluster in the traced run.</p>'))
    for key in ("error", "clusters_error"):
        if gd.get(key):
            out.append(f'<p class="warning">{esc(gd[key])}</p>')
    out.append("</section>")
    return "".join(out)


def _changes(diff: G.Diff, original: Program, rewritten: Program) -> str:
    if diff.empty:
        return '<p class="changes muted">The rewrite changed no node and no edge (matched by name).</p>'
    items = "".join(f"<li>{badge(kind, {'added': 'good', 'removed': 'bad', 'modified': 'warn'}[kind])} "
                    f"<span class=\"mono\">{esc(text)}</span></li>"
                    for kind, text in diff.summary(original, rewritten))
    return ('<h3>What the rewrite changed</h3><ul class="changes">' + items + "</ul>"
            '<p class="muted">Nodes are matched by name, edges by their endpoints and argument position.</p>')


def _outcome_parts(o: Mapping[str, Any]) -> dict[tuple[str, str], Any]:
    parts = {("output", k): v for k, v in (o.get("outputs") or {}).items()}
    parts.update({("variable", k): v for k, v in (o.get("state") or {}).items()})
    return parts


def _outcome_matches(final: Any, outcome: Mapping[str, Any]) -> bool:
    """Whether a replay's outcome is the one the verdict's JSON states: the
    same parts, each value equal to the one written, or, for a value the
    JSON summarises (oracle/outcomes.py `summary_json`), of its digest."""
    mine = dict(final.parts())
    theirs = _outcome_parts(outcome)
    if set(mine) != set(theirs):
        return False
    for k, v in mine.items():
        same = matches_json(v, theirs[k])
        if not (same if same is not None else value_to_json(v) == theirs[k]):
            return False
    return True


def _decoded_parts(o: Mapping[str, Any]) -> dict[tuple[str, str], Any]:
    out = {}
    for k, v in _outcome_parts(o).items():
        try:
            out[k] = value_from_json(v)
        except (ValueFormatError, TypeError, ValueError):
            out[k] = ("raw", repr(v))
    return out


def _counterexample(cx: Mapping[str, Any], differs: Mapping[str, Any], original: Program,
                    rewritten: Program, layout: G.Layout | None, semantics: str, observe: str,
                    problems: list[str], steps: str = "key", steps_href: str | None = None,
                    budget: G.DrawBudget | None = None) -> str:
    out = []
    feeds_raw = cx.get("feeds") or {}
    init_raw = cx.get("init") or {}
    # σ
    out.append('<div class="side-by-side"><section class="sigma-section"><h2>The counterexample σ</h2>')
    rows = [f"<tr><td>feed</td><td class=\"mono\">${esc(k)}</td><td class=\"mono\">{esc(value_text(v))}</td></tr>"
            for k, v in sorted(feeds_raw.items())]
    for x in sorted(set(original.variables) | set(init_raw)):
        v = value_text(init_raw[x]) if x in init_raw else "<uninitialized>"
        rows.append(f"<tr><td>initial value</td><td class=\"mono\">{esc(x)}</td><td class=\"mono\">{esc(v)}</td></tr>")
    if not rows:
        rows.append('<tr><td colspan="3" class="muted">no feeds, no variables</td></tr>')
    out.append('<table class="sigma"><thead><tr><th>input</th><th>name</th><th>value</th></tr></thead>'
               f"<tbody>{''.join(rows)}</tbody></table>")

    # outcomes side by side
    orig_outcomes = [o for o in (cx.get("original_outcomes") or []) if isinstance(o, Mapping)]
    outcome = cx.get("outcome") if isinstance(cx.get("outcome"), Mapping) else {}
    out.append("</section><section class=\"outcomes-section\">")
    out.append(_outcomes_table(orig_outcomes, outcome, differs, problems,
                               cx.get("original_count") if isinstance(cx.get("original_count"), int) else None))
    out.append("</section></div>")

    # the schedule, step by step
    schedule = [str(s) for s in (cx.get("schedule") or [])]
    key_steps = {str(s) for s in (cx.get("key_steps") or [])}
    if not key_steps:  # the steps that access a variable
        key_steps = {s for s in schedule
                     if getattr(rewritten.node.get(s.partition("@")[0]), "op", None) in ("Read", "Assign")}
    out.append(f"<h2>The run of P′ that breaks it ({len(schedule)} steps, {esc(semantics)} semantics)</h2>")
    out.append('<ol class="chips schedule">' + "".join(
        f'<li class={attr("key" if s in key_steps else "free")}><span class="n">{i}</span>'
        f'<span class="mono">{esc(s)}</span></li>'
        for i, s in enumerate(schedule, 1)) + "</ol>")
    if key_steps and len(key_steps) < len(schedule):
        out.append('<p class="muted">Bold steps access variables: their order makes the outcome; '
                   "the other steps are free to move.</p>")
    var_types = {x: t.dtype for x, t in rewritten.variables.items()}
    feed_types = {f: rewritten.feed_type(f).dtype for f in rewritten.feed_names}
    feeds = _decode(feeds_raw, feed_types, "feed", problems)
    init = _decode(init_raw, var_types, "initial value of", problems)
    try:
        rp = replay(rewritten, feeds, init, schedule, semantics, observe, budget)
    except (KeyError, ValueError, TypeError) as exc:  # an invalid program may not run at all
        rp = Replay([], f"the rewritten program cannot be run: {exc!r}")
    if rp.cut is not None:
        out.append(f'<p class="warning not-drawn">The run is replayed up to step {rp.cut - 1} of '
                   f"{len(schedule)}: the page spent its drawing budget's time; "
                   "<code>tfsem check</code> on the case replays all of it.</p>")
    elif rp.error:
        problems.append(f"the schedule does not replay on P′: {rp.error}")
    elif rp.final is not None and outcome:
        if not _outcome_matches(rp.final, outcome):
            problems.append("replaying the schedule on P′ gives " + rp.final.describe()
                            + ", not the outcome the verdict states")
    out.append('<p class="muted">Each row is the state after one step (“A Computational Model for '
               "TensorFlow”, section 3.2.1): the values in transit on edges (EMPTY edges omitted, as in "
               "the paper's figures; "
               "a dot is GO on a control edge), the variables at the side. The step that fired is "
               "orange, steps already fired are grey, what changed is outlined.</p>")
    out.append(_steps_table(rp, rewritten, layout, differs, key_steps, steps, steps_href, budget))
    return "".join(out)


def _outcomes_table(orig: list[Mapping[str, Any]], outcome: Mapping[str, Any],
                    differs: Mapping[str, Any], problems: list[str], count: int | None = None) -> str:
    cols: list[tuple[str, str]] = []
    for o in [outcome, *orig]:
        for k in _outcome_parts(o):
            if k not in cols:
                cols.append(k)
    cols.sort(key=lambda k: (k[0] != "output", k[1]))
    diff_col = ("output", differs["output"]) if "output" in differs else \
        ("variable", differs["variable"]) if "variable" in differs else None
    head = "".join(f"<th>{'output ' if kind == 'output' else ''}{esc(name)}"
                   f"{'' if kind == 'output' else ' (final)'}</th>" for kind, name in cols)
    rows = []
    mine = _decoded_parts(outcome)
    for i, o in enumerate(orig, 1):
        parts = _outcome_parts(o)
        cells = "".join(f"<td class=\"mono\">{esc(value_text(parts[c])) if c in parts else '—'}</td>"
                        for c in cols)
        witness = o.get("schedule")
        wcell = (f'<td class="mono witness">{esc(" ".join(map(str, witness)))}</td>'
                 if isinstance(witness, list) else '<td class="muted">—</td>')
        rows.append(f'<tr class="original-outcome"><td>P, outcome {i}</td>{cells}{wcell}</tr>')
        if _decoded_parts(o) == mine:
            problems.append(f"the rewritten outcome equals the original's outcome {i}: "
                            "this is not a counterexample")
    parts = _outcome_parts(outcome)
    cells = "".join(
        f"<td class={attr('mono' + (' differs' if c == diff_col else ''))}>"
        f"{esc(value_text(parts[c])) if c in parts else '—'}</td>" for c in cols)
    rows.append(f'<tr class="extra rewritten-outcome"><td><strong>P′, this run</strong> '
                f'{badge("not an outcome of P", "bad")}</td>{cells}'
                '<td class="muted">below, step by step</td></tr>')
    total = count if count is not None and count >= len(orig) else len(orig)
    more = (f'<p class="muted more">… and {total - len(orig)} more outcomes of P, not listed by the '
            "verdict.</p>" if total > len(orig) else "")
    return (f"<h2>Outcomes at σ: the original's {total} beside the rewrite's extra one</h2>"
            f'<table class="outcomes"><thead><tr><th></th>{head}<th>a schedule giving it</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>" + more)


def _edge_words(e: G.EdgeInfo) -> str:
    arrow = {"tensor": "→", "variable": "⇢", "control": "⋯>"}[e.kind]
    dst = f"out {e.dst[1]}" if e.dst[0] == "o" else e.dst[1]
    return f"{G._vname(e.src)} {arrow} {dst}"


def drawn_steps(rp: Replay, key_steps: set[str], steps: str) -> set[int]:
    """Which states get a picture: every one ("all"), or the initial state,
    the states after a step that accesses a variable, and the last state."""
    if steps == "all":
        return {st.index for st in rp.steps}
    last = rp.steps[-1].index if rp.steps else 0
    return {0, last} | {st.index for st in rp.steps if st.label in key_steps}


def _steps_table(rp: Replay, p: Program, layout: G.Layout | None, differs: Mapping[str, Any],
                 key_steps: set[str] = frozenset(), steps: str = "key",
                 steps_href: str | None = None, budget: G.DrawBudget | None = None) -> str:
    edges = layout.sides[1].edges if layout is not None else G.program_edges(p)
    rows = []
    fired_nodes: set[str] = set()
    prev: State | None = None
    draw = layout is not None and len(rp.steps) <= MAX_STEP_FIGURES + 1
    chosen = drawn_steps(rp, key_steps, steps)
    out_of_time = False
    # figures about 800px wide: big enough to read the values on the edges
    scale = max(0.45, min(1.15, 800.0 / max(layout.width + 150.0, 1.0))) if layout is not None else 1.0
    listed = 0
    for st in rp.steps:
        if budget is not None and budget.expired() and st.index:
            break
        listed += 1
        s = st.state
        name, _, phase = (st.label or "").partition("@")
        if st.label and phase != "read":
            fired_nodes.add(name)
        transit: dict[str, G.Transit] = {}
        spans = []
        implicit_go = False
        for e in edges:
            c = s.in_transit.get(e.id, EMPTY)
            tc = _content_text(c)
            if tc is None:
                continue
            changed = prev is not None and not _same(prev.in_transit.get(e.id, EMPTY), c)
            transit[e.id] = G.Transit(tc[0], tc[1], changed)
            if e.implicit:
                implicit_go = True
                continue  # the initial GO of a node without inputs: drawn, not listed
            cls = "transit" + (" changed" if changed else "")
            spans.append(f'<span class={attr(cls)} data-edge={attr(e.id)}>'
                         f"{esc(_edge_words(e))}: <b>{esc(truncate(tc[0], 40))}</b></span>")
        var_items = []
        for x in sorted(s.var_value):
            v = s.var_value[x]
            changed = prev is not None and not _same(prev.var_value.get(x), v)
            var_items.append((x, format_value(v), changed))
        pending = {n: f"read {x} = {truncate(format_value(w), 12)}, v = {truncate(format_value(v), 12)}"
                   for n, (x, w, v) in s.pending.items()}
        vars_html = "<br>".join(
            f'<span class={attr("var" + (" changed" if ch else ""))} data-var={attr(x)}>'
            f"{esc(x)} = {esc(truncate(v, 40))}</span>" for x, v, ch in var_items)
        pend_html = "".join(f'<br><span class="pending" data-node={attr(n)}>{esc(n)}: {esc(t)}</span>'
                            for n, t in sorted(pending.items()))
        nothing = ('<span class="muted">only GO on the implicit input control edges</span>' if implicit_go
                   else '<span class="muted">nothing</span>')
        fig = ""
        if draw and st.index in chosen and budget is not None and budget.expired():
            out_of_time = True
        if draw and st.index in chosen and not out_of_time:
            fig = G.render_svg(layout, 1, uid=f"s{st.index}", role=f"state-{st.index}",
                               transit=transit, fired=name if st.label else None,
                               done=fired_nodes - ({name} if st.label else set()), pending=pending,
                               var_values=var_items, scale=scale, css_class="state-graph",
                               title=f"state after step {st.index}" if st.index else "initial state")
        elif draw and st.index not in chosen:
            fig = ('<a class="more-steps" href=' + attr(f"{steps_href}#step-{st.index}")
                   + ">picture on the all-steps page</a>"
                   if steps_href else '<span class="muted">a free step</span>')
        elif out_of_time:
            fig = '<span class="muted not-drawn">not drawn: the drawing budget\'s time is spent</span>'
        cls = "initial" if st.index == 0 else "step" + (" key" if st.label in key_steps else "")
        what = "initial state" if st.index == 0 else f'<span class="mono">{esc(st.label)}</span>'
        rows.append(f'<tr class="{cls}" id="step-{st.index}" data-step="{st.index}"><td>{st.index}</td><td>{what}</td>'
                    f'<td class="vars">{vars_html}{pend_html}</td>'
                    f'<td class="in-transit">{"<br>".join(spans) or nothing}</td>'
                    f'<td class="fig">{fig}</td></tr>')
        prev = s
    if rp.final is not None:
        parts = dict(rp.final.outputs)
        state = dict(rp.final.state or ())
        items = [("output", k, v) for k, v in sorted(parts.items())] + \
                [("variable", k, v) for k, v in sorted(state.items())]
        cells = ", ".join(
            f'<span class={attr("differs" if differs.get(kind) == k else "")}>'
            f"{esc(k)} {'=' if kind == 'output' else ':='} {esc(format_value(v))}</span>"
            for kind, k, v in items)
        final = f'<p class="final">The run ends with {cells or "nothing observed"}.</p>'
    else:
        final = ""
    if layout is None:
        note = '<p class="muted not-drawn">No pictures of the states: the programs are past the drawing budget.</p>'
    elif not draw:
        note = (f'<p class="muted">{len(rp.steps) - 1} steps: figures are drawn for runs of '
                f"at most {MAX_STEP_FIGURES} steps.</p>")
    elif steps != "all" and len(chosen) < len(rp.steps):
        more = (f' <a class="all-steps" href={attr(steps_href)}>Every step drawn</a>.' if steps_href else "")
        note = (f'<p class="steps-note">Pictures of the {len(chosen)} states that matter: the initial state, '
                f"after each step that accesses a variable (bold), and the last; the "
                f"{len(rp.steps) - len(chosen)} other steps are rows of text.{more}</p>")
    else:
        note = ""
    if listed < len(rp.steps):
        note += (f'<p class="warning not-drawn">Steps {listed} to {len(rp.steps) - 1} are not listed: the page '
                 "spent its drawing budget's time.</p>")
    if out_of_time:
        note += ('<p class="warning not-drawn">Some states are not drawn: the page spent its drawing '
                 "budget's time.</p>")
    return (note + '<table class="steps"><thead><tr><th>#</th><th>step fired</th><th>variables after</th>'
            '<th>in transit after</th><th>state after the step</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>" + final)


def _confirmation(confirmed: Sequence[str], verdict: str, tensorflow_replay: Any = None) -> str:
    if verdict != "unsound":
        return ""
    names = [b for b in confirmed if b not in BACKENDS] + list(BACKENDS)
    items = "".join(
        f'<li class="backend" data-backend={attr(b)}>{badge(b, "good" if b in confirmed else "none")} '
        f"{_confirm_text(b, b in confirmed, tensorflow_replay)}</li>"
        for b in names)
    if isinstance(tensorflow_replay, Mapping) and tensorflow_replay.get("status") == "not-replayed":
        # `check` replayed it on TensorFlow and could not (backends/tensorflow.py)
        items += (f'<li class="backend" data-backend="tensorflow">{badge("tensorflow", "none")} '
                  f"not replayed on TensorFlow: {esc(str(tensorflow_replay.get('reason', '')))}</li>")
    return f'<h2>Where it was confirmed</h2><ul class="confirmed">{items}</ul>'


def _confirm_text(backend: str, ok: bool, tensorflow_replay: Any = None) -> str:
    if not ok:
        return "not confirmed (not run, or unavailable)"
    if backend == "oracle":
        return "the reference semantics replays the schedule to this outcome, and the original has no such outcome"
    if backend == "tensorflow":
        text = ("reproduced on TensorFlow's executor: the rewritten graph, with the schedule forced by "
                "control edges, gives the same outcome")
        # the replay that claimed it ran the original's witness schedules
        # too (backends/tensorflow.py `with_original`): say so, as the
        # text and the JSON do (a finding stored before that replay has
        # no `original`, and its page says only what was run)
        orig = tensorflow_replay.get("original") if isinstance(tensorflow_replay, Mapping) else None
        if isinstance(orig, Mapping) and orig.get("agreed") is True:
            failed, n = orig.get("failed_runs") or 0, orig.get("listed")
            which = "its witness schedule" if n == 1 else \
                f"each of the {n} witness schedules the verdict lists for it"
            fails = ("fails the run where the oracle's outcome has an error output (as "
                     "TensorFlow fails where tfsem carries an error value on)")
            gives = "gives the oracle's outcome" + ("" if n == 1 else " for it")
            text += (f"; the original, with {which} forced the same way, "
                     + (fails if failed == n else gives if not failed else
                        f"{gives} or {fails}: {failed} of them"))
        return text
    return "reproduced: running the schedule concretely on this array backend gives the same outcome"


def _sigma_args(cx: Mapping[str, Any] | None) -> str:
    if not cx:
        return ""
    args = []
    for k, v in sorted((cx.get("feeds") or {}).items()):
        args.append(f"--feed {shlex.quote(f'{k}={json_text(v, indent=None)}')}")
    for k, v in sorted((cx.get("init") or {}).items()):
        args.append(f"--init {shlex.quote(f'{k}={json_text(v, indent=None)}')}")
    return " ".join(args)


def outcome_line(o: Mapping[str, Any]) -> str | None:
    """An outcome as `tfsem outcomes` prints it (`o = 1, x := 2`), or None
    when its values do not decode."""
    try:
        parts = [f"{k} = {format_value(value_from_json(v))}" for k, v in sorted((o.get("outputs") or {}).items())]
        if o.get("state") is not None:
            parts += [f"{k} := {format_value(value_from_json(v))}" for k, v in sorted(o["state"].items())]
    except (ValueFormatError, TypeError, ValueError, AttributeError):
        return None
    return ", ".join(parts) if parts else "(nothing observed)"


@dataclass
class Command:
    """A command the page offers, and what it promises: the exit status and
    a line its output contains (tests run every one of them)."""
    argv: str
    exit: int | None
    says: str
    expect_text: str = ""
    absent_text: str = ""


def _command_html(c: Command) -> str:
    return (f'<li class="command"><code class="command" data-exit={attr("" if c.exit is None else c.exit)} '
            f'data-expect={attr(c.expect_text)} data-absent={attr(c.absent_text)}>{esc(c.argv)}</code>'
            f'<br><span class="muted">{esc(c.says)}</span></li>')


def _reproducer(case_json: Mapping[str, Any], filename: str, original: Program | None,
                rewritten: Program | None, cx: Any, semantics: str, observe: str,
                verdict: str = "", meta: Mapping[str, Any] | None = None,
                runtime: Mapping[str, Any] | None = None) -> str:
    """Download links and the commands that reproduce the finding.  A crash,
    a hang or a non-program (no rewritten program) is reproduced by running
    the pass again (`tfsem rewrite PASS program.json`); a rewritten program
    by `tfsem check` on the case."""
    meta = meta or {}
    base = filename[:-5] if filename.endswith(".json") else filename
    links: list[str] = []
    cmds: list[Command] = []
    settings = ""
    if semantics != ATOMIC:
        settings += f" --semantics {shlex.quote(semantics)}"
    if observe != "outputs+state":
        settings += f" --observe {shlex.quote(observe)}"
    cx = cx if isinstance(cx, Mapping) else None
    has_rewrite = case_json.get("rewritten") is not None
    if has_rewrite:
        text = json_text(case_json)
        links.append(f'<a class="download case" download={attr(filename)} href={attr(data_uri(text))}>'
                     f"download {esc(filename)}</a>")
        code = VERDICT_EXIT.get(verdict)
        says = (f"prints {verdict}, exit status {code}" if code is not None
                else "checks the rewrite again")
        cmds.append(Command(f"tfsem check {shlex.quote(filename)}", code, says,
                            verdict if code is not None else ""))
        cmds.append(Command(f"tfsem check {shlex.quote(filename)} --html {shlex.quote(base + '.html')}",
                            code, says + f", and writes this page as {base}.html",
                            verdict if code is not None else ""))
    for label, prog in (("original", original), ("rewritten", rewritten)):
        if prog is None:
            continue
        try:
            ptext = json_text(program_to_json(prog))
        except (ValueError, TypeError, KeyError):
            continue
        pname = f"{base}.{label}.json"
        links.append(f'<a class="download {label}" download={attr(pname)} href={attr(data_uri(ptext))}>'
                     f"download {esc(pname)}</a>")
        if cx and verdict == "unsound":
            line = outcome_line(cx.get("outcome") or {}) if isinstance(cx.get("outcome"), Mapping) else None
            if label == "original":
                says = "lists P's outcomes at σ" + (f"; {line} is not among them" if line else "")
                expect, absent = "", line or ""
            else:
                says = "lists P′'s outcomes at σ" + (f", {line} among them" if line else "")
                expect, absent = line or "", ""
            cmds.append(Command(f"tfsem outcomes {shlex.quote(pname)} {_sigma_args(cx)}{settings}".rstrip()
                                .replace("  ", " "), 0, says, expect, absent))
    if runtime is not None and original is not None:
        # a runtime finding: the oracle's set at σ, and the runs again
        pname = f"{base}.original.json"
        line = outcome_line(runtime.get("outcome") or {}) if isinstance(runtime.get("outcome"), Mapping) else None
        sigma = _sigma_args(runtime)
        cmds.append(Command(f"tfsem outcomes {shlex.quote(pname)} {sigma}{settings}".rstrip().replace("  ", " "),
                            0, "lists the outcomes the oracle allows at σ"
                            + (f"; {line} is not among them" if line else ""), "", line or ""))
        backend = "xla" if runtime.get("target") == "xla" else "tensorflow"
        cmds.append(Command(f"tfsem run {shlex.quote(pname)} --backend {backend} --runs "
                            f"{runtime.get('runs', 20)} {sigma}".rstrip(), None,
                            "runs it on TensorFlow again and checks each outcome against the oracle; "
                            "timing decides whether the outcome shows again"))
    elif not has_rewrite and original is not None:
        spec = str(meta.get("pass_spec") or meta.get("pass") or "PASS")
        kind = str(meta.get("kind") or verdict)
        pname = f"{base}.original.json"
        if kind == "timeout":
            says = "runs the pass on the program: it does not return (stop it with Ctrl-C)"
            code = None
        elif kind == "crash":
            says = "runs the pass on the program: it fails with the traceback above, exit status 1"
            code = 1
        else:
            says = "runs the pass on the program: it returns no valid program, exit status 1"
            code = 1
        cmds.append(Command(f"tfsem rewrite {shlex.quote(spec)} {shlex.quote(pname)}", code, says,
                            "failed" if kind == "crash" else ""))
        if ":" in spec:
            links.append(f'<span class="muted">run it where <code>{esc(spec.partition(":")[0])}</code> '
                         "imports (the folder of the pass's module, or with it on PYTHONPATH)</span>")
    if has_rewrite:
        shown, label = json_text(case_json), f"the case file ({filename})"
    else:  # no case to check: the program the pass was given
        shown, label = json_text(case_json.get("original")), f"the program ({base}.original.json)"
    return ("<h2>Reproduce it</h2>"
            f'<p class="downloads">{" · ".join(links)}</p>'
            + (f'<ul class="commands">{"".join(_command_html(c) for c in cmds)}</ul>' if cmds else "")
            + (f'<details><summary>{esc(label)}</summary>'
               f'<pre class="case-json">{esc(shown)}</pre></details>' if len(shown) <= SHOW_JSON_MAX else
               f'<p class="muted">{esc(label)}: {len(shown) // 1024} KB, in the download above.</p>'))
