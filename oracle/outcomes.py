"""Outcomes (SPEC section 2): the values of the output edges and, unless only
outputs are observed, the final value of every variable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .values import Value, format_value, value_to_json

OUTPUTS, OUTPUTS_STATE = "outputs", "outputs+state"


@dataclass(frozen=True, slots=True)
class Outcome:
    """Output values sorted by output name; final variable values sorted by
    variable name, or None when only outputs are observed."""
    outputs: tuple[tuple[str, Value], ...]
    state: tuple[tuple[str, Value], ...] | None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"outputs": {k: value_to_json(v) for k, v in self.outputs}}
        if self.state is not None:
            d["state"] = {k: value_to_json(v) for k, v in self.state}
        return d

    def describe(self) -> str:
        parts = [f"{k} = {format_value(v)}" for k, v in self.outputs]
        if self.state is not None:
            parts += [f"{k} := {format_value(v)}" for k, v in self.state]
        return ", ".join(parts) if parts else "(nothing observed)"

    def first_difference(self, others: "list[Outcome]") -> dict[str, str] | None:
        """Which part differs first, checked in stages like Alive2: outputs
        (by name), then final variable values (by name).  It is the part at
        which the shortest prefix of this outcome that no outcome in `others`
        shares ends.  None when this outcome is among `others`."""
        parts = [("output", k, v) for k, v in self.outputs]
        parts += [("variable", k, v) for k, v in (self.state or ())]
        candidates = list(others)
        for i, (kind, name, value) in enumerate(parts):
            candidates = [o for o in candidates if o._part(i) == value]
            if not candidates:
                return {kind: name}
        return None

    def _part(self, i: int) -> Value:
        return self.outputs[i][1] if i < len(self.outputs) else (self.state or ())[i - len(self.outputs)][1]


def make_outcome(outputs: Mapping[str, Value], state: Mapping[str, Value], observe: str) -> Outcome:
    outs = tuple(sorted(outputs.items(), key=lambda kv: kv[0]))
    st = None if observe == OUTPUTS else tuple(sorted(state.items(), key=lambda kv: kv[0]))
    return Outcome(outs, st)


def combine(parts: "list[Outcome]", observe: str | None = None) -> Outcome:
    """The outcome of a program made of independent components.  With no
    component at all (a program with no node and no variable) the parts do
    not say what is observed: `observe` does (its state is None when only
    outputs are observed, else ())."""
    if not parts and observe is not None:
        return Outcome((), None if observe == OUTPUTS else ())
    outputs = tuple(sorted((kv for o in parts for kv in o.outputs), key=lambda kv: kv[0]))
    if parts and parts[0].state is None:
        return Outcome(outputs, None)
    state = tuple(sorted((kv for o in parts for kv in (o.state or ())), key=lambda kv: kv[0]))
    return Outcome(outputs, state)
