"""`tfsem fuzz --target grappler[:OPTIMIZER] | xla`: TensorFlow's own optimizers
as campaign targets, stored, grouped and reported like passes.

The tests that run TensorFlow skip, saying why, where it cannot be imported;
the others (usage errors, a planted runtime finding through a fake runner)
run everywhere.  This module is also imported by campaign worker processes
(as `test_tensorflow_fuzz_target:NAME`, like tests/campaign_fakes.py), so it
imports nothing heavy at its top.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sqlite3
import sys
from collections import Counter

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from tfsem.cli import main
from tfsem.oracle.jsonio import program_from_json

from campaign_fakes import ReturnsProgram

NIGHTLY = settings.get_current_profile_name() == "nightly"
HAS_TF = importlib.util.find_spec("tensorflow") is not None
needs_tf = pytest.mark.skipif(not HAS_TF, reason="needs the extra tfsem[tensorflow] (tensorflow-cpu), "
                                                 "not installed here")


# ---------------------------------------------------------------------------
# Doubles, loaded by the campaign's worker processes by name


#: x starts at 0; `inc` adds 1 to it; `r` reads it after `inc` (control edge)
COUNTER = {
    "format": "tfsem.program/1", "variables": ["x"],
    "nodes": [{"name": "v", "op": "Var", "var": "x"},
              {"name": "one", "op": "Const", "value": 1},
              {"name": "inc", "op": "Assign", "fn": "Add", "inputs": ["v", "one"]},
              {"name": "r", "op": "Read", "inputs": ["v", "^inc"]}],
    "outputs": {"out": "r"},
}


def counter_generator(max_nodes, observe):
    """Always the counter, from x = 0 (a generator of the campaign interface)."""
    from tfsem.oracle.values import Tensor
    import numpy as np
    p = program_from_json(COUNTER)
    return st.just((p, {}, {"x": Tensor(np.array(0, dtype=np.int64))}))


def _drop_read_controls(graph_def):
    """The planted bug: every ReadVariableOp loses its control inputs (the
    shape of a dependency-optimizer bug)."""
    for n in graph_def.node:
        if n.op == "ReadVariableOp":
            keep = [i for i in n.input if not i.startswith("^")]
            del n.input[:]
            n.input.extend(keep)
    return graph_def


class _FakeObserved:
    def __init__(self, counts: Counter):
        self.counts = counts
        self.runs = sum(counts.values())

    def items(self):
        return list(self.counts.items())


def _lying_execute(program, feeds, init, runs):
    import numpy as np

    from tfsem.oracle.dispatch import outcome_set
    from tfsem.oracle.outcomes import make_outcome
    from tfsem.oracle.values import Error, Tensor

    class Result:
        pass

    r = Result()
    r.seconds = 0.0
    r.message = ""
    x = next((v for v, t in program.variables.items() if t.dtype == "int64" and not t.shape), None)
    if x is None:
        r.status = "skipped"
        return r
    init = {v: (init.get(v) if v in init and not isinstance(init.get(v), Error)
                else Tensor(np.zeros(tuple(t.shape), dtype=np.dtype(t.dtype))))
            for v, t in program.variables.items()}
    feeds = {k: v for k, v in feeds.items() if k in program.feed_names}
    allowed = outcome_set(program, feeds, init, "atomic", "outputs+state")
    good = next(o for o, _ in allowed.items())
    state = dict(good.state)
    state[x] = Tensor(np.array(987654321, dtype=np.int64))
    bad = make_outcome(dict(good.outputs), state, "outputs+state")
    r.status, r.program, r.feeds, r.init = "ok", program, feeds, init
    r.observed = _FakeObserved(Counter({bad: 3, good: 2}))
    r.runs = 5
    return r


class _LyingRunner:
    """A runtime runner that reports, for a program with an int64 scalar
    variable, 3 of 5 runs ending with that variable at 987654321 (outside any
    set of a generated program of small constants) and 2 runs at an outcome
    the oracle allows."""

    execute = staticmethod(_lying_execute)

    def close(self):
        pass


class LyingRuntime:
    """A runtime target with XLA's claims whose runner lies (no TensorFlow)."""

    target_kind = "runtime"
    name = "lying-runtime"
    description = "a runtime target that reports an outcome outside the oracle's set"
    claims = {("decomposed", "outputs+state"): "sound", ("decomposed", "outputs"): "sound",
              ("atomic", "outputs+state"): "unsound", ("atomic", "outputs"): "unsound"}

    def __call__(self, program):
        raise TypeError("a runtime target")

    def runner(self, observe="outputs+state"):
        return _LyingRunner()


