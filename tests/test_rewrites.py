"""The pass API, the registry, the `passes` and `rewrite` commands, and each
built-in pass on hand-made programs: the expected program, and, for every cell
where a pass claims `unsound`, a program and σ at which the oracle shows an
outcome of the rewrite that the original lacks.

Generated programs (validity, purity, determinism, sound claims) are in
test_rewrites_generated.py; the entry-point plugin in test_rewrites_plugin.py.
"""

from __future__ import annotations

import importlib
import json
import textwrap

import pytest

from tfsem import cli
from tfsem.generators import families as F
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import load_program, program_to_json
from tfsem.oracle.program import ASSIGN, READ, ControlIn, Program, TensorType
from tfsem.oracle.values import Tensor
from tfsem.rewrites import (BUILTINS, CELLS, SOUND, UNSOUND, Pass, PassNotFound, all_passes, claims,
                            get_pass, load_pass)
from tfsem.rewrites.hoist_reads import hoist
from tfsem.generators.control_flow import licm_reads_witness, xla_lift_witness

S, U = SOUND, UNSOUND

#: The truth table (issue 4), cells in order (atomic, outputs+state),
#: (atomic, outputs), (decomposed, outputs+state), (decomposed, outputs).
TRUTH = {
    "prune":              (U, S, U, S),
    "prune-keep-state":   (S, S, S, S),
    "cse":                (S, S, S, S),
    "cse-ignore-control": (U, U, U, U),
    "cse-stateful":       (U, U, S, S),
    "hoist-reads":        (U, U, U, U),
    "hoist-reads-safe":   (S, S, S, S),
    "split-assign":       (U, U, S, S),
    "fuse-assign":        (S, S, S, S),
    "reduce-control":     (S, S, S, S),
    "const-fold":         (S, S, S, S),
    "dce":                (S, S, S, S),
    # the control-flow passes (issue 24; tests/test_check_control_flow.py)
    "dead-branch":        (S, S, S, S),
    "licm":               (S, S, S, S),
    "licm-reads":         (U, U, U, U),
    "xla-lift":           (U, U, U, U),
}


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def new_outcomes(p: Program, q: Program, feeds, init, semantics, observe):
    """Outcomes of q at σ that p lacks."""
    original = outcome_set(p, feeds, init, semantics, observe)
    return [o for o in outcome_set(q, feeds, init, semantics, observe) if o not in original]


# ---------------------------------------------------------------------------
# The API and the registry


#: The session passes (issue 25; tests/test_rewrites_sections.py): no claim on
#: plain programs (they have no critical sections); claims per kind of
#: session, the same in both modes: one run, sequential runs, concurrent
#: runs, concurrent runs with a queue.
SESSION_TRUTH = {
    "drop-sections":  (S, S, U, U),
    "merge-sections": (S, S, S, U),
}


def test_builtins_with_the_issues_truth_table():
    assert list(BUILTINS) == list(TRUTH) + list(SESSION_TRUTH)
    from tfsem.rewrites.api import SESSION_KINDS
    for name, row in SESSION_TRUTH.items():
        p = BUILTINS[name]
        assert p.claims == {} and p.session_function is not None
        for semantics in ("atomic", "decomposed"):
            assert tuple(p.session_claims[(semantics, k)] for k in SESSION_KINDS) == row, name
    for name, row in TRUTH.items():
        p = BUILTINS[name]
        assert p.name == name
        assert p.description and "\n" not in p.description
        assert {cell: p.claim(*cell) for cell in CELLS} == dict(zip(CELLS, row)), name
        assert "sound" in p.doc and len(p.doc) > 200, f"{name} lacks its documentation"


def test_all_passes_contains_the_builtins_first():
    passes = all_passes()
    assert list(passes)[:len(TRUTH)] == list(TRUTH)
    assert all(isinstance(p, Pass) for p in passes.values())


def test_each_builtin_lives_in_its_own_documented_module():
    for name, p in BUILTINS.items():
        module = importlib.import_module("tfsem.rewrites." + name.replace("-", "_"))
        assert module.PASS is p
        assert module.__doc__ == p.doc


