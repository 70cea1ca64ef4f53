"""Hypothesis strategies of programs with conditionals and loops around
stateful ops (SPEC section 9), so that the fuzzers reach control flow.

    >>> from tfsem.generators.control_flow import control_flow_programs
    >>> from tfsem.generators.strategies import inputs_for

A program is a few *blocks* over one to three int64 scalar variables, each
block one of:

* **cond** -- `tf.cond` as TensorFlow 1 lowers it: the variables' handles
  and a pivot constant go through Switches on a predicate that is a
  constant, a bool feed, or computed from a Read (`Less(Read x, k)`); each
  branch makes zero to two accesses (an Assign-f of a constant, a Read, in
  order or racing) through its port; a Merge of the branches' values is
  fetched;
* **loop** -- `tf.while_loop` as TensorFlow 1 lowers it: a counter from 0 to
  a trip count (a constant 0-3, or an int64 feed: σ decides), the variables'
  handles through constant Enters, a body of one to three accesses, an
  accumulator loop variable that sums the body's Reads (and, sometimes, a
  loop-invariant pure value computed from constant Enters, for code motion
  to move), the counter and the accumulator fetched through Exits;
* **plain** -- a Read (fetched) or an Assign outside any conditional or
  loop, racing the others or ordered after one of them by a control edge;
* **race** -- an Assign outside, ordered with nothing (what lifting a
  loop's accesses out of it gets wrong).

With `stacks` (the generator `stack_cases`), a program also has one of
TensorFlow 1's stacks (`StackV2`, its max_size -1 (no limit), 0, 1, 2 or 3,
so that pushes overflow), as the gradients of `tf.compat.v1` loops use
them (oracle/opdefs/stacks.py):

* a loop pushes its counter every iteration, through a constant Enter of
  the handle, ordered before the next iteration (as TensorFlow's gradient
  orders it) or not, its output unused or added into the loop's sum;
* a branch of a cond pushes a constant through a Switch of the handle;
* **stack** -- a block outside that pushes a constant and then, half the
  time, pops (fetched) and sometimes closes the stack.

A stack with no pop is what Grappler's loop optimizer's stack-push removal
acts on (docs/grappler-control-flow.md).

Names say where a node is (`c0/...`, `l1/...`, `o2/...`), so a shrunk
counterexample reads like the program.  Programs shrink towards fewer
blocks, fewer accesses and constant predicates.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tfsem.oracle.jsonio import program_from_json
from tfsem.oracle.program import Program

ASSIGN_FNS = ("Add", "Snd")


def _bool(b: bool) -> dict:
    return {"dtype": "bool", "value": b}


class _Builder:
    def __init__(self, draw, variables: list[str], bounded_trips: bool = False,
                 invariants: bool = False, stacks: bool = False):
        self.draw = draw
        self.stack: str | None = None    # the StackV2 node, with `stacks`
        self.bounded_trips = bounded_trips
        self.invariants = invariants     # every loop has a loop-invariant value
        self.variables = variables
        self.nodes: list[dict] = []
        self.outputs: dict[str, str] = {}
        self.feeds: dict[str, dict] = {}
        self.ends: list[str] = []      # a node per finished block (for control edges)
        if stacks:
            self.add(name="st/max_size", op="Const",
                     value={"dtype": "int32", "value": draw(st.sampled_from((-1, 0, 1, 2, 3)))})
            self.stack = self.add(name="st/s", op="StackV2", inputs=["st/max_size"],
                                  elem_type="int64", stack_name="st")

    def add(self, **node: Any) -> str:
        self.nodes.append(node)
        return node["name"]

    def maybe_after(self) -> list[str]:
        """A control edge from an earlier block's end, sometimes."""
        if self.ends and self.draw(st.booleans()):
            return ["^" + self.draw(st.sampled_from(self.ends))]
        return []

    # -- blocks ---------------------------------------------------------------

    def cond(self, i: int) -> None:
        d, c = self.draw, f"c{i}"
        kind = d(st.sampled_from(("const", "feed", "read")))
        if kind == "const":
            pred = self.add(name=f"{c}/pred", op="Const", value=_bool(d(st.booleans())),
                            inputs=self.maybe_after())
        elif kind == "feed":
            self.feeds[f"p{i}"] = {"dtype": "bool", "shape": []}
            pred = f"$p{i}"
        else:
            x = d(st.sampled_from(self.variables))
            self.add(name=f"{c}/pv", op="Var", var=x)
            self.add(name=f"{c}/pr", op="Read", inputs=[f"{c}/pv"] + self.maybe_after())
            self.add(name=f"{c}/pk", op="Const", value=d(st.integers(-1, 2)))
            pred = self.add(name=f"{c}/pred", op="Less", inputs=[f"{c}/pr", f"{c}/pk"])
        self.add(name=f"{c}/k", op="Const", value=0)
        self.add(name=f"{c}/sk", op="Switch", inputs=[f"{c}/k", pred])
        switched: set[str] = set()
        values = []
        for side, port in (("f", 0), ("t", 1)):
            pivot = self.add(name=f"{c}/{side}", op="Identity", inputs=[f"{c}/sk:{port}"])
            value = pivot
            prev = None
            for a in range(d(st.integers(0, 2))):
                x = d(st.sampled_from(self.variables))
                if x not in switched:
                    switched.add(x)
                    self.add(name=f"{c}/v{x}", op="Var", var=x)
                    self.add(name=f"{c}/s{x}", op="Switch", inputs=[f"{c}/v{x}", pred])
                order = [f"^{prev}"] if prev and d(st.booleans()) else []
                name = f"{c}/{side}{a}"
                if self.stack and d(st.integers(0, 2)) == 0:
                    # a push of a constant through the handle's Switch
                    if f"{c}/ss" not in {n["name"] for n in self.nodes}:
                        self.add(name=f"{c}/ss", op="Switch", inputs=[self.stack, pred])
                    self.add(name=f"{name}k", op="Const", value=d(st.integers(1, 5)),
                             inputs=[f"^{pivot}"])
                    prev = self.add(name=name, op="StackPushV2", elem_type="int64",
                                    inputs=[f"{c}/ss:{port}", f"{name}k"] + order)
                elif d(st.booleans()):
                    self.add(name=f"{name}k", op="Const", value=d(st.integers(1, 5)),
                             inputs=[f"^{pivot}"])
                    prev = self.add(name=name, op="Assign", fn=d(st.sampled_from(ASSIGN_FNS)),
                                    inputs=[f"{c}/s{x}:{port}", f"{name}k"] + order)
                else:
                    prev = value = self.add(name=name, op="Read",
                                            inputs=[f"{c}/s{x}:{port}"] + order)
            values.append(value)
        self.add(name=f"{c}/m", op="Merge", inputs=values)
        self.outputs[c] = f"{c}/m"
        self.ends.append(f"{c}/m")

    def loop(self, i: int) -> None:
        d, lp = self.draw, f"l{i}"
        frame = f"{lp}/while"
        self.add(name=f"{lp}/i0", op="Const", value=0, inputs=self.maybe_after())
        self.add(name=f"{lp}/enter", op="Enter", frame_name=frame, inputs=[f"{lp}/i0"],
                 parallel_iterations=d(st.sampled_from((1, 10))))
        if d(st.integers(0, 5)) == 0:
            self.feeds[f"n{i}"] = {"dtype": "int64", "shape": []}
            limit = f"$n{i}"
            if self.bounded_trips:   # (FloorMod by 4: 0 to 3 trips, still decided by σ)
                self.add(name=f"{lp}/four", op="Const", value=4)
                limit = self.add(name=f"{lp}/trips", op="FloorMod", inputs=[limit, f"{lp}/four"])
        else:
            limit = self.add(name=f"{lp}/n", op="Const", value=d(st.integers(0, 3)))
        self.add(name=f"{lp}/lim", op="Enter", frame_name=frame, is_constant=True, inputs=[limit])
        self.add(name=f"{lp}/merge", op="Merge", inputs=[f"{lp}/enter", f"{lp}/next"])
        self.add(name=f"{lp}/less", op="Less", inputs=[f"{lp}/merge", f"{lp}/lim"])
        self.add(name=f"{lp}/cond", op="LoopCond", inputs=[f"{lp}/less"])
        self.add(name=f"{lp}/sw", op="Switch", inputs=[f"{lp}/merge", f"{lp}/cond"])
        self.add(name=f"{lp}/body", op="Identity", inputs=[f"{lp}/sw:1"])
        handles: set[str] = set()
        reads: list[str] = []
        prev = None
        for a in range(d(st.integers(1, 3))):
            x = d(st.sampled_from(self.variables))
            if x not in handles:
                handles.add(x)
                self.add(name=f"{lp}/v{x}", op="Var", var=x)
                self.add(name=f"{lp}/h{x}", op="Enter", frame_name=frame, is_constant=True,
                         inputs=[f"{lp}/v{x}"])
            order = [f"^{prev}"] if prev and d(st.booleans()) else []
            name = f"{lp}/a{a}"
            if d(st.booleans()):
                self.add(name=f"{name}k", op="Const", value=d(st.integers(1, 5)),
                         inputs=[f"^{lp}/body"])
                prev = self.add(name=name, op="Assign", fn=d(st.sampled_from(ASSIGN_FNS)),
                                inputs=[f"{lp}/h{x}", f"{name}k"] + order)
            else:
                prev = self.add(name=name, op="Read", inputs=[f"{lp}/h{x}", f"^{lp}/body"] + order)
                reads.append(prev)
        pushed, wait_push = None, False
        if self.stack and d(st.booleans()):
            # the counter pushed every iteration (a v1 gradient's forward
            # accumulator), through a constant Enter of the handle
            self.add(name=f"{lp}/hs", op="Enter", frame_name=frame, is_constant=True,
                     inputs=[self.stack])
            pushed = self.add(name=f"{lp}/push", op="StackPushV2", elem_type="int64",
                              inputs=[f"{lp}/hs", f"{lp}/body"])
            if d(st.integers(0, 3)) == 0:
                reads.append(pushed)        # its output used: an overflow shows
            else:   # the next iteration waits for it half the time (TF's gradient does)
                wait_push = d(st.booleans())
        invariant = None
        if self.invariants or d(st.booleans()):
            self.add(name=f"{lp}/c", op="Const", value=d(st.integers(1, 3)))
            self.add(name=f"{lp}/ce", op="Enter", frame_name=frame, is_constant=True,
                     inputs=[f"{lp}/c"])
            invariant = self.add(name=f"{lp}/inv", op="Add", inputs=[f"{lp}/ce", f"{lp}/lim"])
        if reads or invariant:
            self.add(name=f"{lp}/s0", op="Const", value=0)
            self.add(name=f"{lp}/s_enter", op="Enter", frame_name=frame, inputs=[f"{lp}/s0"])
            self.add(name=f"{lp}/s_merge", op="Merge", inputs=[f"{lp}/s_enter", f"{lp}/s_next"])
            self.add(name=f"{lp}/s_sw", op="Switch", inputs=[f"{lp}/s_merge", f"{lp}/cond"])
            acc = self.add(name=f"{lp}/s_body", op="Identity", inputs=[f"{lp}/s_sw:1"])
            for k, term in enumerate(reads + ([invariant] if invariant else [])):
                acc = self.add(name=f"{lp}/s_add{k}", op="Add", inputs=[acc, term])
            self.add(name=f"{lp}/s_next", op="NextIteration", inputs=[acc])
            self.add(name=f"{lp}/s_exit", op="Exit", inputs=[f"{lp}/s_sw"])
            self.outputs[f"{lp}_sum"] = f"{lp}/s_exit"
        self.add(name=f"{lp}/one", op="Const", value=1, inputs=[f"^{lp}/body"])
        order = [f"^{prev}"]
        if wait_push:
            order.append(f"^{pushed}")   # the next iteration waits for the push
        self.add(name=f"{lp}/add", op="Add", inputs=[f"{lp}/body", f"{lp}/one"] + order)
        self.add(name=f"{lp}/next", op="NextIteration", inputs=[f"{lp}/add"])
        self.add(name=f"{lp}/exit", op="Exit", inputs=[f"{lp}/sw"])
        self.outputs[lp] = f"{lp}/exit"
        self.ends.append(f"{lp}/exit")

    def stack_block(self, i: int) -> None:
        """A push of a constant outside; half the time a pop after it
        (fetched), sometimes a close after that."""
        d, o = self.draw, f"o{i}"
        if self.stack is None:
            return self.plain(i)
        self.add(name=f"{o}/k", op="Const", value=d(st.integers(1, 9)))
        push = self.add(name=f"{o}/push", op="StackPushV2", elem_type="int64",
                        inputs=[self.stack, f"{o}/k"] + self.maybe_after())
        end = push
        if d(st.booleans()):
            end = self.add(name=f"{o}/pop", op="StackPopV2", elem_type="int64",
                           inputs=[self.stack, f"^{push}"])
            self.outputs[o] = end
        if d(st.integers(0, 3)) == 0:
            end = self.add(name=f"{o}/close", op="StackCloseV2", inputs=[self.stack, f"^{end}"])
        self.ends.append(end)
        return None

    def race(self, i: int) -> None:
        """An Assign beside the other blocks, ordered with none of them."""
        self.plain(i, write=True, after=[])

    def plain(self, i: int, write: bool | None = None, after: list[str] | None = None) -> None:
        d, o = self.draw, f"o{i}"
        x = d(st.sampled_from(self.variables))
        self.add(name=f"{o}/v", op="Var", var=x)
        after = self.maybe_after() if after is None else after
        if not write if write is not None else d(st.booleans()):
            self.add(name=f"{o}/r", op="Read", inputs=[f"{o}/v"] + after)
            self.outputs[o] = f"{o}/r"
            self.ends.append(f"{o}/r")
        else:
            self.add(name=f"{o}/k", op="Const", value=d(st.integers(1, 9)))
            self.add(name=f"{o}/w", op="Assign", fn=d(st.sampled_from(ASSIGN_FNS)),
                     inputs=[f"{o}/v", f"{o}/k"] + after)
            self.ends.append(f"{o}/w")