lying_runtime = LyingRuntime()


def __getattr__(name):
    # built on first use: it imports TensorFlow (campaigns/tensorflow_target.py)
    if name == "broken_dependency":
        from tfsem.campaigns.tensorflow_target import GrapplerTarget
        target = GrapplerTarget("dependency", damage=_drop_read_controls,
                                name="grappler:dependency-broken",
                                origin=f"{__name__}:broken_dependency")
        globals()[name] = target
        return target
    raise AttributeError(name)


# ---------------------------------------------------------------------------
# Usage: bad names and a missing TensorFlow exit 2, naming what to do


def test_unknown_optimizer_exits_2_naming_the_valid_ones(tmp_path, capsys):
    status = main(["fuzz", "--target", "grappler:nope", "--budget", "1s", "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert status == 2
    assert "unknown Grappler optimizer 'nope'" in err and "dependency" in err and "constfold" in err
    assert "Traceback" not in err
    assert not (tmp_path / "c" / "campaign.db").exists()


def test_unknown_target_exits_2_naming_the_targets(tmp_path, capsys):
    status = main(["fuzz", "--target", "tpu", "--budget", "1s", "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert status == 2
    assert "unknown target 'tpu'" in err and "xla" in err and "grappler:OPTIMIZER" in err


@pytest.mark.parametrize("target", ["xla", "grappler", "grappler:dependency"])
def test_without_tensorflow_the_target_names_the_extra(target, tmp_path, monkeypatch, capsys):
    from tfsem.graphdef import grappler

    def missing():
        raise grappler.TensorFlowMissing(grappler.INSTALL_HINT)
    monkeypatch.setattr(grappler, "tensorflow", missing)
    # as if tensorflow_target had never been imported: its import needs TensorFlow
    monkeypatch.delitem(sys.modules, "tfsem.campaigns.tensorflow_target", raising=False)
    status = main(["fuzz", "--target", target, "--budget", "1s", "--out", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert status == 2
    assert "needs the extra tfsem[tensorflow]: pip install 'tfsem[tensorflow]'" in err
    assert "Traceback" not in err


@needs_tf
def test_targets_combine_with_passes_and_take_the_grappler_generator(tmp_path, monkeypatch):
    """--target and --pass add up; a Grappler target gets the Grappler
    generator (when it loads) unless --generator is given, which wins."""
    from tfsem.campaigns import campaign
    from tfsem.commands.fuzzing import GRAPPLER_GENERATOR, grappler_generator
    seen = []

    def fake_run(settings):
        seen.append(settings)
        raise campaign.CampaignError("stop here")
    # `tfsem fuzz` imports the campaign module when it runs (not for --help)
    monkeypatch.setattr(campaign, "run_campaign", fake_run)
    argv = ["fuzz", "--pass", "hoist-reads", "--target", "grappler:dependency", "--target", "xla",
            "--budget", "1s", "--out", str(tmp_path / "c"), "--runs", "7"]
    assert main(argv) == 2
    s = seen[-1]
    assert s.passes == ["hoist-reads", "grappler:dependency", "tfsem.campaigns.tensorflow_target:xla_target"]
    assert s.runtime_runs == 7 and s.generator is None
    expected = {"grappler:dependency": GRAPPLER_GENERATOR} if grappler_generator() else {}
    assert s.pass_generators == expected
    assert main([*argv, "--generator", "campaign_fakes:small_generator"]) == 2
    assert seen[-1].pass_generators == {} and seen[-1].generator == "campaign_fakes:small_generator"


# ---------------------------------------------------------------------------
# A planted runtime finding (a fake runner): stored, grouped, shown, exit 1


def test_planted_runtime_finding_is_stored_grouped_shown_and_fails_the_campaign(tmp_path, capsys):
    out = tmp_path / "campaign"
    status = main(["fuzz", "--pass", "test_tensorflow_fuzz_target:lying_runtime", "--budget", "6s",
                   "--out", str(out), "--semantics", "decomposed", "--observe", "outputs+state",
                   "--generator", "campaign_fakes:small_generator", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert status == 1, summary        # decomposed: the target claims sound, contradicted
    assert summary["groups"], summary
    group = summary["groups"][0]
    assert group["pass"] == "lying-runtime" and group["kind"] == "unsound" and not group["expected"]
    with sqlite3.connect(out / "campaign.db") as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT * FROM findings WHERE id = ?", (group["representative"],)).fetchone()
    detail, verdict = json.loads(row["detail"]), json.loads(row["verdict"])
    rt = verdict["runtime"]
    assert (detail["times"], detail["runs"]) == (3, 5) and (rt["times"], rt["runs"]) == (3, 5)
    assert rt["allowed_count"] == detail["allowed_count"] >= 1
    assert row["rewritten"] is None and row["kind"] == "unsound"
    assert "987654321" in json.dumps(rt["outcome"])
    assert "in 3 of 5 runs" in row["message"]
    assert json.loads(row["init"]) == rt["init"] and rt["init"]   # σ, every variable given
    # the page: σ, the count, the allowed set's size, and what shrinking means here
    assert main(["report", str(out)]) == 0
    page = (out / "report" / "findings" / f"finding-{row['id']}.html").read_text()
    assert 'class="runtime-times">3</strong>' in page
    assert f'class="allowed-count">{rt["allowed_count"]}</span>' in page
    assert "3 of 5" in page and "NOT ALLOWED" in page
    assert "987654321" in page
    for x in rt["init"]:
        assert f'<td class="mono">{x}</td>' in page
    assert "only when its own runs" in page
    assert "confirmed on" not in page   # no schedule was replayed: nothing is claimed confirmed
    # tfsem serve renders the same page from the database
    from tfsem.reports.campaign import page_named
    served = page_named(out, f"finding-{row['id']}.html")
    assert 'class="runtime-times">3</strong>' in served and "NOT ALLOWED" in served


class _HonestRunner:
    """Every run ends in the outcome the lying runner reports as allowed."""

    def execute(self, program, feeds, init, runs):
        r = _lying_execute(program, feeds, init, runs)
        if r.status == "ok":
            (good,) = [o for o, n in r.observed.counts.items() if n == 2]
            r.observed = _FakeObserved(Counter({good: runs}))
            r.runs = runs
        return r

    def close(self):
        pass


def test_a_runtime_finding_not_seen_again_is_undecided_never_fixed():
    """Timing decides whether a run shows an outcome: a replay whose runs do
    not show it again leaves the finding open."""
    from tfsem.campaigns.loop import PRESENT, UNDECIDED, FuzzLoop, LoopConfig, replay
    from tfsem.campaigns.targets import resolve_pass
    spec = "test_tensorflow_fuzz_target:lying_runtime"
    target = resolve_pass(spec)
    assert target.kind == "runtime" and target.claim(("decomposed", "outputs")) == "sound"
    cfg = LoopConfig(spec, "decomposed", "outputs+state", runtime_runs=5)
    lying = FuzzLoop(cfg, target=target, runner=_LyingRunner(), generator=counter_generator)
    import numpy as np
    from tfsem.oracle.values import Tensor
    record = lying.evaluate(program_from_json(COUNTER), {}, {"x": Tensor(np.array(0, dtype=np.int64))})
    assert record is not None and record.detail["times"] == 3
    assert record.detail["program_given"]["nodes"] == COUNTER["nodes"]
    assert replay(lying, record)[0] == PRESENT
    honest = FuzzLoop(cfg, target=target, runner=_HonestRunner(), generator=counter_generator)
    assert replay(honest, record) == (UNDECIDED, None)


def test_planted_runtime_finding_in_the_atomic_cell_is_expected(tmp_path, capsys):
    out = tmp_path / "campaign"
    status = main(["fuzz", "--pass", "test_tensorflow_fuzz_target:lying_runtime", "--budget", "4s",
                   "--out", str(out), "--semantics", "atomic", "--observe", "outputs+state",
                   "--generator", "campaign_fakes:small_generator", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert summary["groups"] and all(g["expected"] for g in summary["groups"])
    assert status == 0


# ---------------------------------------------------------------------------
# σ with uninitialized variables: not a counterexample against Grappler


#: Grappler's default pipeline folds OnesLike(Read(x)) into Const(1) after
#: ^Read(x) (found by the first campaigns of --target grappler)
ONES_LIKE = {"format": "tfsem.program/1", "variables": ["x0"],
             "nodes": [{"name": "v0", "op": "Var", "var": "x0"},
                       {"name": "r1", "op": "Read", "inputs": ["v0"]},
                       {"name": "oneslike2", "op": "OnesLike", "inputs": ["r1"]},
                       {"name": "out0", "op": "Identity", "inputs": ["oneslike2"]}],
             "outputs": {"out0": "out0"}}
FOLDED = {"format": "tfsem.program/1", "variables": ["x0"],
          "nodes": [{"name": "v0", "op": "Var", "var": "x0"},
                    {"name": "r1", "op": "Read", "inputs": ["v0"]},
                    {"name": "out0", "op": "Const", "value": 1, "inputs": ["^r1"]},
                    {"name": "oneslike2", "op": "Const", "value": 1, "inputs": ["^r1"]}],
          "outputs": {"out0": "out0"}}


@pytest.mark.parametrize("given", ["error", "absent"])
@pytest.mark.parametrize("initialized_only", [True, False])
def test_a_counterexample_needing_an_uninitialized_variable_is_not_one_against_grappler(
        initialized_only, given):
    """TensorFlow fails the run that reads an uninitialized x0 (the folded
    Const still runs after ^r1, so the run fails either way); tfsem's error
    value is dropped by the control edge.  A Grappler target's claims speak
    of initialized σ only: there, OnesLike(x0) is 1, as the folded Const."""
    import dataclasses

    from tfsem.campaigns.loop import FuzzLoop, LoopConfig
    from tfsem.campaigns.targets import Target
    from tfsem.oracle.values import UNINITIALIZED, Error
    target = Target("fake", "fake", "a target that returns the folded program",
                    {("atomic", "outputs+state"): "sound"}, fn=lambda p: p)
    target = dataclasses.replace(target, initialized_only=initialized_only)
    loop = FuzzLoop(LoopConfig("fake", "atomic", "outputs+state"), target=target,
                    runner=ReturnsProgram(FOLDED), generator=counter_generator)
    # σ gives x0 the error value, or no value at all (the checkers'
    # counterexamples omit an uninitialized variable: a 30-minute campaign
    # of the default pipeline stored four such findings as bugs)
    init = {"x0": Error(UNINITIALIZED)} if given == "error" else {}
    record = loop.evaluate(program_from_json(ONES_LIKE), {}, init)
    if initialized_only:
        assert record is None
        assert loop.stats.no_counterexample + loop.stats.sound == 1
    else:   # tfsem's own claim (every σ): the folded program adds the outcome out0 = 1
        assert record is not None and record.kind == "unsound"
        assert record.init in ({"x0": {"error": "uninitialized"}}, {})


@needs_tf
def test_grappler_targets_claim_initialized_sigma_only():
    from tfsem.campaigns.targets import resolve_pass
    assert resolve_pass("grappler").initialized_only
    assert resolve_pass("grappler:constfold").initialized_only


# ---------------------------------------------------------------------------
# TensorFlow for real


@pytest.mark.skipif(settings.get_current_profile_name() != "nightly",
                    reason="nightly profile only: a whole campaign with TensorFlow in a worker and a sandbox, ~18-25 s")
@needs_tf
def test_fuzz_target_grappler_then_report(tmp_path, capsys):
    """The default suite's one whole campaign with TensorFlow in its worker and
    pass sandbox.  Its time goes to two imports of TensorFlow, 6-10 s each:
    the worker's (resolving the target, after it took its slice) and the
    sandbox's (at the first rewrite, inside the slice).  The first program is
    judged if the worker draws it before the budget and the shrinking grace
    (3 s) run out, whatever the sandbox's start takes: 14 s leaves 17 s for
    the worker's import (8 s was flaky: the budget ran out during it)."""
    out = tmp_path / "campaign"
    status = main(["fuzz", "--target", "grappler", "--budget", "14s", "--out", str(out),
                   "--semantics", "atomic", "--observe", "outputs+state", "--pass-timeout", "30", "--json"])
    summary = json.loads(capsys.readouterr().out)
    # 4: no finding, but a 14 s campaign that pays two TensorFlow imports
    # judges too few programs to say much (weak evidence), as it says
    assert status == (4 if summary["weak"] else 0), summary
    (row,) = summary["passes"]
    assert row["pass"] == "grappler" and row["programs"] >= 1
    assert (out / "campaign.db").is_file()
    with sqlite3.connect(out / "campaign.db") as db:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
    assert tables
    assert main(["report", str(out)]) == 0
    page = (out / "report" / "index.html").read_text()
    assert "grappler" in page and "Grappler" in page


def _inline_loop(spec: str, cell: tuple[str, str], generator: str | None, stop, **kw):
    """A campaign's loop for `spec` in this process: the pass resolved by
    name and run inline (TensorFlow is imported once, by this process, not by
    a worker and a sandbox per campaign), stopping when `stop(loop)` holds."""
    from test_campaigns_loop import InlineRunner

    from tfsem.campaigns.loop import FuzzLoop, LoopConfig
    from tfsem.campaigns.targets import resolve_pass
    target = resolve_pass(spec)
    # a runtime target (XLA) runs programs in the loop's process: no runner to give
    runner = None if target.kind == "runtime" else InlineRunner(getattr(target.fn, "function", target.fn))
    loop = FuzzLoop(LoopConfig(spec, *cell, seed=1, generator=generator, **kw), target=target,
                    runner=runner, should_stop=lambda: stop(loop))
    return loop


@needs_tf
def test_grappler_dependency_is_fuzzed_and_finds_nothing():
    """`--pass grappler:dependency` with tfsem's own generator: programs go
    through the real optimizer and nothing is found (its claim: sound in
    atomic/outputs+state).  The loop in this process, until 20 programs; the
    whole campaign, stored and reported, is the nightly variant below (the
    --target grappler campaign above covers the store and report)."""
    loop = _inline_loop("grappler:dependency", ("atomic", "outputs+state"), None,
                        lambda lp: lp.stats.programs >= 20)
    found = loop.run(30.0)
    assert loop.stats.programs >= 1, loop.stats
    assert found == [], [r.message for r in found]


@needs_tf
@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TFSEM_HYPOTHESIS_PROFILE=nightly): "
                                        "a whole campaign with TensorFlow in a worker, ~25 s")
def test_fuzz_grappler_then_report(tmp_path, capsys):
    out = tmp_path / "campaign"
    status = main(["fuzz", "--pass", "grappler:dependency", "--budget", "20s", "--out", str(out),
                   "--semantics", "atomic", "--observe", "outputs+state",
                   "--pass-timeout", "30", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert status == 0, summary
    (row,) = summary["passes"]
    assert row["pass"] == "grappler:dependency" and row["programs"] >= 1
    assert row["findings"] == {"unsound": 0, "invalid": 0, "crash": 0, "timeout": 0}
    assert (out / "campaign.db").is_file()
    assert main(["report", str(out)]) == 0
    page = (out / "report" / "index.html").read_text()
    assert "grappler:dependency" in page


@needs_tf
def test_xla_target_in_the_campaigns_loop():
    """`--target xla`'s loop: generated programs run XLA-clustered (3 runs
    each), every outcome inside the decomposed semantics, which XLA claims.
    In this process, until 3 programs ran; the whole campaign, stored and
    reported, is the nightly variant below (the lying runtime target's
    campaigns above cover a runtime target's store and report)."""
    from tfsem.commands.fuzzing import target_specs
    (spec,), _ = target_specs(["xla"], None)
    loop = _inline_loop(spec, ("decomposed", "outputs+state"), None,
                        lambda lp: lp.stats.no_counterexample >= 3, runtime_runs=3)
    assert loop.claim == "sound"
    found = loop.run(30.0)
    assert found == [], [r.message for r in found]     # no outcome outside the decomposed semantics
    assert loop.stats.no_counterexample >= 1, loop.stats   # programs XLA ran, every outcome allowed


@needs_tf
@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TFSEM_HYPOTHESIS_PROFILE=nightly): "
                                        "a whole campaign with TensorFlow in a worker, ~20 s")
def test_fuzz_target_xla_short_campaign_stores_and_reports(tmp_path, capsys):
    out = tmp_path / "campaign"
    status = main(["fuzz", "--target", "xla", "--budget", "10s", "--out", str(out), "--runs", "3",
                   "--semantics", "decomposed", "--observe", "outputs+state", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert status == 0, summary   # no outcome outside the decomposed semantics
    (row,) = summary["passes"]
    assert row["pass"] == "xla" and row["programs"] >= 1
    assert row["no_counterexample"] >= 1           # programs XLA ran, every outcome allowed
    assert row["claims"] == {"decomposed/outputs+state": "sound"}
    assert main(["report", str(out)]) == 0
    assert "xla" in (out / "report" / "index.html").read_text()


def _assert_graphdef_finding(out, group: dict) -> None:
    """The broken dependency optimizer's finding in campaign folder `out`
    (`group`: its group, as the store and `tfsem fuzz --json` give it): an
    unsound finding whose page shows the GraphDef given to Grappler and the
    one it returned, and whose programs use the GraphDefs' node names."""
    assert group["pass"] == "grappler:dependency-broken" and group["kind"] == "unsound"
    rep = group["representative"]
    rep_id = rep["id"] if isinstance(rep, dict) else rep
    with sqlite3.connect(out / "campaign.db") as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT * FROM findings WHERE id = ?", (rep_id,)).fetchone()
    gd = json.loads(row["detail"])["graphdef"]
    assert gd["optimizer"] == "dependency" and re.fullmatch(r"2\.\d+\.\d+.*", gd["tensorflow"])
    assert 'input: "^inc"' in gd["original"] and 'input: "^inc"' not in gd["optimized"]

    def names(pbtxt):
        return set(re.findall(r'^\s*name: "([^"]+)"', pbtxt, flags=re.M))
    original, rewritten = json.loads(row["original"]), json.loads(row["rewritten"])
    assert {n["name"] for n in original["nodes"]} <= names(gd["original"])
    assert {n["name"] for n in rewritten["nodes"]} <= names(gd["optimized"])
    assert main(["report", str(out)]) == 0
    page = (out / "report" / "findings" / f"finding-{row['id']}.html").read_text()
    assert "The GraphDef given to Grappler (pbtxt)" in page
    assert "Grappler&#x27;s output GraphDef (pbtxt)" in page or "Grappler's output GraphDef (pbtxt)" in page
    assert page.count('<pre class="pbtxt">') == 2
    assert 'class="optimizer">dependency</strong>' in page and gd["tensorflow"] in page


@needs_tf
def test_grappler_finding_page_shows_both_graphdefs_in_the_graphs_names(tmp_path):
    """A hand-broken dependency optimizer (Grappler's real output, then every
    ReadVariableOp's control inputs dropped) on the counter, fuzzed by the
    campaign's loop in this process (the pass run inline, TensorFlow already
    imported), its findings stored as a campaign's and reported: see
    `_assert_graphdef_finding`.  The same through `tfsem fuzz` (a worker and a
    sandbox that each import TensorFlow, ~25 s) is the nightly variant below."""
    from tfsem.campaigns.campaign import Campaign, CampaignSettings
    from tfsem.campaigns.store import Store
    spec, cell = "test_tensorflow_fuzz_target:broken_dependency", ("atomic", "outputs+state")
    out = tmp_path / "campaign"
    cs = CampaignSettings([spec], budget=1.0, out=str(out), cells=[cell], seed=1,
                          generator="test_tensorflow_fuzz_target:counter_generator")
    campaign = Campaign(cs)   # what `tfsem fuzz` stores of its passes (name, claims)
    # until the first round that finds something ends (shrunk and reduced as in a campaign)
    loop = _inline_loop(spec, cell, cs.generator, lambda lp: lp.stats.findings > 0)
    found = loop.run(30.0, shrink_seconds=3.0)
    assert found and all(r.contradicts_claim for r in found), found   # claimed sound: a bug
    out.mkdir()
    with Store(out) as store:
        cid = store.start_campaign(cs.budget, campaign.settings_json(), "test")
        for record in found:
            store.record_finding(cid, record)
        store.finish_campaign(cid)
        groups = store.finding_groups(cid)
    assert groups
    _assert_graphdef_finding(out, groups[0])


@needs_tf
@pytest.mark.skipif(not NIGHTLY, reason="nightly profile only (TFSEM_HYPOTHESIS_PROFILE=nightly): "
                                        "a whole campaign with TensorFlow in a worker, ~25 s")
def test_grappler_finding_page_through_a_whole_campaign(tmp_path, capsys):
    """The test above through `tfsem fuzz`: the pass loaded by name in a
    worker and its sandbox, the campaign fails (exit 1)."""
    out = tmp_path / "campaign"
    status = main(["fuzz", "--pass", "test_tensorflow_fuzz_target:broken_dependency", "--budget", "20s",
                   "--out", str(out), "--semantics", "atomic", "--observe", "outputs+state",
                   "--generator", "test_tensorflow_fuzz_target:counter_generator",
                   "--pass-timeout", "30", "--json"])
    summary = json.loads(capsys.readouterr().out)
    assert status == 1, summary
    _assert_graphdef_finding(out, summary["groups"][0])


class _CountingRunner(_HonestRunner):
    """The honest runner, remembering how many runs each call asked for."""

    def __init__(self):
        self.asked: list[int] = []

    def execute(self, program, feeds, init, runs):
        self.asked.append(runs)
        return super().execute(program, feeds, init, runs)


def test_verify_runs_each_program_the_runs_it_is_given():
    """`tfsem verify --target xla --runs N` runs each program N times (it ran
    20 whatever --runs said)."""
    from tfsem.campaigns.verify import verify_pass
    runner = _CountingRunner()
    verify_pass("test_tensorflow_fuzz_target:lying_runtime", 2.0, [("decomposed", "outputs+state")],
                seed=1, generator="campaign_fakes:small_generator", runner=runner, runtime_runs=7)
    assert runner.asked and set(runner.asked) == {7}


def test_verify_takes_runs_on_the_command_line(monkeypatch, capsys):
    from tfsem.commands import verify as verify_cmd
    seen = {}

    def fake_verify_pass(*args, **kw):
        seen.update(kw)
        raise KeyboardInterrupt

    verify_cmd._load()     # the command imports its campaign machinery lazily
    monkeypatch.setattr(verify_cmd, "verify_pass", fake_verify_pass)
    try:
        main(["verify", "test_tensorflow_fuzz_target:lying_runtime", "--budget", "1s", "--runs", "9"])
    except (KeyboardInterrupt, SystemExit):
        pass
    assert seen.get("runtime_runs") == 9
    with pytest.raises(SystemExit) as exc:   # argparse's range check: exit 2
        main(["verify", "test_tensorflow_fuzz_target:lying_runtime", "--runs", "0"])
    assert exc.value.code == 2 and "--runs" in capsys.readouterr().err


@needs_tf
def test_integer_valued_float_programs_go_through_grappler_and_are_judged_in_ieee():
    """A float program whose every float tensor is integer-valued (the Grappler
    generator's floats) is exported, optimized and judged with tfsem's own
    float functions (flushing subnormals changes nothing where none occurs);
    before, float programs went through the target unchanged."""
    from tfsem.campaigns.tensorflow_target import as_tensorflow_sees_it, grappler_constfold
    from tfsem.checking import check_rewrite
    from tfsem.generators.grappler import random_programs, unflushed
    from tfsem.oracle.functions import FTZ_SUFFIX

    def flushing(p):
        return any(n.op.endswith(FTZ_SUFFIX) or n.attrs.get("fn", "").endswith(FTZ_SUFFIX)
                   for n in p.nodes)

    judged = changed = 0
    verdicts = []
    # two of the 12 changed programs are not decided (no-counterexample): their
    # checks test at random until the timeout, 5 s each under the nightly profile
    timeout = 5 if NIGHTLY else 1.5
    for p in random_programs(25, seed=3, dtype="float32"):
        original = as_tensorflow_sees_it(p)
        if original is None:
            continue
        judged += 1
        assert not flushing(original) and unflushed(original) is not None
        q = grappler_constfold(p)
        if q.nodes != original.nodes:
            changed += 1
            assert not flushing(q)       # Grappler's output is integer-valued too
            verdicts.append(check_rewrite(original, q, "atomic", "outputs+state", timeout=timeout).verdict)
    assert judged >= 20 and changed >= 5, (judged, changed)
    # every float variable is written before it is read: no uninitialized read,
    # so an unsound verdict here would be a real finding against constfold
    assert "unsound" not in verdicts and "invalid" not in verdicts
    assert verdicts.count("sound") >= len(verdicts) // 2, verdicts