def test_pass_rejects_bad_claims_and_descriptions():
    f = lambda p: p  # noqa: E731
    with pytest.raises(ValueError, match="unknown cell"):
        Pass("p", "d", {("atomic", "state"): S}, "", f)
    with pytest.raises(ValueError, match="not 'sound' or 'unsound'"):
        Pass("p", "d", {("atomic", "outputs"): "maybe"}, "", f)
    with pytest.raises(ValueError, match="one line"):
        Pass("p", "two\nlines", {}, "", f)
    with pytest.raises(ValueError, match="without spaces"):
        Pass("my pass", "d", {}, "", f)
    with pytest.raises(TypeError):
        Pass("p", "d", {}, "", "not callable")


def test_pass_call_checks_the_result_is_a_program():
    bad = Pass("bad", "returns a string", {}, "", lambda p: "oops")
    with pytest.raises(TypeError, match="not a Program"):
        bad(F.first_example()[0])


def test_claims_helper_and_json():
    table = claims(atomic=(U, S), decomposed=(S, S))
    assert table[("atomic", "outputs+state")] == U and table[("atomic", "outputs")] == S
    p = Pass("p", "d", table, "", lambda q: q)
    assert p.claims_json() == {"atomic": {"outputs+state": U, "outputs": S},
                               "decomposed": {"outputs+state": S, "outputs": S}}
    assert p.cells(U) == [("atomic", "outputs+state")]
    assert Pass("q", "d", {}, "", lambda q: q).claim("atomic", "outputs") is None


def test_get_pass_by_name_and_errors():
    assert get_pass("cse") is BUILTINS["cse"]
    with pytest.raises(PassNotFound, match="no pass named 'nope'.*prune"):
        get_pass("nope")
    assert issubclass(PassNotFound, ValueError)


def test_get_pass_module_attribute_pass_or_function():
    p = get_pass("tfsem.rewrites.cse:PASS")
    assert p.name == "cse" and p.claims == BUILTINS["cse"].claims
    # a plain function is wrapped as a pass that claims nothing
    f = get_pass("tfsem.rewrites.prune:prune")
    assert f.name == "tfsem.rewrites.prune:prune" and f.claims == {}
    prog = F.racy_pairs(1)[0]
    assert f(prog) == BUILTINS["prune"](prog)
    # dotted attributes
    g = get_pass("tfsem.rewrites.registry:BUILTINS.get")
    assert g.claims == {}


@pytest.mark.parametrize("spec, message", [
    ("no_such_module_xyz:f", "cannot import 'no_such_module_xyz'"),
    ("tfsem.rewrites.cse:nothing_here", "has no attribute 'nothing_here'"),
    ("tfsem.rewrites.registry:ENTRY_POINT_GROUP", "neither a tfsem.rewrites.Pass nor a function"),
    (":f", "not a pass spec"),
    ("missing_file.py:f", "no such file"),
])
def test_load_pass_errors(spec, message):
    with pytest.raises(PassNotFound, match=message):
        load_pass(spec)


def test_load_pass_from_a_file(tmp_path):
    path = tmp_path / "mypass.py"
    path.write_text(textwrap.dedent('''
        def identity(program):
            """Returns the program unchanged."""
            return program
    '''))
    p = load_pass(f"{path}:identity")
    assert p.description == "Returns the program unchanged."
    prog = F.first_example()[0]
    assert p(prog) is prog


# ---------------------------------------------------------------------------
# The commands


def test_passes_command_text_lists_names_and_claims(capsys):
    code, out, _ = run_cli(capsys, "passes")
    assert code == cli.EXIT_OK
    lines = out.splitlines()
    assert "atomic" in lines[0] and "decomposed" in lines[0]
    for name, row in TRUTH.items():
        (line,) = [ln for ln in lines if ln.split()[:1] == [name]]
        assert line.split()[1:5] == list(row), line
        assert BUILTINS[name].description in line