@st.composite
def control_flow_programs(draw, max_blocks: int = 3, kinds: tuple[str, ...] = ("cond", "loop"),
                          observe_state: bool = True, others: tuple[str, ...] | None = None,
                          bounded_trips: bool = False, invariants: bool = False,
                          stacks: bool = False) -> Program:
    """Programs with at least one block of `kinds` ("cond", "loop") and up
    to `max_blocks` blocks in all (see the module docstring); the blocks
    after the first are drawn from `others` (default: `kinds` and "plain";
    when given, there is at least one).
    `bounded_trips`: a trip count that is a feed goes through FloorMod by 4
    (0 to 3 trips; otherwise σ may make a loop reach the iteration bound).
    `invariants`: every loop computes a loop-invariant value (else half).
    `stacks`: one stack, pushed to by loops, branches and "stack" blocks."""
    # (one variable two times in three: accesses meet more often)
    variables = [f"x{k}" for k in range(draw(st.sampled_from((1, 2, 1))))]
    b = _Builder(draw, variables, bounded_trips, invariants, stacks)
    first = draw(st.sampled_from(kinds))
    # (a plain access beside a block half the time: the races passes get wrong)
    later = (st.sampled_from(others) if others else
             st.one_of(st.just("plain"), st.sampled_from(kinds + ("plain",))))
    blocks = [first] + draw(st.lists(later, min_size=1 if others and max_blocks > 1 else 0,
                                     max_size=max_blocks - 1))
    for i, kind in enumerate(blocks):
        getattr(b, "stack_block" if kind == "stack" else kind)(i)
    if not observe_state and not b.outputs:   # (a program observed by outputs only fetches something)
        b.plain(len(blocks))
    raw = {"format": "tfsem.program/1", "variables": variables, "feeds": b.feeds,
           "nodes": b.nodes, "outputs": b.outputs}
    return program_from_json(raw)


