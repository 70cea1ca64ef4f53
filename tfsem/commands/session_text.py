"""A session's outcomes as text and JSON: each run's outputs grouped
(`tfsem outcomes`, `run` and `check` of sessions)."""

from __future__ import annotations


def session_json(data: dict, session, **extra) -> dict:
    """An outcome's JSON; for a session, with `by_run`: each run's outputs
    (RUN -> {OUT: value}) beside the flat `outputs` (RUN/OUT -> value)."""
    if session is not None:
        from tfsem.oracle.session import group_outputs  # noqa: PLC0415
        data = dict(data, by_run=group_outputs(data["outputs"], session.run_names))
    return dict(data, **extra)


def describe(outcome, session) -> str:
    """An outcome in one line; a session's outputs grouped by run
    (`train: loss = 1; eval: acc = 2; x := 3`)."""
    if session is None:
        return outcome.describe()
    from tfsem.oracle.values import format_value  # noqa: PLC0415
    from tfsem.oracle.session import group_outputs  # noqa: PLC0415
    groups = group_outputs(dict(outcome.outputs), session.run_names)
    parts = [f"{run}: " + (", ".join(f"{k} = {format_value(v)}" for k, v in outs.items())
                           or "(no outputs)") for run, outs in groups.items()]
    if outcome.state is not None:
        parts.append(", ".join(f"{k} := {format_value(v)}" for k, v in outcome.state) or "(no state)")
    return "; ".join(parts)
