"""Random control-flow programs with loops inside loops (plain `random`,
JSON objects of `tfsem.program/1`), for differential tests of the
control-flow engine (benchmarks/review_chain_engines.py,
tests/test_review_attacks_chain_nested.py).

A program is one to three blocks over one or two int64 variables; a block
is a while loop (TensorFlow 1's lowering: Enter, Merge, LoopCond, Switch,
NextIteration, Exit), a cond on a bool feed, or a plain Read or Assign
outside.  A loop's body holds:

* Reads and Assign-f (Add, Snd, Sub) through the variables' handles brought
  in by a chain of constant Enters (one per enclosing frame), ordered by
  control edges half the time;
* sometimes an inner loop (two deep at most) whose trip count is the outer
  counter, a constant or a feed brought in by constant Enters, whose
  counter's Exit and sum's Exit feed the outer sum, and whose Exit the
  outer NextIteration waits for by a control edge half the time;
* sometimes a cond inside the body on `counter < k` (its branches dead in
  the iterations where the predicate goes the other way);
* sometimes a loop-invariant value from a constant Enter (is_constant);
* sometimes a TensorList accumulating the counter (EmptyTensorList with no
  limit or a limit of 2, TensorListPushBack, TensorListStack or
  TensorListLength after the Exit);
* NextIteration nodes with a control input from the body's last access.

Trip counts from feeds are not bounded: σ may take a loop past the
iteration bound.  `nested_program(seed)` is a function of the seed alone.
"""

from __future__ import annotations

import random