def control_flow_cases(max_nodes: int = 12, observe: str = "outputs+state",
                       kinds: tuple[str, ...] = ("cond", "loop"),
                       max_blocks: int | None = None,
                       others: tuple[str, ...] | None = None,
                       invariants: bool = False, stacks: bool = False) -> st.SearchStrategy:
    """The fuzz loop's generator (campaigns/loop.py: `(max_nodes, observe) ->
    strategy of (program, feeds, init)`) for passes that act on control
    flow: programs of control_flow_programs() and σ of inputs_for()."""
    from .strategies import inputs_for

    @st.composite
    def case(draw):
        blocks = max_blocks or (3 if max_nodes >= 16 else 2)
        p = draw(control_flow_programs(max_blocks=blocks, kinds=kinds, others=others,
                                       observe_state=observe != "outputs", bounded_trips=True,
                                       invariants=invariants, stacks=stacks))
        feeds, init = draw(inputs_for(p))
        return p, feeds, init

    return case()


def stack_cases(max_nodes: int = 12, observe: str = "outputs+state") -> st.SearchStrategy:
    """control_flow_cases() with a stack (TensorFlow 1's StackV2: pushes in
    loops, branches and blocks outside, pops half the time, max_size from
    -1 to 3): the generator of Grappler's stack-push removal
    (docs/grappler-control-flow.md)."""
    return control_flow_cases(max_nodes, observe, kinds=("loop", "cond", "stack"),
                              others=("loop", "cond", "stack", "plain"), stacks=True)