def test_passes_command_json(capsys):
    code, out, _ = run_cli(capsys, "passes", "--json")
    assert code == cli.EXIT_OK
    data = json.loads(out)
    by_name = {p["name"]: p for p in data["passes"]}
    assert set(TRUTH) <= set(by_name)
    for name, row in TRUTH.items():
        got = by_name[name]["claims"]
        assert [got[s][o] for s, o in CELLS] == list(row)
        assert by_name[name]["origin"] == "builtin"
    assert isinstance(data["errors"], list)


def test_passes_command_doc(capsys):
    code, out, _ = run_cli(capsys, "passes", "--doc")
    assert code == cli.EXIT_OK
    assert "Load/Store Reordering" in out


def test_rewrite_command_prune_first_example(capsys):
    code, out, _ = run_cli(capsys, "rewrite", "prune", "examples/first_example.json")
    assert code == cli.EXIT_OK
    # every node of the first example is needed for its output
    assert json.loads(out) == program_to_json(load_program("examples/first_example.json"))


def test_rewrite_command_writes_file(capsys, tmp_path):
    out_file = tmp_path / "out.json"
    code, out, _ = run_cli(capsys, "rewrite", "hoist-reads", "examples/first_example.json",
                           "-o", str(out_file))
    assert code == cli.EXIT_OK and out == ""
    q = load_program(out_file)
    assert q == BUILTINS["hoist-reads"](load_program("examples/first_example.json"))
    assert ControlIn("r") in q.node["w"].inputs


def test_rewrite_command_module_attribute(capsys):
    code, out, _ = run_cli(capsys, "rewrite", "tfsem.rewrites.dce:dce", "examples/first_example.json")
    assert code == cli.EXIT_OK
    assert json.loads(out)["format"] == "tfsem.program/1"


def test_rewrite_command_unknown_pass_is_usage_error(capsys):
    code, _, err = run_cli(capsys, "rewrite", "nope", "examples/first_example.json")
    assert code == cli.EXIT_BAD_INPUT
    assert "no pass named 'nope'" in err and "Traceback" not in err