class _Nested:
    """A program of one to three blocks; a block is a loop (up to two deep),
    a cond, a TensorList loop or a plain access."""

    def __init__(self, rng: random.Random):
        self.r = rng
        self.nodes: list[dict] = []
        self.outputs: dict[str, str] = {}
        self.feeds: dict[str, dict] = {}
        self.variables = [f"x{k}" for k in range(rng.choice((1, 1, 2)))]
        self.ends: list[str] = []
        self.frames = 0

    def add(self, **node) -> str:
        self.nodes.append(node)
        return node["name"]

    def after(self) -> list[str]:
        if self.ends and self.r.random() < 0.4:
            return ["^" + self.r.choice(self.ends)]
        return []

    def trips(self, p: str, pivot: str | None, outer: dict | None) -> str:
        """A trip count in the current frame: a constant, a feed (σ: may
        pass the iteration bound) or, inside a loop, the outer counter."""
        r = self.r
        k = r.random()
        if outer is not None and k < 0.35:
            return outer["counter"]
        if k < 0.55:
            name = f"n{len(self.feeds)}"
            self.feeds[name] = {"dtype": "int64", "shape": []}
            return self.bring(f"${name}", outer, p + "/nf")
        ctrl = [f"^{pivot}"] if pivot else []
        return self.add(name=f"{p}/n", op="Const", value=r.randint(0, 3), inputs=ctrl)

    def bring(self, value: str, outer: dict | None, name: str) -> str:
        """`value` (of the root frame) inside the current frames: a chain of
        constant Enters."""
        if outer is None:
            if value.startswith("$"):
                return self.add(name=name, op="Identity", inputs=[value])
            return value
        chain = outer["chain"]
        cur = value
        for depth, frame in enumerate(chain):
            cur = self.add(name=f"{name}/e{depth}", op="Enter", frame_name=frame,
                           is_constant=True, inputs=[cur])
        return cur

    def handle(self, x: str, outer: dict | None, p: str) -> str:
        v = self.add(name=f"{p}/v{x}", op="Var", var=x)
        return self.bring(v, outer, f"{p}/h{x}")

    def accesses(self, p: str, pivot: str, outer: dict | None, count: int) -> tuple[list, str | None]:
        """Reads and Assign-f in a body (after `pivot`), some ordered."""
        r = self.r
        reads, prev = [], None
        handles: dict[str, str] = {}
        for a in range(count):
            x = r.choice(self.variables)
            if x not in handles:
                handles[x] = self.handle(x, outer, f"{p}/a{a}")
            order = [f"^{prev}"] if prev and r.random() < 0.5 else []
            if r.random() < 0.5:
                k = self.add(name=f"{p}/w{a}k", op="Const", value=r.randint(1, 4),
                             inputs=[f"^{pivot}"])
                prev = self.add(name=f"{p}/w{a}", op="Assign", fn=r.choice(("Add", "Snd", "Sub")),
                                inputs=[handles[x], k] + order)
            else:
                prev = self.add(name=f"{p}/r{a}", op="Read", inputs=[handles[x], f"^{pivot}"] + order)
                reads.append(prev)
        return reads, prev

    def cond(self, p: str, pivot: str | None, outer: dict | None, value: str | None) -> str:
        """A cond in the current frame on `value < k` (or a bool feed at the
        root): returns its Merge."""
        r = self.r
        ctrl = [f"^{pivot}"] if pivot else self.after()
        if value is None:
            name = f"b{len(self.feeds)}"
            self.feeds[name] = {"dtype": "bool", "shape": []}
            pred = self.add(name=f"{p}/pred", op="Identity", inputs=[f"${name}"] + ctrl)
        else:
            k = self.add(name=f"{p}/pk", op="Const", value=r.randint(0, 3), inputs=ctrl)
            pred = self.add(name=f"{p}/pred", op="Less", inputs=[value, k])
        z = self.add(name=f"{p}/z", op="Const", value=0, inputs=ctrl)
        sz = self.add(name=f"{p}/sz", op="Switch", inputs=[z, pred])
        values = []
        switched: dict[str, str] = {}
        for side, port in (("f", 0), ("t", 1)):
            piv = self.add(name=f"{p}/{side}", op="Identity", inputs=[f"{sz}:{port}"])
            val = piv
            for a in range(r.randint(0, 2)):
                x = r.choice(self.variables)
                if x not in switched:
                    h = self.handle(x, outer, f"{p}/c{x}")
                    switched[x] = self.add(name=f"{p}/s{x}", op="Switch", inputs=[h, pred])
                if r.random() < 0.5:
                    k = self.add(name=f"{p}/{side}{a}k", op="Const", value=r.randint(1, 4),
                                 inputs=[f"^{piv}"])
                    self.add(name=f"{p}/{side}{a}", op="Assign", fn=r.choice(("Add", "Snd")),
                             inputs=[f"{switched[x]}:{port}", k])
                else:
                    val = self.add(name=f"{p}/{side}{a}", op="Read",
                                   inputs=[f"{switched[x]}:{port}"])
            values.append(val)
        return self.add(name=f"{p}/m", op="Merge", inputs=values)

    def loop(self, p: str, pivot: str | None, outer: dict | None, depth: int) -> tuple[str, str]:
        """A while loop in the current frame; returns (its counter's Exit,
        the Exit of its sum)."""
        r = self.r
        self.frames += 1
        frame = f"{p}/while{self.frames}"
        chain = (outer["chain"] if outer else []) + [frame]
        ctrl = [f"^{pivot}"] if pivot else self.after()
        i0 = self.add(name=f"{p}/i0", op="Const", value=0, inputs=ctrl)
        enter = self.add(name=f"{p}/enter", op="Enter", frame_name=frame, inputs=[i0],
                         parallel_iterations=r.choice((1, 2, 10)))
        lim_src = self.trips(p, pivot, outer)
        lim = self.add(name=f"{p}/lim", op="Enter", frame_name=frame, is_constant=True,
                       inputs=[lim_src])
        merge = self.add(name=f"{p}/merge", op="Merge", inputs=[enter, f"{p}/next"])
        less = self.add(name=f"{p}/less", op="Less", inputs=[merge, lim])
        cond = self.add(name=f"{p}/cond", op="LoopCond", inputs=[less])
        sw = self.add(name=f"{p}/sw", op="Switch", inputs=[merge, cond])
        body = self.add(name=f"{p}/body", op="Identity", inputs=[f"{sw}:1"])
        me = {"chain": chain, "counter": body}
        reads, last = self.accesses(p, body, me, r.randint(0, 2))
        terms = list(reads)
        inner_exit = None
        if depth < 2 and r.random() < 0.6:
            inner_exit, inner_sum = self.loop(f"{p}/in", body, me, depth + 1)
            terms.append(inner_exit)
            if inner_sum:
                terms.append(inner_sum)
            more, last2 = self.accesses(f"{p}/post", inner_exit, me, r.randint(0, 1))
            terms += more
            last = last2 or last
        if r.random() < 0.3:
            terms.append(self.cond(f"{p}/cd", body, me, body))
        if r.random() < 0.3:
            c = self.add(name=f"{p}/c", op="Const", value=r.randint(1, 3), inputs=ctrl)
            ce = self.add(name=f"{p}/ce", op="Enter", frame_name=frame, is_constant=True,
                          inputs=[c])
            terms.append(self.add(name=f"{p}/inv", op="Add", inputs=[ce, lim]))
        total = None
        if terms:
            s0 = self.add(name=f"{p}/s0", op="Const", value=0, inputs=ctrl)
            se = self.add(name=f"{p}/s_enter", op="Enter", frame_name=frame, inputs=[s0])
            sm = self.add(name=f"{p}/s_merge", op="Merge", inputs=[se, f"{p}/s_next"])
            ss = self.add(name=f"{p}/s_sw", op="Switch", inputs=[sm, cond])
            acc = self.add(name=f"{p}/s_body", op="Identity", inputs=[f"{ss}:1"])
            for k, t in enumerate(terms):
                acc = self.add(name=f"{p}/s_add{k}", op="Add", inputs=[acc, t])
            nxt_ctrl = [f"^{last}"] if last and r.random() < 0.5 else []
            self.add(name=f"{p}/s_next", op="NextIteration", inputs=[acc] + nxt_ctrl)
            total = self.add(name=f"{p}/s_exit", op="Exit", inputs=[ss])
        if r.random() < 0.25:
            # a TensorList accumulating the counter
            shape = self.add(name=f"{p}/tl_shape", op="Const",
                             value={"dtype": "int32", "value": []}, inputs=ctrl)
            mx = self.add(name=f"{p}/tl_max", op="Const",
                          value={"dtype": "int32", "value": r.choice((-1, 2))}, inputs=ctrl)
            empty = self.add(name=f"{p}/tl_empty", op="EmptyTensorList", element_dtype="int64",
                             inputs=[shape, mx])
            te = self.add(name=f"{p}/tl_enter", op="Enter", frame_name=frame, inputs=[empty])
            tm = self.add(name=f"{p}/tl_merge", op="Merge", inputs=[te, f"{p}/tl_next"])
            ts = self.add(name=f"{p}/tl_sw", op="Switch", inputs=[tm, cond])
            tb = self.add(name=f"{p}/tl_body", op="Identity", inputs=[f"{ts}:1"])
            push = self.add(name=f"{p}/tl_push", op="TensorListPushBack", element_dtype="int64",
                            inputs=[tb, body])
            self.add(name=f"{p}/tl_next", op="NextIteration", inputs=[push])
            tx = self.add(name=f"{p}/tl_exit", op="Exit", inputs=[ts])
            if outer is None:
                shape2 = self.add(name=f"{p}/tl_shape2", op="Const",
                                  value={"dtype": "int32", "value": []})
                out = self.add(name=f"{p}/tl_stack", op="TensorListStack", element_dtype="int64",
                               num_elements=-1, inputs=[tx, shape2]) \
                    if r.random() < 0.5 else \
                    self.add(name=f"{p}/tl_len", op="TensorListLength", inputs=[tx])
                self.outputs[f"{p.replace('/', '_')}_tl"] = out
        one = self.add(name=f"{p}/one", op="Const", value=1, inputs=[f"^{body}"])
        order = [f"^{last}"] if last and r.random() < 0.7 else []
        if inner_exit and r.random() < 0.5:
            order.append(f"^{inner_exit}")
        add = self.add(name=f"{p}/add", op="Add", inputs=[body, one] + order)
        nxt_ctrl = [f"^{last}"] if last and r.random() < 0.3 else []
        self.add(name=f"{p}/next", op="NextIteration", inputs=[add] + nxt_ctrl)
        ex = self.add(name=f"{p}/exit", op="Exit", inputs=[sw])
        if outer is None:
            self.outputs[p.replace("/", "_")] = ex
            if total:
                self.outputs[p.replace("/", "_") + "_sum"] = total
        return ex, total

    def plain(self, p: str) -> None:
        r = self.r
        x = r.choice(self.variables)
        v = self.add(name=f"{p}/v", op="Var", var=x)
        if r.random() < 0.5:
            out = self.add(name=f"{p}/r", op="Read", inputs=[v] + self.after())
            self.outputs[p] = out
        else:
            k = self.add(name=f"{p}/k", op="Const", value=r.randint(1, 9))
            out = self.add(name=f"{p}/w", op="Assign", fn=r.choice(("Add", "Snd")),
                           inputs=[v, k] + self.after())
        self.ends.append(out)

    def program(self) -> dict:
        r = self.r
        for i in range(r.randint(1, 3)):
            kind = r.choice(("loop", "loop", "cond", "plain"))
            if kind == "loop":
                ex, _ = self.loop(f"l{i}", None, None, 0)
                self.ends.append(ex)
            elif kind == "cond":
                m = self.cond(f"c{i}", None, None, None)
                self.outputs[f"c{i}"] = m
                self.ends.append(m)
            else:
                self.plain(f"o{i}")
        if not self.outputs:
            self.plain("last")
            if not self.outputs:
                v = self.add(name="fin/v", op="Var", var=self.variables[0])
                self.outputs["fin"] = self.add(name="fin/r", op="Read", inputs=[v])
        return {"format": "tfsem.program/1", "variables": self.variables, "feeds": self.feeds,
                "nodes": self.nodes, "outputs": self.outputs}


def nested_program(seed: int) -> dict:
    return _Nested(random.Random(f"review23-nested:{seed}")).program()