def loop_cases(max_nodes: int = 12, observe: str = "outputs+state") -> st.SearchStrategy:
    """control_flow_cases() with loops (and plain accesses beside them) only:
    the generator of the loop passes (licm, licm-reads, xla-lift)."""
    # (three blocks: a loop, a racing access and an access after the loop
    # are what a lifted or hoisted access gets wrong; one loop: two loops'
    # iterations interleave, and their outcome sets take long to enumerate)
    return control_flow_cases(max_nodes, observe, kinds=("loop",), max_blocks=3,
                              others=("plain", "race"))


def invariant_loop_cases(max_nodes: int = 12, observe: str = "outputs+state") -> st.SearchStrategy:
    """loop_cases() where every loop computes a loop-invariant value: the
    generator of loop-invariant code motion (licm)."""
    return control_flow_cases(max_nodes, observe, kinds=("loop",), max_blocks=3,
                              others=("plain", "race"), invariants=True)


def cond_cases(max_nodes: int = 12, observe: str = "outputs+state") -> st.SearchStrategy:
    """control_flow_cases() with conditionals (and plain accesses) only: the
    generator of dead-branch removal."""
    return control_flow_cases(max_nodes, observe, kinds=("cond",))


# ---------------------------------------------------------------------------
# Families: the control-flow passes' smallest counterexamples