def test_rewrite_command_bad_program_is_bad_input(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": [{"name": "r", "op": "Read"}]}')
    code, _, err = run_cli(capsys, "rewrite", "cse", str(bad))
    assert code == cli.EXIT_BAD_INPUT and "arity" in err


def test_rewrite_command_invalid_result_or_crash_exit_1(capsys, tmp_path):
    path = tmp_path / "badpasses.py"
    path.write_text(textwrap.dedent('''
        from tfsem.oracle.program import Program
        def dangling(p):
            return Program(p.variables, p.nodes[:1], p.outputs, p.feeds)
        def crash(p):
            raise RuntimeError("boom")
    '''))
    code, out, err = run_cli(capsys, "rewrite", f"{path}:dangling", "examples/first_example.json")
    assert code == cli.EXIT_FOUND and "invalid program" in err and "unknown-node" in err
    assert json.loads(out)["nodes"] == [{"name": "vx", "op": "Var", "var": "x"}]
    code, out, err = run_cli(capsys, "rewrite", f"{path}:crash", "examples/first_example.json")
    assert code == cli.EXIT_FOUND and "RuntimeError: boom" in err


# ---------------------------------------------------------------------------
# Each pass on hand-made programs: the expected program


def test_prune_keeps_what_outputs_depend_on():
    p = P.program([P.var("vx", "x"), P.write("w", "vx", "$B"),
                   P.var("vx2", "x"), P.read("r", "vx2"),
                   P.const("c", 1), P.apply("n", "Neg", "c", "^r"),
                   P.apply("m", "Neg", "$a")],
                  {"out": "m", "out2": "r"}, ["x"])
    expected = P.program([P.var("vx2", "x"), P.read("r", "vx2"), P.apply("m", "Neg", "$a")],
                         {"out": "m", "out2": "r"}, ["x"], feeds={"B": TensorType()})
    assert BUILTINS["prune"](p) == expected
    # control edges count as dependencies
    p2 = P.program([P.var("vx", "x"), P.write("w", "vx", "$B"),
                    P.var("vx2", "x"), P.read("r", "vx2", "^w")], {"out": "r"}, ["x"])
    assert BUILTINS["prune"](p2) == p2


def test_prune_keep_state_keeps_assigns_and_their_inputs():
    p = P.program([P.var("vx", "x"), P.apply("b", "Neg", "$B"), P.write("w", "vx", "b"),
                   P.var("vx2", "x"), P.read("r", "vx2"),
                   P.const("c", 1), P.apply("n", "Neg", "c", "^r")],
                  {}, ["x"])
    expected = P.program([P.var("vx", "x"), P.apply("b", "Neg", "$B"), P.write("w", "vx", "b")],
                         {}, ["x"])
    assert BUILTINS["prune-keep-state"](p) == expected
    assert BUILTINS["prune"](p) == P.program([], {}, ["x"], feeds={"B": TensorType()})


def _cse_program() -> Program:
    return P.program([
        P.var("vx", "x"), P.var("vy", "x"),
        P.read("r1", "vx"), P.read("r2", "vy"),
        P.write("w", "vx", "$a"), P.read("r3", "vy", "^w"),
        P.apply("s1", "Add", "r1", "$a"), P.apply("s2", "Add", "r2", "$a"),
        P.assign("a1", "Add", "vx", "s1"), P.assign("a2", "Add", "vy", "s2"),
        P.const("c1", 1), P.const("c2", 1), P.const("c3", 1, dtype="float32"),
        P.apply("t", "Copy", "c2"), P.apply("u", "Copy", "c1"),
    ], {"o1": "s1", "o2": "s2", "o3": "r3", "o4": "t:1", "o5": "c3"}, ["x"])


def test_cse_merges_identical_nodes_but_not_assigns():
    expected = P.program([
        P.var("vx", "x"), P.read("r1", "vx"),
        P.write("w", "vx", "$a"), P.read("r3", "vx", "^w"),
        P.apply("s1", "Add", "r1", "$a"),
        P.assign("a1", "Add", "vx", "s1"), P.assign("a2", "Add", "vx", "s1"),
        P.const("c1", 1), P.const("c3", 1, dtype="float32"),
        P.apply("u", "Copy", "c1"),
    ], {"o1": "s1", "o2": "s1", "o3": "r3", "o4": "u:1", "o5": "c3"}, ["x"])
    assert BUILTINS["cse"](_cse_program()) == expected


def test_cse_ignore_control_merges_across_the_write():
    q = BUILTINS["cse-ignore-control"](_cse_program())
    assert "r3" not in q.node and str(q.outputs["o3"]) == "r1"
    assert "a2" in q.node


def test_cse_stateful_merges_identical_assigns():
    q = BUILTINS["cse-stateful"](_cse_program())
    assert "a2" not in q.node and "a1" in q.node and "r3" in q.node


def test_cse_compares_control_inputs_as_a_set():
    p = P.program([P.const("c", 1), P.const("d", 2),
                   P.apply("n1", "Neg", "$a", "^c", "^d"), P.apply("n2", "Neg", "$a", "^d", "^c")],
                  {"o1": "n1", "o2": "n2"})
    q = BUILTINS["cse"](p)
    assert "n2" not in q.node and str(q.outputs["o2"]) == "n1"


def test_hoist_reads_first_example():
    p, _, _ = F.first_example()
    expected = P.program([P.var("vx", "x"), P.write("w", "vx", "$B", "^r"),
                          P.var("vx2", "x"), P.read("r", "vx2")], {"out": "r"}, ["x"])
    assert BUILTINS["hoist-reads"](p) == expected


def test_hoist_reads_gives_an_ordered_handle_a_fresh_var():
    p = P.program([P.var("vx", "x"), P.write("w", "vx", "$B"),
                   P.var("vx2", "x", "^w"), P.read("r", "vx2")], {"out": "r"}, ["x"])
    expected = P.program([P.var("vx", "x"), P.write("w", "vx", "$B", "^r"),
                          P.var("vx2", "x", "^w"), P.var("r/var", "x"), P.read("r", "r/var")],
                         {"out": "r"}, ["x"])
    assert BUILTINS["hoist-reads"](p) == expected


def test_hoist_reads_safe_hoists_only_reads_after_pure_nodes():
    p = P.program([P.const("c", 1), P.var("vx", "x"), P.read("r", "vx", "^c"),
                   P.write("w", "vx", "c"), P.var("vx2", "x"), P.read("r2", "vx2", "^w")],
                  {"o": "r", "o2": "r2"}, ["x"])
    expected = P.program([P.const("c", 1), P.var("vx", "x"), P.read("r", "vx"),
                          P.write("w", "vx", "c", "^r"), P.var("vx2", "x"),
                          P.read("r2", "vx2", "^w")],
                         {"o": "r", "o2": "r2"}, ["x"])
    assert BUILTINS["hoist-reads-safe"](p) == expected
    # seed 002's load/store: r0 is ordered after a store, so it stays
    ls = F.load_store()[0]
    assert BUILTINS["hoist-reads-safe"](ls) == ls
    assert BUILTINS["hoist-reads"](ls) != ls


def test_split_assign_increments():
    p, _, _ = F.increments(1)
    expected = P.program([P.var("v0", "x"), P.const("one0", 1),
                          P.read("inc0/read", "v0", "^one0"),
                          P.apply("inc0/Add", "Add", "inc0/read", "one0"),
                          P.write("inc0", "v0", "inc0/Add")], {}, ["x"])
    assert BUILTINS["split-assign"](p) == expected


def test_split_assign_keeps_control_and_skips_writes():
    p = P.program([P.var("v", "x"), P.write("w", "v", "$a"),
                   P.assign("a", "Max", "v", "$b", "^w"),
                   P.var("v2", "x"), P.read("r", "v2", "^a")], {"o": "r"}, ["x"])
    expected = P.program([P.var("v", "x"), P.write("w", "v", "$a"),
                          P.read("a/read", "v", "^w"), P.apply("a/Max", "Max", "a/read", "$b"),
                          P.write("a", "v", "a/Max"),
                          P.var("v2", "x"), P.read("r", "v2", "^a")], {"o": "r"}, ["x"])
    assert BUILTINS["split-assign"](p) == expected


def test_fuse_assign_lost_update():
    p, _, _ = F.lost_update(1)
    expected = P.program([P.const("one0", 1), P.var("vw0", "x"),
                          P.assign("w0", "Add", "vw0", "one0")], {}, ["x"])
    assert BUILTINS["fuse-assign"](p) == expected


def test_fuse_assign_carries_control_and_keeps_shared_var():
    p = P.program([P.var("v", "x"), P.const("c", 5), P.read("r", "v", "^c"),
                   P.apply("f", "Sub", "r", "$a"), P.write("w", "v", "f"),
                   P.var("v3", "x", "^c"), P.read("r3", "v3"),
                   P.apply("g", "Add", "r3", "$a"), P.var("v4", "x"), P.write("w3", "v4", "g")],
                  {}, ["x"])
    expected = P.program([P.var("v", "x"), P.const("c", 5),
                          P.assign("w", "Sub", "v", "$a", "^c"),
                          P.var("v4", "x"), P.assign("w3", "Add", "v4", "$a", "^c")],
                         {}, ["x"])
    assert BUILTINS["fuse-assign"](p) == expected


@pytest.mark.parametrize("why, p", [
    ("read fetched", P.program([P.var("v", "x"), P.read("r", "v"), P.apply("f", "Add", "r", "$a"),
                                P.write("w", "v", "f")], {"o": "r"}, ["x"])),
    ("read used twice", P.program([P.var("v", "x"), P.read("r", "v"), P.apply("f", "Add", "r", "r"),
                                   P.write("w", "v", "f")], {}, ["x"])),
    ("read is second argument", P.program([P.var("v", "x"), P.read("r", "v"),
                                           P.apply("f", "Sub", "$a", "r"), P.write("w", "v", "f")],
                                          {}, ["x"])),
    ("other variable", P.program([P.var("v", "x"), P.read("r", "v"), P.apply("f", "Add", "r", "$a"),
                                  P.var("u", "y"), P.write("w", "u", "f")], {}, ["x", "y"])),
    ("f has a control successor", P.program([P.var("v", "x"), P.read("r", "v"),
                                             P.apply("f", "Add", "r", "$a"), P.write("w", "v", "f"),
                                             P.apply("g", "Neg", "$a", "^f")], {"o": "g"}, ["x"])),
])
def test_fuse_assign_leaves_non_patterns(why, p):
    assert BUILTINS["fuse-assign"](p) == p, why


def test_split_then_fuse_then_reduce_control_round_trips():
    p, _, _ = F.increments(3)
    back = BUILTINS["reduce-control"](BUILTINS["fuse-assign"](BUILTINS["split-assign"](p)))
    assert back == p


def test_reduce_control_drops_implied_edges_only():
    p = P.program([P.const("a", 1), P.apply("b", "Neg", "a", "^a"),
                   P.apply("c", "Neg", "b", "^a", "^$go"),
                   P.apply("d", "Neg", "$x", "^c", "^c", "^$go"),
                   P.apply("e", "Neg", "$x", "^a", "^d")],
                  {"o": "c", "o2": "e"})
    expected = P.program([P.const("a", 1), P.apply("b", "Neg", "a"),
                          P.apply("c", "Neg", "b", "^$go"),
                          P.apply("d", "Neg", "$x", "^c", "^$go"),
                          P.apply("e", "Neg", "$x", "^d")],
                         {"o": "c", "o2": "e"})
    assert BUILTINS["reduce-control"](p) == expected
    # nothing to reduce: the same program
    assert BUILTINS["reduce-control"](expected) is expected


def test_const_fold():
    p = P.program([P.var("vx", "x"), P.write("w", "vx", "$a"),
                   P.const("c1", 2), P.const("c2", 3), P.apply("s", "Add", "c1", "c2"),
                   P.apply("t", "Neg", "s", "^w"), P.apply("cp", "Copy", "t"),
                   P.apply("u", "Add", "cp:1", "$a"), P.apply("bad", "Concat", "c1", "c2"),
                   P.const("c4", 7, "^w"), P.apply("k", "Neg", "c4")],
                  {"o": "cp", "o2": "u", "o3": "bad", "o4": "k"}, ["x"])
    expected = P.program([P.var("vx", "x"), P.write("w", "vx", "$a"),
                          P.const("c1", 2), P.const("c2", 3), P.const("s", 5),
                          P.const("t", -5, "^w"), P.const("cp", -5, "^t"), P.const("cp/1", -5, "^t"),
                          P.apply("u", "Add", "cp/1", "$a"), P.apply("bad", "Concat", "c1", "c2"),
                          P.const("c4", 7, "^w"), P.const("k", -7, "^c4")],
                         {"o": "cp", "o2": "u", "o3": "bad", "o4": "k"}, ["x"])
    assert BUILTINS["const-fold"](p) == expected


def test_const_fold_float_bits():
    p = P.program([P.const("z", 0.0, dtype="float32"), P.apply("n", "Neg", "z")], {"o": "n"})
    q = BUILTINS["const-fold"](p)
    value = q.node["n"].attrs["value"]
    assert value == Tensor(-0.0, "float32") and value != Tensor(0.0, "float32")


def test_dce_removes_unused_pure_nodes_and_keeps_ordering():
    p = P.program([P.var("vx", "x"), P.read("r", "vx"), P.apply("f", "Add", "$a", "$a"),
                   P.apply("n", "Add", "r", "f"),
                   P.var("vy", "x", "^n"), P.write("w", "vy", "$a", "^n"),
                   P.const("c", 1), P.apply("g", "Neg", "c"), P.read("r2", "vx", "^g")],
                  {"o": "f"}, ["x"])
    # Dead: n (it only orders vy and w), r and r2 (their values go nowhere),
    # vx, c, g.  Whoever waited for n now waits for n's live predecessor f.
    expected = P.program([P.apply("f", "Add", "$a", "$a"), P.var("vy", "x", "^f"),
                          P.write("w", "vy", "$a", "^f")],
                         {"o": "f"}, ["x"])
    assert BUILTINS["dce"](p) == expected


def test_dce_and_prune_keep_the_feed_interface():
    p = P.program([P.apply("n", "Neg", "$a"), P.apply("m", "Neg", "$b")], {"o": "m"})
    for name in ("dce", "prune", "prune-keep-state"):
        q = BUILTINS[name](p)
        assert list(q.node) == ["m"]
        assert q.feed_names == ("a", "b")


@pytest.mark.parametrize("name", list(TRUTH))
@pytest.mark.parametrize("family", [F.first_example, F.load_store, F.writes_reads,
                                    lambda: F.figure1(2, "Concat"), lambda: F.lost_update(2),
                                    lambda: F.increments(2)])
def test_pass_is_pure_and_deterministic_on_families(name, family):
    p, _, _ = family()
    before = json.dumps(program_to_json(p))
    q1, q2 = BUILTINS[name](p), BUILTINS[name](p)
    assert json.dumps(program_to_json(p)) == before
    assert json.dumps(program_to_json(q1)) == json.dumps(program_to_json(q2))
    assert q1.validated() is q1


# ---------------------------------------------------------------------------
# Unsound claims: a hand-made witness for every cell claimed unsound


def _lone_write():
    """Seed 000, footnote 7: an unfetched Write disappears under pruning."""
    p = P.program([P.var("vx", "x"), P.write("w", "vx", "$B")], {}, ["x"])
    return p, {"B": Tensor(2)}, {"x": Tensor(1)}


def _reads_around_write():
    """Two reads of x, the second ordered after a write."""
    p = P.program([P.var("vx", "x"), P.read("r1", "vx"), P.write("w", "vx", "$B"),
                   P.var("vx2", "x"), P.read("r2", "vx2", "^w")], {"a": "r1", "b": "r2"}, ["x"])
    return p, {"B": Tensor(2)}, {"x": Tensor(1)}


def _two_increments_then_read():
    """Seed 002's two increments, read once both are done."""
    p = P.program([P.var("v", "x"), P.const("one", 1),
                   P.assign("a1", "Add", "v", "one"), P.assign("a2", "Add", "v", "one"),
                   P.var("vr", "x"), P.read("r", "vr", "^a1", "^a2")], {"out": "r"}, ["x"])
    return p, {}, {"x": Tensor(0)}


WITNESSES = {
    "prune": _lone_write,
    "cse-ignore-control": _reads_around_write,
    "cse-stateful": _two_increments_then_read,
    "hoist-reads": F.first_example,
    "split-assign": _two_increments_then_read,
    "licm-reads": licm_reads_witness,
    "xla-lift": xla_lift_witness,
}

UNSOUND_CELLS = [(name, s, o) for name, p in BUILTINS.items() for s, o in p.cells(UNSOUND)]


@pytest.mark.parametrize("name, semantics, observe", UNSOUND_CELLS)
def test_unsound_claim_has_a_witness(name, semantics, observe):
    p, feeds, init = WITNESSES[name]()
    q = BUILTINS[name](p)
    new = new_outcomes(p, q, feeds, init, semantics, observe)
    assert new, f"{name} claims unsound for ({semantics}, {observe}) but the witness shows nothing"


SOUND_ON_WITNESS = [(name, s, o) for name in WITNESSES for s, o in BUILTINS[name].cells(SOUND)]


@pytest.mark.parametrize("name, semantics, observe", SOUND_ON_WITNESS)
def test_sound_cells_of_unsound_passes_hold_on_their_witness(name, semantics, observe):
    """The cells where these passes are sound (prune with outputs only,
    cse-stateful and split-assign decomposed) show nothing new on the same
    programs, at several σ."""
    p, feeds, init = WITNESSES[name]()
    q = BUILTINS[name](p)
    for shift in (0, 1, -3):
        feeds2 = {k: Tensor(int(v.array) + shift) for k, v in feeds.items()}
        init2 = {k: Tensor(int(v.array) + shift) for k, v in init.items()}
        assert not new_outcomes(p, q, feeds2, init2, semantics, observe)
        assert not new_outcomes(p, q, feeds2, {}, semantics, observe)


def test_split_assign_decomposed_needs_the_read_to_wait_for_the_value():
    """Why a/read waits for the value's producer: without that control edge the
    split adds a behaviour even under `decomposed`.  Here the value is computed
    after b (x := 10), so the original's Assign always reads 10."""
    p = P.program([P.var("vx", "x"), P.write("b", "vx", "$ten"),
                   P.apply("v", "Neg", "$d", "^b"), P.var("vx2", "x"),
                   P.assign("a", "Add", "vx2", "v")], {}, ["x"])
    feeds, init = {"ten": Tensor(10), "d": Tensor(1)}, {"x": Tensor(0)}
    q = BUILTINS["split-assign"](p)
    assert ControlIn("v") in q.node["a/read"].inputs
    assert not new_outcomes(p, q, feeds, init, "decomposed", "outputs+state")
    eager = q.replace(nodes=tuple(n.replace(inputs=n.inputs[:1]) if n.name == "a/read" else n
                                  for n in q.nodes)).validated()
    assert new_outcomes(p, eager, feeds, init, "decomposed", "outputs+state")


# ---------------------------------------------------------------------------
# Why hoist-reads-safe is stricter than "no Assign to the same variable before"


def _hoist_if_no_same_variable_assign_before(p: Program) -> Program:
    """The rule as first stated in the issue (unsound, see hoist_reads_safe)."""
    from tfsem.rewrites.edit import ancestors, bit_index
    anc, index = ancestors(p), bit_index(p)

    def rule(p: Program, n) -> bool:
        x = p.accessed_variable(n.name)
        return not any(m.op == ASSIGN and p.accessed_variable(m.name) == x
                       and anc[n.name] >> index[m.name] & 1 for m in p.nodes)
    return hoist(p, rule)


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
def test_same_variable_rule_is_unsound_on_seed002_load_store(semantics):
    p, feeds, init = F.load_store()
    q = _hoist_if_no_same_variable_assign_before(p)
    new = new_outcomes(p, q, feeds, init, semantics, "outputs+state")
    assert {(int(dict(o.outputs)["r0"].array), int(dict(o.state)["X"].array)) for o in new} == {(0, 1)}
    assert BUILTINS["hoist-reads-safe"](p) == p


@pytest.mark.parametrize("semantics", ["atomic", "decomposed"])
def test_read_ancestors_are_not_harmless_either(semantics):
    p = P.program([P.var("vy", "y"), P.read("ry", "vy"), P.var("vx", "x"), P.read("r", "vx", "^ry"),
                   P.var("vx2", "x"), P.const("one", 1), P.write("ax", "vx2", "one"),
                   P.var("vy2", "y"), P.write("ay", "vy2", "one", "^ax")],
                  {"ry": "ry", "r": "r"}, ["x", "y"])
    feeds, init = {}, {"x": Tensor(0), "y": Tensor(0)}
    only_no_assign_ancestors = hoist(p, lambda p, n: n.name == "r")
    new = new_outcomes(p, only_no_assign_ancestors, feeds, init, semantics, "outputs")
    assert {(int(dict(o.outputs)["ry"].array), int(dict(o.outputs)["r"].array)) for o in new} == {(1, 0)}
    q = BUILTINS["hoist-reads-safe"](p)
    assert q.node["r"] == p.node["r"]                       # r is not hoisted
    assert ControlIn("ry") in q.node["ax"].inputs           # ry is
    assert not new_outcomes(p, q, feeds, init, semantics, "outputs+state")
