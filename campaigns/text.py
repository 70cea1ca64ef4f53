"""Findings as text: the minimized programs, σ, the breaking schedule and the
outcomes, written for a compiler engineer reading a terminal or a CI log."""

from __future__ import annotations

from typing import Any

from tfsem.oracle.values import ValueFormatError, format_value, value_from_json

from .findings import CRASH, INVALID, TIMEOUT, UNSOUND, FindingRecord


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 finding`, `2 findings`: a count with its noun in the right number
    (`plural` where adding an s is wrong)."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"


def _value(raw: Any) -> str:
    try:
        return format_value(value_from_json(raw))
    except (ValueFormatError, TypeError, ValueError):
        return str(raw)


def program_lines(program: dict, indent: str = "    ") -> list[str]:
    """One line per node, `name = Op[attrs](inputs)`, then the outputs."""
    lines = []
    variables = program.get("variables", [])
    names = list(variables) if isinstance(variables, (list, dict)) else []
    if names:
        lines.append(f"{indent}variables: {', '.join(names)}")
    for n in program.get("nodes", []):
        attrs = []
        if "var" in n:
            attrs.append(str(n["var"]))
        if "fn" in n:
            attrs.append(f"fn={n['fn']}")
        if "value" in n:
            attrs.append(_value(n["value"]))
        op = n.get("op", "?") + (f"[{', '.join(attrs)}]" if attrs else "")
        lines.append(f"{indent}{n.get('name')} = {op}({', '.join(n.get('inputs', []))})")
    outputs = program.get("outputs", {})
    if outputs:
        lines.append(f"{indent}outputs: {', '.join(f'{k} = {v}' for k, v in outputs.items())}")
    return lines


def outcome_text(outcome: dict) -> str:
    parts = [f"{k} = {_value(v)}" for k, v in (outcome.get("outputs") or {}).items()]
    parts += [f"{k} := {_value(v)}" for k, v in (outcome.get("state") or {}).items()]
    return ", ".join(parts) if parts else "(nothing observed)"


def sigma_text(feeds: dict, init: dict) -> list[str]:
    f = ", ".join(f"{k} = {_value(v)}" for k, v in sorted(feeds.items())) or "(none)"
    i = ", ".join(f"{k} = {_value(v)}" for k, v in sorted(init.items())) or "(all uninitialized)"
    return [f"  feeds: {f}", f"  init:  {i}"]


def finding_lines(record: FindingRecord) -> list[str]:
    """The whole story of one finding (without the reproducer)."""
    lines = [f"  original program ({record.size} nodes):", *program_lines(record.original)]
    if record.kind == UNSOUND:
        verdict = record.verdict or {}
        cex = verdict.get("counterexample") or {}
        lines += ["  rewritten program:", *program_lines(record.rewritten or {})]
        lines += sigma_text(cex.get("feeds", record.feeds), cex.get("init", record.init))
        if record.schedule:
            lines.append(f"  rewritten schedule: {' '.join(record.schedule)}")
        if cex.get("outcome"):
            lines.append(f"  rewritten outcome:  {outcome_text(cex['outcome'])}  <- not an outcome "
                         "of the original")
        originals = cex.get("original_outcomes") or []
        count = cex.get("original_count", len(originals))
        lines.append(f"  original outcomes at this σ ({count}):")
        for i, o in enumerate(originals, 1):
            lines.append(f"    {i}. {outcome_text(o)}")
            if o.get("schedule"):
                lines.append(f"       schedule: {' '.join(o['schedule'])}")
        if len(originals) < count:
            lines.append(f"    ... {count - len(originals)} more")
    elif record.kind == INVALID:
        if record.rewritten is not None:
            lines += ["  rewritten program:", *program_lines(record.rewritten)]
        for v in record.detail.get("violations", []):
            lines.append(f"  problem: {v}")
    elif record.kind == CRASH:
        tb = (record.detail.get("traceback") or "").rstrip().splitlines()
        if tb:
            lines.append("  traceback (last lines):")
            lines += [f"    {line}" for line in tb[-8:]]
    elif record.kind == TIMEOUT:
        lines.append(f"  the pass did not return within {record.detail.get('timeout', '?')} s")
    return lines


# ---------------------------------------------------------------------------
# How hard a run tried


#: A pass that changes fewer than this share of the generated programs gets a
#: warning: its "no counterexample" rests on few rewrites.
RARELY_CHANGES = 0.2
#: ... once at least this many programs were tried (fewer say nothing).
RARELY_CHANGES_MIN_PROGRAMS = 20


def changed_count(stats: dict) -> int:
    """Programs the pass actually changed (tried minus left unchanged)."""
    return max(0, int(stats.get("programs", 0)) - int(stats.get("identical", 0)))


def effort_text(stats: dict) -> str:
    """`183 programs, 30 changed: 12 proved sound, 15 no counterexample, 3
    unknown` from a statistics dict (LoopStats.to_json() or a pass_stats
    row); checker and generator errors are named when there were any."""
    programs = int(stats.get("programs", 0))
    parts = [f"{int(stats[k])} {label}" for k, label in (("sound", "proved sound"),
                                                          ("no_counterexample", "no counterexample"),
                                                          ("unknown", "unknown")) if stats.get(k)]
    changed = changed_count(stats)
    judged = sum(int(stats.get(k, 0)) for k in ("sound", "no_counterexample", "unknown", "checker_errors"))
    if changed > judged:  # the rest failed: findings, and the shrinker's attempts at them
        parts.append(f"{changed - judged} failing")
    text = f"{programs} program{'s' if programs != 1 else ''}, {changed} changed"
    if parts:
        text += ": " + ", ".join(parts)
    errors = int(stats.get("checker_errors", 0)) + int(stats.get("generator_errors", 0))
    if errors:
        text += f"; {errors} error{'s' if errors != 1 else ''}"
    return text


def rarely_changes(stats: dict) -> bool:
    programs = int(stats.get("programs", 0))
    return programs >= RARELY_CHANGES_MIN_PROGRAMS and changed_count(stats) < RARELY_CHANGES * programs


def rarely_changes_warning(pass_name: str, stats: dict, where: str = "") -> str | None:
    """The warning for a pass that almost never changed a generated program,
    or None."""
    if not rarely_changes(stats):
        return None
    programs, changed = int(stats.get("programs", 0)), changed_count(stats)
    at = f" in {where}" if where else ""
    return (f"warning: {pass_name} changed only {changed} of {programs} generated programs{at} "
            f"({100 * changed / programs:.0f}%): its results rest on few rewrites; give it programs "
            "it rewrites (--generator MODULE:ATTR, a larger --max-nodes) before trusting "
            "'no counterexample'")
