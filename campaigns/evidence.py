"""How much evidence stands behind "no counterexample": a weak campaign is
never green.

A pass is only tested on the programs it changes: one that left 990 of
1000 generated programs alone was tested on 10, and a clean result says
little.  So each cell of `tfsem verify` and `tfsem fuzz` that ends without an
unsound finding is judged on two figures:

* **changed**: programs the pass changed (tried minus left unchanged);
* **shapes**: distinct *change shapes* among them (campaigns/steer.py,
  `change_shape`: which kinds of nodes and edges the pass removed, added or
  redirected).  Ten rewrites that all drop one Read are one experiment
  repeated, not ten.

A cell with fewer than :data:`MIN_CHANGED` changed programs or fewer than
:data:`MIN_SHAPES` shapes is **weak**.  When a run has no finding that
contradicts a claim but has a weak cell, it exits with
:data:`EXIT_WEAK` (4) instead of 0, and says which cells, with the figures.
The cure is to give the pass programs it rewrites: a longer budget, a
larger `--max-nodes`, or a generator of its own (`--generator`).

In `tfsem fuzz` each slice sends the shapes it saw first (`new_shapes` in
its statistics), and the campaign database keeps every distinct shape per
cell (store.py, schema 3: `pass_shapes`, and their number in
`pass_stats.shapes`), so a shape seen by several workers counts once and
`tfsem report` judges its cells by both figures.  A campaign stored before
schema 3 kept no shapes: its cells are judged by the changed count alone.
"""

from __future__ import annotations

from typing import Any, Mapping

#: the exit status of a run with no finding against a claim and a weak cell
EXIT_WEAK = 4
#: fewer changed programs than this in a cell: weak
MIN_CHANGED = 30
#: fewer distinct change shapes than this in a cell: weak
MIN_SHAPES = 2


def changed_count(stats: Mapping[str, Any]) -> int:
    return max(0, int(stats.get("programs", 0) or 0) - int(stats.get("identical", 0) or 0))


def shapes_count(stats: Mapping[str, Any]) -> int | None:
    """Distinct change shapes, or None when the figure was not kept."""
    v = stats.get("shapes")
    return None if v is None else int(v)


def weak_reason(stats: Mapping[str, Any]) -> str | None:
    """Why a cell's evidence is weak (its figures), or None when it is not."""
    changed, shapes = changed_count(stats), shapes_count(stats)
    programs = int(stats.get("programs", 0) or 0)
    why = []
    if changed < MIN_CHANGED:
        why.append(f"the pass changed {changed} of {programs} programs ({MIN_CHANGED} needed)")
    if shapes is not None and shapes < MIN_SHAPES:
        why.append(f"{shapes} distinct change shape{'s' if shapes != 1 else ''} "
                   f"({MIN_SHAPES} needed)")
    return "; ".join(why) or None


def evidence_text(stats: Mapping[str, Any]) -> str:
    """`412 changed, 17 shapes` (shapes left out when not kept)."""
    shapes = shapes_count(stats)
    text = f"{changed_count(stats)} changed"
    if shapes is not None:
        text += f", {shapes} shape{'s' if shapes != 1 else ''}"
    return text


def evidence_json(stats: Mapping[str, Any]) -> dict:
    reason = weak_reason(stats)
    return {"changed": changed_count(stats), "shapes": shapes_count(stats),
            "weak": reason is not None, "why": reason or "",
            "min_changed": MIN_CHANGED, "min_shapes": MIN_SHAPES}


WEAK_ADVICE = ("give the pass programs it rewrites (a longer --budget, a larger --max-nodes, "
               "or --generator MODULE:ATTR) before trusting 'no counterexample'")


def attach_shapes(rows: list[dict], totals: Mapping[tuple, Mapping[str, Any]],
                  names: Mapping[str, str], runtime: set[str] = frozenset()) -> None:
    """Give each `Store.pass_statistics` row (pass name, semantics, observe)
    the `shapes` figure summed in `totals` ((pass spec, semantics, observe)
    -> counters, as a campaign's coordinator accumulates them); rows of the
    runtime targets named in `runtime` (which rewrite nothing) are marked
    `runtime` and never weak."""
    by_name = {(names.get(spec, spec), sem, obs): acc for (spec, sem, obs), acc in totals.items()}
    for r in rows:
        if r.get("pass") in runtime:
            r["runtime"] = True
            continue
        acc = by_name.get((r.get("pass"), r.get("semantics"), r.get("observe")))
        if acc is not None and "shapes" in acc and r.get("shapes") is None:
            r["shapes"] = int(acc["shapes"])


def weak_rows(rows: list[dict]) -> list[dict]:
    """The campaign cells (pass_statistics rows) without an unsound finding
    whose evidence is weak."""
    return [r for r in rows if not r.get("runtime")
            and not (r.get("findings") or {}).get("unsound") and weak_reason(r)]
