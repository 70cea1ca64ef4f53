"""Programs shared by the control-flow engine's tests."""

from __future__ import annotations


def counter_loop_f(trips: int) -> list[dict]:
    """The nodes of a loop F that counts from 0 while below `trips`: its
    Switch `sw` sends the counter to the body `body` (port 1, live in each
    trip) or to the Exit `exitF` (port 0, live after the last trip); the
    body adds 1 (`addF`) and sends it back through `nextF`."""
    return [
        {"name": "i0", "op": "Const", "value": 0},
        {"name": "enterF", "op": "Enter", "frame_name": "F", "inputs": ["i0"]},
        {"name": "kF", "op": "Const", "value": trips},
        {"name": "limF", "op": "Enter", "frame_name": "F", "is_constant": True, "inputs": ["kF"]},
        {"name": "mergeF", "op": "Merge", "inputs": ["enterF", "nextF"]},
        {"name": "lessF", "op": "Less", "inputs": ["mergeF", "limF"]},
        {"name": "condF", "op": "LoopCond", "inputs": ["lessF"]},
        {"name": "sw", "op": "Switch", "inputs": ["mergeF", "condF"]},
        {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
        {"name": "oneF", "op": "Const", "value": 1, "inputs": ["^body"]},
        {"name": "addF", "op": "Add", "inputs": ["body", "oneF"]},
        {"name": "nextF", "op": "NextIteration", "inputs": ["addF"]},
        {"name": "exitF", "op": "Exit", "inputs": ["sw"]},
    ]
