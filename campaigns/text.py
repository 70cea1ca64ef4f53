"""Findings as text: the minimized programs, σ, the breaking schedule and the
outcomes, written for a compiler engineer reading a terminal or a CI log."""

from __future__ import annotations

from typing import Any

from tfsem.oracle.values import ValueFormatError, format_value, value_from_json

from .findings import CRASH, INVALID, TIMEOUT, UNSOUND, FindingRecord


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
