"""The HTML report: graph drawing, finding pages, index page, report folder.

The pages are parsed back with the standard library's HTML parser and the
tests look at what a reader would: the two program drawings (their nodes,
edges and dash patterns), the outcomes, the step-by-step states, links,
escaping.  The real-browser test is tests/test_reports_browser.py.
"""

from __future__ import annotations

import itertools
import json
import re
import urllib.parse
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tfsem.generators import families
from tfsem.oracle import program as P
from tfsem.oracle.dispatch import outcome_set
from tfsem.oracle.jsonio import case_to_json, make_case, program_from_json
from tfsem.oracle.semantics import graph_of
from tfsem.oracle.values import Tensor
from tfsem.reports import graph as G
from tfsem.reports.examples import drop_control_inputs, load_store_finding, sample_index_data, unsound_verdict
from tfsem.reports.finding import render_finding_page
from tfsem.reports.index import claim_checks, render_index
from tfsem.reports.site import FindingPage, write_report

# ---------------------------------------------------------------------------
# A tiny DOM over html.parser

VOID = {"br", "meta", "img", "hr", "input", "link", "wbr"}


class El:
    def __init__(self, tag: str, attrs: dict, parent: "El | None"):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[El | str] = []

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def iter(self):
        for c in self.children:
            if isinstance(c, El):
                yield c
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs) -> list["El"]:
        return [e for e in self.iter() if (tag is None or e.tag == tag)
                and (cls is None or cls in e.classes)
                and all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def find(self, tag: str | None = None, cls: str | None = None, **attrs) -> "El":
        found = self.find_all(tag, cls, **attrs)
        assert found, f"no <{tag} class={cls} {attrs}>"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = El("#root", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        el = El(tag, dict(attrs), self.cur)
        self.cur.children.append(el)
        if tag not in VOID:
            self.cur = el

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(El(tag, dict(attrs), self.cur))

    def handle_endtag(self, tag):
        el = self.cur
        while el is not None and el.tag != tag:
            el = el.parent
        assert el is not None, f"stray </{tag}>"
        self.cur = el.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def dom(html: str) -> El:
    b = _Builder()
    b.feed(html)
    b.close()
    assert b.cur is b.root, f"unclosed <{b.cur.tag}>"
    return b.root


# ---------------------------------------------------------------------------
# The worked example, with a verdict written out by hand (so the expected
# states below do not depend on which witness the oracle happens to pick)

SCHEDULE = ["two", "vx2", "five", "vy5", "vy", "one", "vx1", "r0", "wy", "wx2", "wx1"]
# (X, Y) after each step, and what the output edge of r0 holds
EXPECTED_VARS = [("0", "0")] * 9 + [("0", "5"), ("2", "5"), ("1", "5")]
EXPECTED_OUT = [None] * 8 + ["0"] * 4


def hand_case():
    p, feeds, init = families.load_store()
    q = drop_control_inputs(p, "r0")
    verdict = {
        "verdict": "unsound", "differs": {"variable": "X"},
        "counterexample": {
            "feeds": {}, "init": {"X": 0, "Y": 0}, "schedule": SCHEDULE,
            "outcome": {"outputs": {"r0": 0}, "state": {"X": 1, "Y": 5}},
            "original_outcomes": [{"outputs": {"r0": 0}, "state": {"X": 2, "Y": 5}},
                                  {"outputs": {"r0": 5}, "state": {"X": 2, "Y": 5}},
                                  {"outputs": {"r0": 5}, "state": {"X": 1, "Y": 5}}]},
        "confirmed": ["oracle", "numpy"], "semantics": "atomic", "observe": "outputs+state"}
    return p, q, feeds, init, verdict


def test_the_hand_written_verdict_is_true():
    p, q, feeds, init, verdict = hand_case()
    cx = verdict["counterexample"]
    orig = outcome_set(p, feeds, init)
    assert sorted(json.dumps(o.to_json(), sort_keys=True) for o in orig) == \
        sorted(json.dumps(o, sort_keys=True) for o in cx["original_outcomes"])
    rew = {json.dumps(o.to_json(), sort_keys=True) for o in outcome_set(q, feeds, init)}
    assert json.dumps(cx["outcome"], sort_keys=True) in rew


@pytest.fixture(scope="module")
def atomic_page():
    p, q, _, _, verdict = hand_case()
    html = render_finding_page(make_case(p, q, expect="unsound"), verdict,
                               meta={"pass": "hoist-reads"}, case_filename="f1.json")
    return html, dom(html), p, q, verdict


# ---------------------------------------------------------------------------
# Graphs


def program_svgs(root: El) -> dict[str, El]:
    return {s.attrs["data-role"]: s for s in root.find_all("svg", "program-graph")}


def edge_kinds(svg: El) -> list[tuple[str, str | None]]:
    """(kind, dash array of the drawn stroke) for each edge of a drawing."""
    out = []
    for g in svg.find_all("g", "edge"):
        kind = next(k for k in ("tensor", "variable", "control") if k in g.classes)
        out.append((kind, g.find("path", "stroke").attrs.get("stroke-dasharray")))
    return out


def test_page_draws_both_programs_in_the_seed_notation(atomic_page):
    html, root, p, q, _ = atomic_page
    svgs = program_svgs(root)
    assert set(svgs) == {"original", "rewritten"}
    for role, prog in (("original", p), ("rewritten", q)):
        svg = svgs[role]
        assert sorted(g.attrs["data-node"] for g in svg.find_all("g", "node")) == sorted(n.name for n in prog.nodes)
        kinds = edge_kinds(svg)
        assert len(kinds) == len(graph_of(prog).edges)
        # solid tensor edges, dashed variable edges, dotted control edges
        assert {d for k, d in kinds if k == "tensor"} == {None}
        assert {d for k, d in kinds if k == "variable"} == {"7 4"}
        assert {d for k, d in kinds if k == "control"} == {"1.5 3.5"}
        counts = {k: sum(1 for kk, _ in kinds if kk == k) for k in ("tensor", "variable", "control")}
        # 3 Const->Write edges + the output edge; 4 Var handles; 7 implicit GO + ^wy (+ ^wx1)
        assert counts == {"tensor": 4, "variable": 4, "control": 9 if role == "original" else 8}
        # the output edge ends at a stub named after the output
        assert [g.attrs["data-stub"] for g in svg.find_all("g", "output")] == ["r0"]
    # what the rewrite changed: the control edge wx1 -> r0, drawn removed in the original
    removed = svgs["original"].find_all("g", "removed")
    assert [g.attrs["data-edge"] for g in removed] == ["r0#1"]
    assert "control" in removed[0].classes
    assert svgs["rewritten"].find_all("g", "added") == [] and svgs["rewritten"].find_all("g", "removed") == []
    changes = root.find("ul", "changes").text()
    assert "control edge wx1" in changes and "r0" in changes


def test_layout_ids_are_the_semantics_edge_ids():
    programs = [families.load_store()[0], families.figure1(3)[0], families.first_example(False)[0],
                families.chain(4)[0], families.lost_update(2)[0],
                P.program([P.const("c", 1, "^$go"), P.apply("a", "Add", "c", "$x"),
                           P.apply("s", "Copy", "a"), P.apply("t", "Sub", "s:1", "s:0")],
                          {"o": "t", "o2": "s:1"})]
    for p in programs:
        assert [e.id for e in G.program_edges(p)] == [e.id for e in graph_of(p).edges]
        assert [e.kind for e in G.program_edges(p)] == [e.kind for e in graph_of(p).edges]


def boxes_overlap(layout: G.Layout) -> list:
    bad = []
    real = [b for b in layout.boxes.values() if b.kind != "dummy"]
    for a, b in itertools.combinations(real, 2):
        if abs(a.x - b.x) < (a.w + b.w) / 2 and abs(a.y - b.y) < (a.h + b.h) / 2:
            bad.append((a.key, b.key))
    return bad


@pytest.mark.parametrize("make", [lambda: families.load_store()[0], lambda: families.figure1(3)[0],
                                  lambda: families.lost_update(3)[0], lambda: families.racy_pairs(3)[0],
                                  lambda: families.chain(6)[0]])
def test_layout_is_layered_and_readable(make):
    p = make()
    lay = G.layout_programs([p])
    assert boxes_overlap(lay) == []
    for e in G.program_edges(p):
        if e.implicit:
            continue
        src, dst = lay.boxes[e.src], lay.boxes[e.dst]
        assert src.layer < dst.layer, (e.id, src.layer, dst.layer)     # edges point down
        pts = lay.routes[e.key].points
        assert len(pts) == dst.layer - src.layer + 1                    # one dummy per layer crossed
        assert pts[0][1] == pytest.approx(src.bottom) and pts[-1][1] == pytest.approx(dst.top)
    for n in p.nodes:  # a Var sits right above the node using its handle
        if n.op == "Var":
            for e in G.program_edges(p):
                if e.src == ("n", n.name) and e.kind == "variable":
                    assert lay.boxes[e.dst].layer == lay.boxes[e.src].layer + 1
    assert 0 < lay.width < 2000 and 0 < lay.height < 2000
    # deterministic: the same program draws the same picture
    assert G.draw_program(p) == G.draw_program(p)


def test_seed_examples_draw_with_few_crossings():
    for p in (families.load_store()[0], families.first_example()[0], families.writes_reads()[0],
              families.lost_update(3)[0]):
        assert G.layout_programs([p]).crossings == 0
    # Figure 1: the Split feeds both replicas and the Write's control edge goes
    # to both; one crossing is the fewest a layered drawing can do
    assert G.layout_programs([families.figure1(2)[0]]).crossings <= 1


def test_barycenter_sweeps_remove_avoidable_crossings():
    layers = [["a", "b", "c"], ["x", "y", "z"]]
    down = {"a": ["z"], "b": ["y"], "c": ["x"]}
    up = {"z": ["a"], "y": ["b"], "x": ["c"]}
    assert G._total_crossings(layers, down) == 3
    best, crossings = G._reduce_crossings(layers, down, up)
    assert crossings == 0 and G._total_crossings(best, down) == 0
    assert sorted(best[1]) == ["x", "y", "z"]


def test_isotonic_regression_is_the_least_squares_monotone_fit():
    z = [3.0, 1.0, 2.0, 5.0, 4.0]
    fit = G._isotonic(z, [1.0] * 5)
    assert all(a <= b + 1e-12 for a, b in zip(fit, fit[1:]))
    assert fit == pytest.approx([2.0, 2.0, 2.0, 4.5, 4.5])


def test_shared_layout_puts_shared_nodes_at_the_same_place():
    p = families.figure1(2)[0]
    # a rewrite that replaces one node, adds one and changes a constant
    nodes = [n for n in p.nodes if n.name != "project1"]
    nodes.append(P.apply("project1b", "Neg", "split0_0:1" if "split0_0" in p.node else "split0:1"))
    nodes = [n.replace(inputs=tuple(P.parse_input("project1b") if str(i) == "project1" else i
                                    for i in n.inputs)) for n in nodes]
    q = p.replace(nodes=tuple(nodes)).validated()
    a, b, d, lay = G.draw_pair(p, q)
    assert d.removed_nodes == {"project1"} and d.added_nodes == {"project1b"}
    ra, rb = dom(a).find("svg"), dom(b).find("svg")
    assert ra.attrs["viewbox"] == rb.attrs["viewbox"]  # html.parser lowercases names
    pos = lambda svg, name: svg.find("g", "node", data_node=name).find("rect", None).attrs  # noqa: E731
    for n in set(p.node) & set(q.node):
        assert pos(ra, n)["x"] == pos(rb, n)["x"] and pos(ra, n)["y"] == pos(rb, n)["y"]
    assert "removed" in ra.find("g", "node", data_node="project1").classes
    assert "added" in rb.find("g", "node", data_node="project1b").classes


def test_a_modified_node_is_marked_in_both_drawings():
    p = P.program([P.const("c", 1), P.apply("n", "Neg", "c")], {"o": "n"})
    q = P.program([P.const("c", 2), P.apply("n", "Neg", "c")], {"o": "n"})
    a, b, d, _ = G.draw_pair(p, q)
    assert d.modified_nodes == {"c"}
    for svg in (a, b):
        g = dom(svg).find("g", "node", data_node="c")
        assert "modified" in g.classes
    assert "Const 1" in a and "Const 2" in b


def test_invalid_rewrites_still_draw():
    """A rewrite may produce a cycle or an input from a node that does not
    exist; the page must still show it (the verdict is `invalid`)."""
    p = families.first_example()[0]
    bad = {"format": "tfsem.program/1", "variables": ["x"], "nodes": [
        {"name": "vx", "op": "Var", "var": "x"},
        {"name": "w", "op": "Write", "inputs": ["vx", "$B", "^r"]},
        {"name": "vx2", "op": "Var", "var": "x"},
        {"name": "r", "op": "Read", "inputs": ["vx2", "^w", "^ghost"]}],
        "outputs": {"out": "r"}}
    q = program_from_json(bad, validate=False)
    a, b, d, lay = G.draw_pair(p, q)
    svg = dom(b).find("svg")
    assert svg.find_all("g", "missing")[0].attrs["data-stub"] == "ghost"
    assert len(svg.find_all("g", "edge")) == len(G.program_edges(q))
    case = {"format": "tfsem.case/1", "original": json.loads(json.dumps(
        __import__("tfsem.oracle.jsonio", fromlist=["x"]).program_to_json(p))), "rewritten": bad}
    html = render_finding_page(case, {"verdict": "invalid", "reason": "cycle w -> r -> w"})
    root = dom(html)
    assert set(program_svgs(root)) == {"original", "rewritten"}
    assert "cycle w -&gt; r -&gt; w" in html
    assert root.find_all("table", "steps") == []


def _arrow_ends_outside(lay: G.Layout) -> list:
    """Edges whose last piece ends inside their target's box (the arrowhead
    would be drawn under the box): the point of the curve just before its
    end must lie outside the box it points at."""
    hidden = []
    for key, route in lay.routes.items():
        (x0, y0), (x1, y1) = route.points[-2], route.points[-1]
        if route.d is not None:      # a self-loop: its last control point is points[-2]
            c1 = c2 = (x0, y0)
        else:                        # a cubic piece with vertical tangents
            k = (y1 - y0) / 2
            c1, c2 = (x0, y0 + k), (x1, y1 - k)
        t = 0.97                     # a point of the curve just before its end, under the arrowhead
        cx, cy = ((1 - t) ** 3 * a + 3 * (1 - t) ** 2 * t * b + 3 * (1 - t) * t ** 2 * c + t ** 3 * d
                  for a, b, c, d in zip((x0, y0), c1, c2, (x1, y1)))
        for b in lay.boxes.values():
            if b.kind == "node" and abs(b.x - x1) <= b.w / 2 + 0.5 and b.top - 0.5 <= y1 <= b.bottom + 0.5:
                if b.x - b.w / 2 < cx < b.x + b.w / 2 and b.top < cy < b.bottom:
                    hidden.append(key)
    return hidden


def test_every_arrowhead_is_outside_the_box_it_points_at():
    """Issue 16.8: an edge added in the opposite direction of a removed one
    (a cycle through the shared layout) ended under its target's box with
    no visible arrowhead; a control self-loop (issue 18.1) had no route at
    all (KeyError).  Every edge now ends outside its target."""
    p = P.program([P.var("v", "x"), P.read("a", "v"), P.apply("b", "Neg", "a"),
                   P.apply("c", "Neg", "b", "^a")], {"out": "c"}, ["x"])
    # the rewrite turns the control edge a -> c around (c -> a) and adds a self-loop on b
    nodes = [n.replace(inputs=tuple(i for i in n.inputs if not isinstance(i, P.ControlIn))) if n.name == "c"
             else n.replace(inputs=n.inputs + (P.ControlIn("c"),)) if n.name == "a"
             else n.replace(inputs=n.inputs + (P.ControlIn("b"),)) if n.name == "b" else n for n in p.nodes]
    q = p.replace(nodes=tuple(nodes))
    lay = G.layout_programs([p, q])
    up = ("c", "c", "a")
    assert up in lay.routes and ("c", "b", "b") in lay.routes
    assert _arrow_ends_outside(lay) == []
    # an upward edge enters its target from below
    a, c = lay.boxes[("n", "a")], lay.boxes[("n", "c")]
    assert a.y < c.y and lay.routes[up].points[-1][1] == pytest.approx(a.bottom)
    a_svg, b_svg, d, _ = G.draw_pair(p, q)
    assert dom(b_svg).find("g", "edge", **{"data-edge": "b#1"}).attrs["class"] == "edge control added"


def test_a_pair_past_the_drawing_budget_is_summarized_not_drawn_whole():
    """Issue 18.6: a 500-node pair took 107 s to draw.  Past the budget the
    page draws only the part around the changes and says why."""
    nodes = [P.var("v", "x"), P.read("r0", "v")]
    nodes += [P.apply(f"r{i}", "Neg", f"r{i - 1}") for i in range(1, 500)]
    p = P.program(nodes, {"out": "r499"}, ["x"])
    q = p.replace(nodes=tuple(n.replace(op="Copy") if n.name == "r250" else n for n in p.nodes))
    with pytest.raises(G.TooBig):
        G.layout_programs([p, q])
    html = render_finding_page(make_case(p, q), {"verdict": "unsound"})
    root = dom(html)
    assert "past the drawing budget" in root.find("div", "not-drawn").text()
    part = root.find("div", "part")
    drawn = {g.attrs["data-node"] for g in part.find("svg", "program-graph").find_all("g", "node")}
    # the change and three hops around it (issue 23.4); the rest folded into one group
    assert drawn == {f"r{i}" for i in range(247, 254)}
    assert {g.attrs["data-group"] for g in part.find_all("g", "group")} == {"top-level/…"}


def test_the_time_budget_stops_drawing_and_says_so():
    p, q, _, _, verdict = hand_case()
    spent = G.DrawBudget(seconds=0.0)
    html = render_finding_page(make_case(p, q), verdict, steps="all", budget=spent)
    assert "not drawn: the drawing budget" in html and 'class="graph state-graph' not in html
    # the replay (linear per step: 3,000 steps took 19 s) stops too, and says where
    assert f"replayed up to step 0 of {len(SCHEDULE)}" in html
    assert dom(html).find_all("div", "problems") == []   # a cut replay is not a wrong verdict


# ---------------------------------------------------------------------------
# The finding page


def step_rows(root: El) -> list[El]:
    return root.find("table", "steps").find_all("tr", "step")


def test_step_table_has_one_row_per_step_with_the_states(atomic_page):
    _, _, p, q, verdict = atomic_page
    root = dom(render_finding_page(make_case(p, q, expect="unsound"), verdict, steps="all",
                                   meta={"pass": "hoist-reads"}, case_filename="f1.json"))
    rows = step_rows(root)
    assert [r.find_all("td")[1].text() for r in rows] == SCHEDULE
    initial = root.find("table", "steps").find("tr", "initial")
    all_rows = [initial, *rows]
    for i, row in enumerate(all_rows):
        vars_ = {s.attrs["data-var"]: s.text() for s in row.find_all("span", "var")}
        assert vars_ == {"X": f"X = {EXPECTED_VARS[i][0]}", "Y": f"Y = {EXPECTED_VARS[i][1]}"}, i
        out = [s for s in row.find_all("span", "transit") if s.attrs["data-edge"] == "out:r0"]
        assert [s.find("b").text() for s in out] == ([EXPECTED_OUT[i]] if EXPECTED_OUT[i] else []), i
        # the state figure of the row shows the same values
        fig = row.find("svg", "state-graph")
        box = [t.text() for t in fig.find("g", "varbox").find_all("text", "var")]
        assert box == [f"X = {EXPECTED_VARS[i][0]}", f"Y = {EXPECTED_VARS[i][1]}"]
        if i:
            assert fig.find_all("g", "fired")[0].attrs["data-node"] == SCHEDULE[i - 1]
    # what changed in a step is marked: step 11 (wx1) sets X to 1
    assert [s.attrs["data-var"] for s in rows[10].find_all("span", "changed")] == ["X"]
    # after step vx2, the handle X is in transit on the variable edge vx2 -> wx2
    transit = {s.attrs["data-edge"]: s.find("b").text() for s in rows[1].find_all("span", "transit")}
    assert transit == {"wx2#0": "X", "wx2#1": "2"}
    assert "final value of variable X differs" in root.find("h1").text()
    assert root.find_all("div", "problems") == []


def test_by_default_only_the_steps_that_matter_are_drawn(atomic_page):
    """Issue 16.7: the initial state, each step that accesses a variable and
    the last state get a picture; the free steps are rows of text, and the
    page with every step drawn is one link away."""
    _, root, p, q, verdict = atomic_page
    rows = [root.find("table", "steps").find("tr", "initial"), *step_rows(root)]
    drawn = [i for i, r in enumerate(rows) if r.find_all("svg", "state-graph")]
    accesses = [i for i, step in enumerate(SCHEDULE, 1) if q.node[step].op in ("Read", "Assign")]
    assert drawn == [0, *accesses] and len(drawn) < len(rows)
    assert len(rows) == len(SCHEDULE) + 1          # every step still has its row of text
    linked = dom(render_finding_page(make_case(p, q), verdict, steps_href="f1-steps.html"))
    assert [a.attrs["href"] for a in linked.find_all("a", "all-steps")] == ["f1-steps.html"]


def test_outcomes_table_highlights_the_extra_outcome(atomic_page):
    html, root, *_ = atomic_page
    table = root.find("table", "outcomes")
    head = [th.text() for th in table.find("thead").find_all("th")]
    assert head[1:4] == ["output r0", "X (final)", "Y (final)"]
    originals = table.find_all("tr", "original-outcome")
    assert [[td.text() for td in r.find_all("td")[1:4]] for r in originals] == \
        [["0", "2", "5"], ["5", "2", "5"], ["5", "1", "5"]]
    extra = table.find("tr", "extra")
    cells = extra.find_all("td")
    assert [c.text() for c in cells[1:4]] == ["0", "1", "5"]
    assert [c.text() for c in cells if "differs" in c.classes] == ["1"]


def test_sigma_confirmation_and_reproducer(atomic_page):
    html, root, p, q, verdict = atomic_page
    sigma = {tuple(td.text() for td in r.find_all("td")) for r in root.find("table", "sigma").find_all("tr")[1:]}
    assert sigma == {("initial value", "X", "0"), ("initial value", "Y", "0")}
    backends = {li.attrs["data-backend"]: "good" in li.find("span").classes
                for li in root.find("ul", "confirmed").find_all("li")}
    assert backends == {"oracle": True, "numpy": True, "cupy": False}
    link = root.find("a", "case")
    assert link.attrs["download"] == "f1.json"
    prefix = "data:application/json;charset=utf-8,"
    assert link.attrs["href"].startswith(prefix)
    case_json = json.loads(urllib.parse.unquote(link.attrs["href"][len(prefix):]))
    assert case_json == case_to_json(make_case(p, q, expect="unsound"))
    assert "tfsem check f1.json" in [c.text() for c in root.find("ul", "commands").find_all("code", "command")]
    assert "tfsem outcomes f1.rewritten.json --init X=0 --init Y=0" in [c.text() for c in root.find("ul", "commands").find_all("code", "command")]


def test_pages_reference_nothing_on_a_network(atomic_page):
    html = atomic_page[0]
    case, verdict = load_store_finding("decomposed")
    campaigns, stats, findings, history = sample_index_data()
    for page in (html, render_finding_page(case, verdict), render_index(campaigns, stats, findings, history)):
        assert not re.search(r"https?://", page)
        assert not re.search(r"<script|<link|<iframe|@import|url\((?!#)", page, re.I)
        csp = [m.attrs["content"] for m in dom(page).find_all("meta")
               if m.attrs.get("http-equiv") == "Content-Security-Policy"]
        assert csp and csp[0].startswith("default-src 'none';")


def test_decomposed_steps_show_the_pending_read():
    case, verdict = load_store_finding("decomposed")
    root = dom(render_finding_page(case, verdict))
    schedule = verdict["counterexample"]["schedule"]
    rows = step_rows(root)
    assert [r.find_all("td")[1].text() for r in rows] == schedule
    for i, label in enumerate(schedule):
        node, _, phase = label.partition("@")
        pending = {s.attrs["data-node"] for s in rows[i].find_all("span", "pending")}
        if phase == "read":
            assert node in pending  # between its read and its write the Assign holds what it read
        if phase == "write":
            assert node not in pending
    assert root.find_all("div", "problems") == []
    key = {li.find_all("span")[1].text() for li in root.find("ol", "schedule").find_all("li", "key")}
    assert key == set(verdict["counterexample"]["key_steps"])


def test_a_verdict_that_does_not_hold_is_flagged_not_drawn_as_true():
    p, q, _, _, verdict = hand_case()
    broken = json.loads(json.dumps(verdict))
    broken["counterexample"]["schedule"] = ["r0"] + SCHEDULE  # r0 cannot fire first
    root = dom(render_finding_page(make_case(p, q), broken))
    assert "does not replay" in root.find("div", "problems").text()
    wrong = json.loads(json.dumps(verdict))
    wrong["counterexample"]["outcome"]["state"]["X"] = 2  # claims an outcome P has
    text = dom(render_finding_page(make_case(p, q), wrong)).find("div", "problems").text()
    assert "not the outcome the verdict states" in text and "not a counterexample" in text


def test_other_verdicts_render_without_a_run():
    p, q, *_ = hand_case()
    for v in ({"verdict": "sound"}, {"verdict": "no-counterexample", "tried": 200, "reason": "no σ"},
              {"verdict": "unknown", "reason": "budget exceeded: states"}):
        root = dom(render_finding_page(make_case(p, q), v))
        assert v["verdict"].upper() in root.find("h1").text()
        assert set(program_svgs(root)) == {"original", "rewritten"}
        assert root.find_all("table", "steps") == []


def test_case_as_json_gives_the_same_page():
    case, verdict = load_store_finding("atomic")
    assert render_finding_page(case, verdict) == render_finding_page(case_to_json(case), verdict)


def test_hostile_names_are_escaped():
    evil = '<script>alert("x")</script>'
    var = 'x"><img src=y onerror=alert(1)>'
    p = P.program([P.var("v1", var), P.write(evil, "v1", "$b&c"), P.var("v2", var),
                   P.read("r", "v2", "^" + evil)], {"<o>": "r"}, [var])
    q = drop_control_inputs(p, "r")
    verdict = unsound_verdict(p, q, {"b&c": Tensor(2)}, {var: Tensor(1)})
    case = make_case(p, q, note="<b>bold</b> & <script>")
    html = render_finding_page(case, verdict, meta={"pass": "<i>pass</i>"})
    assert "<script" not in html.lower() and "<img" not in html.lower() and "<b>bold" not in html
    assert "&lt;script&gt;" in html
    root = dom(html)
    svg = program_svgs(root)["original"]
    assert evil in {g.attrs["data-node"] for g in svg.find_all("g", "node")}
    assert f"Var({var})" in svg.text()
    assert any(t.attrs.get("data-var") == var for t in root.find_all("span", "var"))
    campaigns, stats, findings, history = sample_index_data()
    stats = [dict(stats[0], **{"pass": evil})]
    findings = [dict(findings[0], **{"pass": evil, "id": evil, "page": 'x" onclick="alert(1)'})]
    index = render_index([dict(campaigns[0], settings={evil: evil})], stats, findings, history)
    assert "<script" not in index.lower() and 'onclick="' not in index
    assert dom(index).find("a", "finding-link").attrs["href"] == 'x" onclick="alert(1)'


# ---------------------------------------------------------------------------
# The index and the report folder


def test_index_shows_campaign_passes_findings_and_nights():
    campaigns, stats, findings, history = sample_index_data()
    findings = findings + [dict(findings[0], id="f9", status="fixed", page="findings/f9.html")]
    root = dom(render_index(campaigns, stats, findings, history))
    assert "2025-01-03 02:00 UTC" in root.find("div", "campaign").text()
    assert "10.0 min" in root.find("div", "campaign").text()
    rows = {r.attrs["data-pass"]: [td.text() for td in r.find_all("td")]
            for r in root.find("table", "passes").find("tbody").find_all("tr")}
    assert rows["hoist-reads"][:4] == ["hoist-reads", "4,210", "28.1", "1"]
    assert rows["cse"][2] == "40.8"
    for status, ids in (("new", ["f1"]), ("known", ["f0"]), ("fixed", ["f9"])):
        tables = [t for t in root.find_all("table", "findings") if status in t.classes]
        assert [a.text() for a in tables[0].find_all("a", "finding-link")] == ids
    plot = root.find("svg", "history")
    assert len(plot.find_all("g", "night")) == 3
    assert len(plot.find("polyline", "throughput").attrs["points"].split()) == 3


def test_claims_beside_findings():
    _, _, findings, _ = sample_index_data()
    assert claim_checks({"pass": "hoist-reads", "claims": {"atomic": "unsound"}}, findings) == \
        [("atomic", "unsound", "1 unsound finding", "good")]
    assert claim_checks({"pass": "hoist-reads", "claims": {"atomic": "sound"}}, findings)[0][3] == "bad"
    assert claim_checks({"pass": "cse", "claims": {"atomic": "unsound"}}, findings)[0][3] == "warn"
    assert claim_checks({"pass": "cse", "claims": "sound"}, findings) == \
        [("any", "sound", "nothing unsound", "good")]
    fixed = [dict(f, status="fixed") for f in findings]
    assert claim_checks({"pass": "hoist-reads", "claims": {"atomic": "sound"}}, fixed)[0][3] == "good"


def test_index_of_an_empty_database():
    root = dom(render_index([], [], [], []))
    assert "No campaign" in root.text() and "none" in root.text()


def test_report_folder_links_resolve(tmp_path: Path):
    campaigns, stats, findings, history = sample_index_data()
    pages = [FindingPage(f, *load_store_finding(f["semantics"])) for f in findings]
    pages.append(FindingPage(dict(findings[0], id="f1"), *load_store_finding("atomic")))  # same id twice
    index = write_report(tmp_path / "report", campaigns, stats, pages, history)
    assert index == tmp_path / "report" / "index.html"
    hrefs = [a.attrs["href"] for a in dom(index.read_text()).find_all("a", "finding-link")]
    assert len(hrefs) == 3 and len(set(hrefs)) == 3
    for href in hrefs:
        page = index.parent / href
        assert page.is_file()
        back = dom(page.read_text()).find("a", "back").attrs["href"]
        assert (page.parent / back).resolve() == index.resolve()


def test_a_crash_finding_without_a_rewrite_shows_the_program_and_traceback():
    from tfsem.oracle.jsonio import program_to_json
    p = families.first_example()[0]
    case = {"format": "tfsem.case/1", "original": program_to_json(p), "rewritten": None}
    trace = "Traceback (most recent call last):\n  File \"pass.py\", line 3\nZeroDivisionError: <boom>"
    html = render_finding_page(case, {"verdict": "crash", "reason": trace},
                               meta={"pass": "bad-pass", "first_seen": 1735869600})
    root = dom(html)
    assert set(program_svgs(root)) == {"original"}
    assert root.find("pre", "reason").text() == trace
    assert "2025-01-03 02:00 UTC" in root.find("ul", "meta").text()
    assert root.find_all("div", "problems") == []


def test_cell_verdicts_judge_each_claim_by_its_own_cell():
    """Issue 16.1: findings in atomic/outputs+state say nothing of the claim
    for atomic/outputs."""
    from tfsem.reports.index import cell_verdicts
    cell = {"pass": "prune", "semantics": "atomic", "programs": 100}
    cells = [dict(cell, observe="outputs", claim="sound"), dict(cell, observe="outputs+state", claim="unsound"),
             dict(cell, semantics="decomposed", observe="outputs", claim=None),
             dict(cell, semantics="decomposed", observe="outputs+state", claim="sound", programs=0)]
    f = {"pass": "prune", "kind": "unsound", "status": "new", "semantics": "atomic", "observe": "outputs+state"}
    crash = dict(f, kind="crash", semantics="decomposed", observe="outputs")
    verdicts = [r["verdict"] for r in cell_verdicts([], cells, [f])]
    assert verdicts == ["holds", "shown", "no-claim", "untested"]
    verdicts = [r["verdict"] for r in cell_verdicts([], cells, [f, crash, dict(f, observe="outputs")])]
    assert verdicts == ["broken", "shown", "fails", "untested"]
    unclaimed = dict(f, semantics="decomposed", observe="outputs")
    assert cell_verdicts([], cells[2:3], [unclaimed])[0]["verdict"] == "unclaimed"
    assert cell_verdicts([], cells[:1], [dict(f, observe="outputs", status="fixed")])[0]["verdict"] == "holds"
    # without per-cell statistics, the claims keyed "semantics/observe" are cells too
    stats = [{"pass": "prune", "claims": {"atomic/outputs": "sound", "atomic/outputs+state": "unsound"}}]
    assert [r["verdict"] for r in cell_verdicts(stats, None, [f])] == ["holds", "shown"]
    assert claim_checks(stats[0], [f]) == [("atomic/outputs", "sound", "nothing unsound", "good"),
                                           ("atomic/outputs+state", "unsound", "1 unsound finding", "good")]


def test_index_says_how_hard_each_cell_was_tried():
    """Issue 16.3 in the report: per cell, programs tested, left unchanged,
    proved sound, no counterexample, unknown; a warning where the pass
    almost never changed a program."""
    cells = [{"pass": "dce", "semantics": "atomic", "observe": "outputs", "claim": "sound", "programs": 200,
              "identical": 190, "sound": 9, "no_counterexample": 1, "unknown": 0},
             {"pass": "cse", "semantics": "atomic", "observe": "outputs", "claim": "sound", "programs": 100,
              "identical": 30, "sound": 60, "no_counterexample": 4, "unknown": 6}]
    root = dom(render_index([], [], [], [], cells=cells))
    rows = {r.attrs["data-pass"]: [td.text() for td in r.find_all("td")]
            for r in root.find("table", "verdicts").find("tbody").find_all("tr")}
    assert rows["dce"][4:9] == ["200", "190 (95%)", "9", "1", "0"]
    assert rows["cse"][4:9] == ["100", "30 (30%)", "60", "4", "6"]
    warnings = [w.text() for w in root.find_all("div", "few-changes")]
    assert len(warnings) == 1 and warnings[0].startswith("dce (atomic / outputs) left 95%")
    # the verdicts lead the page, the settings are folded away
    assert root.find("h2").text() == "Verdict per pass and cell"


def test_history_labels_tell_two_campaigns_of_one_day_apart():
    """The plot over the nights labels each bar by its day; two campaigns of
    one day get their times, two of one minute their numbers too."""
    from tfsem.reports.index import history_labels, history_plot
    history = [{"campaign": 1, "started": "2025-01-03T02:00:00Z", "findings": 1, "new": 1},
               {"campaign": 2, "started": "2025-01-04T02:00:00Z", "findings": 0, "new": 0},
               {"campaign": 3, "started": "2025-01-04T14:30:00Z", "findings": 2, "new": 0},
               {"campaign": 4, "started": "2025-01-05T01:00:00Z", "findings": 0, "new": 0},
               {"campaign": 5, "started": "2025-01-05T01:00:20Z", "findings": 0, "new": 0}]
    labels = history_labels(history)
    assert labels == ["01-03", "01-04 02:00", "01-04 14:30", "01-05 01:00 #4", "01-05 01:00 #5"]
    svg = history_plot(history)
    for label in labels:
        assert f">{label}</text>" in svg
    assert "1 finding (1 new)" in svg and "2 findings (0 new)" in svg