def summing_loop(trips: str = "3", read_after: bool = True) -> Program:
    """i = 0; while i < trips: x += 1; s += Read x (after the add, when
    `read_after`): s fetched.  `trips` is a constant ("3") or a feed ("$n")."""
    lim = [{"name": "n", "op": "Const", "value": int(trips)}] if trips.isdigit() else []
    lim_in = "n" if trips.isdigit() else trips
    raw = {"format": "tfsem.program/1", "variables": ["x"],
           "nodes": lim + [
               {"name": "vx", "op": "Var", "var": "x"},
               {"name": "i0", "op": "Const", "value": 0},
               {"name": "s0", "op": "Const", "value": 0},
               {"name": "enter", "op": "Enter", "frame_name": "L", "inputs": ["i0"]},
               {"name": "s_enter", "op": "Enter", "frame_name": "L", "inputs": ["s0"]},
               {"name": "lim", "op": "Enter", "frame_name": "L", "is_constant": True,
                "inputs": [lim_in]},
               {"name": "hx", "op": "Enter", "frame_name": "L", "is_constant": True,
                "inputs": ["vx"]},
               {"name": "merge", "op": "Merge", "inputs": ["enter", "next"]},
               {"name": "s_merge", "op": "Merge", "inputs": ["s_enter", "s_next"]},
               {"name": "less", "op": "Less", "inputs": ["merge", "lim"]},
               {"name": "cond", "op": "LoopCond", "inputs": ["less"]},
               {"name": "sw", "op": "Switch", "inputs": ["merge", "cond"]},
               {"name": "s_sw", "op": "Switch", "inputs": ["s_merge", "cond"]},
               {"name": "body", "op": "Identity", "inputs": ["sw:1"]},
               {"name": "k", "op": "Const", "value": 1, "inputs": ["^body"]},
               {"name": "add", "op": "Assign", "fn": "Add", "inputs": ["hx", "k"]},
               {"name": "read", "op": "Read",
                "inputs": ["hx", "^body"] + (["^add"] if read_after else [])},
               {"name": "s_add", "op": "Add", "inputs": ["s_sw:1", "read"]},
               {"name": "s_next", "op": "NextIteration", "inputs": ["s_add"]},
               {"name": "inc", "op": "Add", "inputs": ["body", "k", "^add"]},
               {"name": "next", "op": "NextIteration", "inputs": ["inc"]},
               {"name": "exit", "op": "Exit", "inputs": ["sw"]},
               {"name": "s_exit", "op": "Exit", "inputs": ["s_sw"]}],
           "outputs": {"s": "s_exit"}}
    return program_from_json(raw)


def licm_reads_witness():
    """licm-reads' smallest counterexample: a loop of two trips that adds to
    x and sums its reads (program, feeds, init)."""
    from tfsem.oracle.values import Tensor
    return summing_loop("2"), {}, {"x": Tensor(0)}


def xla_lift_witness():
    """xla-lift's smallest counterexample: a loop of zero trips whose body
    adds to x, beside a Write x := 5, and a Read of x after both, fetched
    (program, feeds, init)."""
    from tfsem.oracle.jsonio import program_to_json
    from tfsem.oracle.values import Tensor
    raw = program_to_json(summing_loop("0"))
    raw["nodes"] += [{"name": "vw", "op": "Var", "var": "x"},
                     {"name": "five", "op": "Const", "value": 5},
                     {"name": "w", "op": "Assign", "fn": "Snd", "inputs": ["vw", "five"]},
                     {"name": "vr", "op": "Var", "var": "x"},
                     {"name": "after", "op": "Read", "inputs": ["vr", "^w", "^exit"]}]
    raw["outputs"] = {"after": "after"}
    return program_from_json(raw), {}, {"x": Tensor(0)}


__all__ = ["control_flow_programs", "control_flow_cases", "stack_cases", "loop_cases", "invariant_loop_cases", "cond_cases",
           "summing_loop", "licm_reads_witness", "xla_lift_witness"]
