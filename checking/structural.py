"""Structural refinement: `sound` without exploring states, when the rewrite
keeps the original's *access skeleton* (issue 17, item 1).

Most sound rewrites (dce, reduce-control, prune, cse, const-fold, safe read
hoisting) keep every Read and Assign of the original with the same value
terms, delete only side-effect-free nodes, and order the accesses at least as
much as the original; fuse-assign, and in decomposed mode split-assign and
cse-stateful, regroup an Assign's read and write steps without reordering
them.  This module recognises that situation in time linear
in the graph (plus one big-integer ancestor set per node) and proves
Outcomes(P', σ) ⊆ Outcomes(P, σ) for every σ without enumerating a schedule.
When any condition below fails, it concludes nothing and the enumerating
checker runs unchanged: a failure here is never a verdict.

Notation
========

An *access* is a Read node or an Assign node; its variable is fixed
statically (a variable edge only ever comes from a `Var(x)` node).  The
*steps* of a program are its nodes, except that in `decomposed` mode an Assign
`a` is two steps `a.r` (reads the variable: w := VarValue(x), takes v) and
`a.w` (stores f(w, v), or leaves x as it is *then* when v or f(w, v) is an
error).  `hb` ("happens before") is the transitive closure of the edges (data
and control) between nodes; at step level an edge u -> v runs from u's last
step to v's first step, and a.r -> a.w.

Fact 1 (runs are linear extensions).  In seed 000, section 3.2.1, a node may
fire exactly when each incoming edge holds content, an edge out of node u
holds content exactly once u has fired (input edges hold content from the
start), and the node consumes it.  So a step sequence is a run iff it is a
linear extension of the step DAG: atomic mode by the rule as written; in
decomposed mode (semantics.py) `a.r` needs the node's inputs and `a.w` only
the pending read, and the Assign's outgoing control edges are signalled at
`a.w`.  A value never decides whether a step may fire.

Fact 2 (what a step sees).  Only Assign steps (atomic `a`, decomposed `a.w`)
change VarValue, and only the one variable they assign.  Functions are
deterministic (seed 000, 3.1.1), including on error values (footnotes 2 and 5).

The rule
========

Let ν be a map from the *steps* of P that access a variable to the steps of
P' that access one (:func:`_prove` builds it from node names, CSE keys and
the value terms; ν is only a guess: every condition below is checked on it,
and any ν that passes them gives a proof).  S, the matched steps, is its
domain.  The preimage of one step of P' is its *group*.  The conditions:

(I)  Same interface: the same variables with the same types, the same
     output names, no feed that P lacks, a shared feed with the same type.
(K)  Every group is of one of these kinds, and every write step of P'
     (atomic: an Assign; decomposed: `a.w`) is the image of a group:
     R  Reads of P (one, or several that cse merged) -> a Read of P' of the
        same variable;
     A  an Assign-f of P -> an Assign-f of P' of the same variable, step by
        step (a -> a'; decomposed a.r -> a'.r, a.w -> a'.w);
     M  (decomposed only) several Assign-f of P, each as in A, -> one
        Assign-f of P' (cse-stateful's merge): {a1.r, a2.r} -> a'.r and
        {a1.w, a2.w} -> a'.w;
     F  a Read r and a Write w of P, both of x, -> an Assign-F of P' of x
        (fuse-assign): atomic {r, w} -> a'; decomposed r -> a'.r and
        {w.r, w.w} -> a'.w.  F takes two arguments, gives one result and
        propagates an error in its second argument;
     S  an Assign-F a of P, F as in F, -> a Read rr and a Write ww of P',
        both of x (split-assign): decomposed a.r -> rr, a.w -> ww.w;
        atomic a -> ww, with rr as a's *first* image (see "Atomic splits"
        below);
     A read step of P' outside every image is allowed when it changes nothing
     that matters: a Read (an *extra* Read), or `ww.r` of a Write in S (Snd
     ignores the value it reads).
(A)  Every Assign of P is in a group, except with `--observe outputs`, where
     an Assign d outside every group (*deleted*) is allowed when no matched
     step is hb-after a step of d in P (nothing that matters waits for it).
(V)  Equal value terms.  Terms are built, hash-consed, over the leaves
     feed($name), constants (by dtype, shape and exact bytes) and
     read(r) for a Read r; a function node is the term
     app(op, attributes, argument terms)[port].  A Read r of P in a group R
     has the leaf read(ν(r)) of P' 's Read; any other Read of P (deleted, or
     fused in F) has a leaf of its own, which occurs in no term of P'.
     Required: the value input of each Assign of P in a group A or M has
     the same term as its image's; in F, the term of w's value is
     app(F, {}, (leaf of r, v'))[0] with v' the term of a' 's value; in S,
     the term of ww's value is app(F, {}, (read(rr), v))[0] with v the term
     of a's value; for every output name, its term in P is its term in P'.
     Equal terms take equal values at every σ and every valuation of the
     read leaves, since they denote the same deterministic functions applied
     to the same arguments.  Four simplifications are applied to both sides
     and keep that property: `Identity(t)` and either port of `Copy(t)` are
     `t`, and `Snd(s, t)` is `t` (the built-in functions return that
     argument, error or not; Snd propagates errors of t only); a
     function whose arguments are all constants is evaluated (functions are
     deterministic, and the constant-folding pass does the same; a function
     that cannot run stays a term).  Functions tfsem does not know the
     meaning of (a user's, an imported op) are only ever equal to themselves:
     same name, same attributes, equal arguments.
     A reduction over no axes (Sum, Mean, Max or Min with an empty axes
     list, as Grappler's constant folding removes it) is its argument,
     where the argument's dtype is known to be one with the kernel
     (`_Terms.reduces_nothing`).
     (V≈) An Assign's value is compared *up to which error* (`≈`, below):
     its terms may put the operands of a commutative function in one order.
(H)  Order inclusion, on steps: for matched s1, s2 with s1 hb_P s2 (any
     variables, any kinds), ν(s1) = ν(s2) or ν(s1) hb_P' ν(s2).

Inclusion of hb on *conflicting* pairs only would not be enough: seed 002's
load/store example (`*X = 1` -> `r0 = *Y` beside `*Y = 5` -> `*X = 2`) has no
hb between conflicting accesses at all, yet dropping the first edge lets
r0 = 0 with X = 1 at the end.  (H) asks for every matched pair; test
`test_load_store_hoist_falls_through` keeps it so.  Nor may M merge two
Assigns that P orders: a1 hb a2 gives a1.w hb a2.r, whose images a'.w and
a'.r are in the other order, so (H) refuses it.

Theorem.  Under (I), (K), (A), (V), (H): for every σ and every run ρ' of P',
in the semantics mode the groups were built for, there is a run L of P whose
outputs equal ρ''s, and (unless some Assign was deleted under (A), which
needs `outputs`) whose final state equals ρ''s.  Hence
Outcomes(P', σ) ⊆ Outcomes(P, σ).

Proof.  For a matched step s let rank(s) be the position of ν(s) in ρ'.
By (H) and Fact 1, s1 hb_P s2 implies rank(s1) ≤ rank(s2).

Build L.  Let R be the relation on the steps of P made of: the step edges
of P; s1 -> s2 for matched steps with rank(s1) < rank(s2); and s -> d for
every matched step s and every step d of a deleted Assign.  R is acyclic:
edges out of a deleted step, or out of an unmatched step, are P edges; a
cycle that enters the deleted or unmatched steps from a matched step can only
come back to a matched step along P edges, hence by hb, either from a deleted
Assign (excluded by (A)) or through unmatched side-effect-free steps, whose
hb segment joins two matched steps.  So compress the cycle to matched steps
joined by hb segments (rank does not decrease) and rank edges (rank
increases); a cycle with no rank edge is a cycle of the DAG P, one with a
rank edge increases rank strictly around a loop.  Neither exists.  Any
topological order L of R is a linear extension of P's step DAG, hence a run
of P (Fact 1).  In L the groups come one after the other in the order of
their images in ρ', each group's members in an order hb allows, with only
unmatched steps (functions, Var nodes, Reads outside every group: none
changes a variable) between them, and the deleted Assigns after all of them.

Same values.  By induction along ρ': before the group of a step s' of P',
every variable holds in L what it holds in ρ' before s', and every Read of
P in an earlier group R read what its image read.  (Start: σ on both sides.)
The step s' and its group see the same current value c of their variable x,
and the group's net effect on x is the effect of s' (Fact 2), kind by kind:
 R  every member and s' read c; no effect.
 A  the same f, the same v (by (V): v's term is the same, and its read
    leaves are valued alike by induction), the same w (atomic: w = c;
    decomposed: w was read at a.r and a'.r, equal by induction), the same
    current value c: the same effect, including "nothing" when v or
    f(w, v) is an error (footnote 5).
 M  the read steps all read c; each write step stores f(w, v) or nothing,
    with the same w and v as a'.w: storing the same value twice, or nothing
    twice, is storing it once.
 F  atomic: r reads c, then w stores u = F(c, v') unless u is an error; a'
    stores F(c, v') unless v' or F(c, v') is an error; F propagates an error
    in v', so "u is an error" is exactly that condition, and u is F(c, v')
    computed by the same F.apply.  Decomposed: r reads c as a'.r reads w;
    w.r reads a value Snd ignores; w.w stores F(w, v') or nothing, as a'.w.
 S  a.r reads c, as rr does; a.w stores F(w, v) or nothing, and ww.w stores
    u = F(value of rr, v) = F(w, v) unless u is an error, the same effect by
    the argument of F; ww.r, outside the image, changes nothing.
An Assign's value v in P mentions only read leaves of Reads hb-before it,
hence in earlier groups.  With `outputs+state`, every Assign step of P is in
a group and every write step of P' is an image (K), so each variable ends
with the same sequence of effects: the same final state.  Outputs: by (V),
with their read leaves valued alike.  Reads outside every group change
nothing and, by (V), reach no compared term; extra Reads of P' change
nothing, and a term of P' that used one could not equal a term of P.  ∎

Notes.  Fan-out (one port, several consumers) is irrelevant: terms name
ports, not edges.  Control edges matter only through hb.  Nodes of P' that do
not exist in P are side-effect free or in a group of (K), and matter only
through terms and hb.  Assign functions that fail are covered by Fact 2: the
effect of an Assign step is determined by (f, w, v, current value), all shown
equal.  Errors and uninitialized variables are values like any other here:
nothing assumes σ is error-free.  "Nobody observes" a deleted access means: a
deleted Read's value reaches no output and no Assign in a group (V), in
either observe setting; a deleted Assign is allowed only under `outputs`,
where the final state is not part of the outcome, and only when nothing
matched waits for it, so that L can run it last.  Deleting an Assign under
`outputs+state`, or merging one under `atomic`, is never concluded: the
enumerating checker decides; splitting one under `atomic` only under (X)
below, which excludes the lost update.

Assign values up to which error (V≈; issue 23)
==============================================

Write x ≈ y ("equal up to which error") when x and y are both error
values (any reasons) or the same tensor.  Grappler puts the operands of
commutative ops in a canonical order (arithmetic, common-subgraph
elimination); where both operands may be errors as far as the rule knows
(a read of a variable that may be uninitialized, an op's result), f(a, b)
and f(b, a) may be *different* errors (f passes on its first strict
argument's error), so as terms they must stay apart.  But only an output
shows which error a value is; an Assign shows only *whether* it is one:

 (E1) The effect of an Assign step depends on its value input v only
      through v's ≈-class.  semantics/graph._assigned: an error v leaves
      x as it is, whatever the error; otherwise x gets f(w, v), or stays
      as it is when that is an error.  So v ≈ v' gives the same effect.
 (E2) ≈ is a congruence for every function whose `apply` is
      Function.apply (or that is strict in all its arguments): if args ≈
      args' pointwise then f(args) ≈ f(args') portwise.  If some strict
      argument is an error, the same positions are errors on both sides
      (≈ keeps errorness), so the first one is at the same position and
      both results are errors.  Otherwise the strict arguments are equal
      tensors, and a non-strict error argument reaches the implementation
      as None whatever its reason (Function.apply passes `a.array` only for
      tensors): the same call, the same results.  (A function whose own
      `apply` hands error arguments to its implementation, ListFunction's
      `values_impl`, is left out: its terms stay exact.)
 (E3) For f in symbolic.COMMUTATIVE_OPAQUE (tfsem's Add, Mul and their
      `.ftz` forms) and SquaredDifference (and its `.ftz` form),
      f(a, b) ≈ f(b, a): either operand an error makes both errors; on two
      tensors both are the same value (the argument beside
      COMMUTATIVE_OPAQUE: IEEE addition and multiplication commute, all
      NaNs are equal, broadcasting and the dtype check are symmetric;
      SquaredDifference is d * d with d = a - b, and b - a is exactly -d,
      in IEEE arithmetic, whose rounding to nearest is symmetric, as in
      wrapping integer arithmetic, so the squares are the same bits;
      `_UP_TO_ERROR_COMMUTATIVE`).

So each port gets a second term besides its exact one, its *≈-term*, built
like the exact term from its arguments' ≈-terms, with the operands of a
commutative function sorted (`_Terms.apply_up_to_error`).  By induction
(E2, E3) a port's ≈-term denotes a value ≈ the port's value at every σ and
every valuation of the read leaves (equal terms denote equal values, and
equal values are ≈).  (V) then compares Assign values (groups A and M,
the F and S constructions) by their ≈-terms, which by (E1) gives the same
effect in the proof's induction ("Same values" above: "the same v" becomes
"v ≈ v'", which is all the effect depends on), and outputs by their exact
terms, as before: an output shows the error itself.  Under `--float real`
the ≈-terms are the exact ones.

Three extensions (issue 17, second round)
=========================================

Atomic splits (S atomic, condition (X)).  In atomic mode an Assign-F a of P
may be matched to the Read rr and the Write ww of P' that split-assign makes
of it when
 (X) rr hb_P' ww, and every other write step w2 of x in P' is ordered with
     the pair: w2 hb_P' rr or ww hb_P' w2;
and (H) holds with rr in place of ν(a) for the steps *before* a: every
matched s1 hb_P a has ν(s1) = rr or ν(s1) hb_P' rr (steps after a see ww, a's
image, as usual).  Proof, in the theorem's terms: rank(a) := position of ww
in ρ'.  s1 hb_P a gives ν(s1) before rr, before ww; a hb_P s2 gives ww before
ν(s2): rank still does not decrease along hb, so L exists as above, with a
where ww is.  Values: by (X) no write of x falls between rr and ww in ρ', so
rr read the value c that x holds just before ww, which (induction) is what x
holds in L just before a.  Then a stores F(c, v) or nothing, and ww stores
Snd(_, F(c, v)) = F(c, v) unless it is an error, in which case nothing: the
same effect, by the argument of S.  A matched Read of x between rr and ww in
ρ' reads c, as it does in L, where it comes before a.  Two unordered
AssignAdds split (the lost update) fail (X).

(X') A split that fails (X) is still concluded under `--observe outputs`
when x is dead from rr on: every Read of x in P whose value reaches an
output or an Assign's value (a *used* Read; the others are the unobserved
Reads of (U)) is in a group whose image is hb_P'-before rr.  Proof: build L
as for (X).  Up to rr every variable holds the same in L and ρ' (the
argument above never looked past it); from then on x may differ (a write
may fall between rr and ww, and every later effect on x computes from x),
but x is read from then on only by Reads of P whose values reach no output
and no Assign's value (a used Read has its image before rr, so its group
comes before a in L), and an Assign's effect touches x alone.  So every
other variable, every used Read and every output are as in ρ', and the
final state is not observed.  (A used Read of x after the split: refused.)

Moved Reads (condition (H')).  A Read r of P in a group R, of variable x,
with image r', may fail (H) (hoist-reads drops the control inputs of Reads)
when, with W' the write steps of x in P' and, for a matched write step w of
x in P, w' its image:
 (H'1) no Assign of x is deleted, and r waits for no deleted Assign;
 (H'2) every w2 in W' is ordered with r': w2 hb_P' r' or r' hb_P' w2;
 (H'3) for every write step w of x in P: if w' hb_P' r' then w hb_P r; if
       r' hb_P' w' then r hb_P w, or w and r are unordered in P (a race P'
       decides) and every matched step m hb_P r that is not itself a moved
       Read has ν(m) hb_P' w' (strictly: ν(m) is an ancestor of w').
Such an r is *moved*: it takes no part in (H), and its image's position is
not passed on to the steps after it (other matched pairs are checked as
before, through hb_P, which still goes through r).  Proof.  Build L0 as L
above on the steps of P other than the moved Reads, from R plus the edges
a -> w for every a hb_P r (a not moved) and every raced w of (H'3).  Still
acyclic: going back along a cycle from such an a (unmatched or matched) one
meets, through P edges only, a matched step m hb_P a (a deleted one is
excluded by (H'1) and (A)), so m hb_P r, and (H'3) gives rank(m) < rank(w):
the edge increases rank like a rank edge.  Insert the moved Reads in a
topological order of P, each r just after the last of its ancestors in P.
All of r's ancestors come before all of its descendants and before every
raced w (the added edges; a moved ancestor r0 sits just after its own
ancestors, all of which are ancestors of r, hence before w); so L is a
linear extension of P's steps, and r comes after every write of x that
(H'3) puts before it (they are ancestors) and before every other
(descendants or raced).  By (H'2) and (H'3) these are exactly the writes
before r' in ρ', and in L as in ρ' they come in rank order with the same
effects: r reads in L what r' reads in ρ' (with no write after, the last
value, and no deleted Assign of x can change it).  Reads change nothing, so
the rest of the argument is unchanged.  The load/store example fails (H'2);
a Read that P orders after a write and P' before it fails (H'3) (seed 000's
first example).

Unobserved Reads (U).  A Read r of P from which no path of data edges leads
to an output or to the value input of an Assign has a leaf in no compared
term.  When r fails (H), or waits for a deleted Assign, it is taken out of
its group: it becomes one of the "Reads outside every group" of the theorem
(which change nothing and reach no compared term) and its image, if no other
Read of P maps to it, an extra Read of P'.  This only removes constraints the
proof never used for such a Read.

Float rules (issue 23, third round)
===================================

Two more simplifications of (V), applied to both programs' terms (exact
and ≈ alike), each keeping "equal terms take equal values at every σ and
every valuation of the read leaves".  Neither applies under `--float real`.

(R1) RealDiv(x, c) is Mul(x, 1/c) (and RealDiv.ftz(x, c) is Mul.ftz(x, 1/c))
     when c is a constant float32 or float64 tensor each of whose elements
     is ±2^k with 2^k and 2^-k both normal: both operations round the same
     real number x·2^-k correctly, and flush alike (the argument, case by
     case, is `_Terms.division_by_power_of_two`).  Grappler turns every
     division by a constant into a product with its reciprocal; for any
     other c the results differ in the last bit for some x (x / 196 against
     x * fl(1/196)) and the rule does not apply: the concrete stages look
     for the σ that shows it (checking/check.py `_plain_sigma`).
(R2) f(c, x) is f(x, c), exactly (the same error included), for f one of
     (E3)'s commutative functions whose `apply` is Function.apply, c a
     constant tensor (never an error) and x any term, where both programs
     are blind to NaN payloads (as (E3)).  If x is an error, it is the only
     strict error argument on either side, and Function.apply returns it;
     if x is a tensor, the dtype check (DTYPE_MISMATCH) and the broadcast
     (SHAPE_MISMATCH) fail alike in either order, with the same reasons, and
     otherwise the values are equal by (E3)'s argument.  So the constant
     operand goes second: outputs, which (V) compares exactly, then match
     when Grappler's canonical order put a constant first (`loss = 1.0 *
     x` against `x * 1.0` in the TF1 training steps of the real-graphs
     corpus).  With two non-constant operands the exact terms keep their
     order: two error operands would give different errors.

Reshapes to the shape they have (issue 23, (S))
==============================================

Grappler's arithmetic optimizer removes a Reshape whose input already has
the target shape (RemoveRedundantReshape).  checking/static_shapes.py
claims, for some ports, the shape their value has at every σ where it is a
tensor (argued there, by induction along a run, with every Assign checked
to keep its variable's declared shape); each term of such a port carries
it (`_Terms.shapes`; a term is shared by the two programs only where both
keep their variables' shapes, so that a Read leaf's shape holds in the
runs of either).  Then Reshape(t), ReshapeTo(t, c) and Tile(t) with all
multiples 1 are t when t's shape is their target, at every σ: on an error
t each is that error, on a tensor of that shape the same elements in the
same order (`static_shapes.reshape_changes_nothing`).  It applies to both
programs' terms, exact and ≈ alike, under `--float real` too (no float is
computed).  tests/test_static_shapes.py compares every claimed shape with
the implementation's, and the rule with the enumerating oracle.

(C) In ≈-terms only (Assign values, `apply_up_to_error`), Cast(Reshape(x))
is Reshape(Cast(x)) where x's dtype is bool or an integer (Grappler's
arithmetic optimizer moves a Reshape across a Cast).  Both are ≈ at every
σ: x an error: both are that error (both functions strict); Reshape(x)
fails (an element count that does not fit): the left side is that error,
the right side an error too (Cast(x) is an error, or a tensor of x's
element count that the same Reshape refuses); otherwise Cast of an integer
or bool converts each element by itself, whatever its position (no NaN or
out-of-range float, whose conversion TensorFlow's kernel decides by
position), and Reshape keeps the row-major order: the same tensor.  An
output is compared exactly, where the two errors may differ: not there.

tests/test_structural_float_rules.py compares both with the enumerating
oracle at σ of edge values (NaN, signed zeros, subnormals, infinities, the
largest floats, uninitialized variables), on generated divisors and
constants, including the ones just outside (R1): 2^127, whose reciprocal
is subnormal, and 3.0, 196.0, 0.1.

Shape rules and the product by one (issue 23, fourth round)
===========================================================

Three more simplifications of (V), on both programs' terms, with the same
property; none depends on σ's shapes (a variable may hold a tensor of any
shape, an Assign may change it): each carries the condition that makes
both sides fail alike where a shape is not the expected one.

(R3) Reshape[s2](Reshape[s1](x)) is Reshape[s2](x) when s1 and s2 are fully
     specified (every dimension ≥ 0, no -1) with as many elements.  x an
     error: both that error.  x a tensor of size(s1) elements: the inner
     result has x's elements in row-major order, so has the outer, in
     shape s2, as Reshape[s2](x).  Any other size: the inner Reshape fails
     (shape-mismatch: TensorFlow's shape rule, oracle/opdefs/array.py
     `reshape_shape`, refuses; Function.apply's ShapeError case), the outer
     passes that error on, and Reshape[s2](x) fails with the same reason,
     size(s2) = size(s1) ≠ size(x); with no -1 in s2 the outer Reshape's
     result (or refusal, where numpy holds no array of shape s2) depends on
     its argument's size and dtype alone, the same on both sides.  Grappler's arithmetic
     optimizer removes the inner Reshape of the batch-normalization
     gradient's `moments/Reshape_1(moments/Reshape(..))`.  With a -1 in
     s2 (inferred from the size) the outer alone accepts other sizes: not
     applied (`_Terms.full_reshape`).  Nor where the product of s1's
     non-zero dimensions passes 2^31 - 1 (`_RESHAPE_SPAN_MAX`): Reshape to
     [2^31-1, 2^31-1, 0] fails on the empty tensor (numpy: "array is too
     big"; TensorFlow, for [2^31-1, 2^31-1, 2^31-1, 0]: "has too many
     elements") that Reshape to [0] takes (review, issue 23, fourth round).
(R4) Mul.ftz(x, 1) is x (up to NaN payloads, where no function observes
     them, as (E3)) when 1 is a float32 or float64 scalar, x has its dtype
     and x never holds a subnormal: a constant with none, a result of a
     flushing form, of MatMul (TensorFlow's kernel, under flush-to-zero),
     of DivNoNan or SoftmaxCrossEntropyWithLogits (TensorFlow's kernels),
     a Cast of an integer or bool, or a Reshape, ReshapeTo, Tile,
     ExpandDims, Identity, Neg or Relu of such a term.  The clauses and
     the argument are checking/product_by_one.py's: it is one rule, which
     was two ((F1) "times one" of the third round and (R4) of the fourth,
     each with its own notion of "never subnormal"; the union of both).
     With (R1), RealDiv.ftz(x, 1) too.  On a subnormal x the two differ
     (Mul.ftz flushes it): Grappler's constant folding of `x / 1` is
     unsound there, which TensorFlow 2.21 shows (a tf.function's `x / 1.0`
     on 1e-40 gives 1e-40 after Grappler, 0 eagerly).
(R5) Tile[m](x) is x when every multiple is 1 and x is a Reshape to a
     fully specified shape of len(m) dimensions (so x, where it is a
     tensor, has that rank, and Tile's rank check passes; numpy's tile by
     ones copies).  x an error: both that error (`_Terms.tiles_by_ones`).

tests/test_structural_shape_rules.py compares each with the enumerating
oracle at σ of edge values and of other shapes (x of 3 or 6 elements where
4 are reshaped, uninitialized), and the near misses (another size, a -1,
another rank, a product by one of a value that may be subnormal) with the
oracle showing the difference.

Where (V) fails, the rule reports the first difference
(`stats["first_difference"]`, and `structural_first_difference` in a
check's JSON stats): the first differing Assign value or output, and in it
the first pair of subterms whose heads differ while everything above them
agrees, with the node of each program that computes it.  It is a
diagnosis: nothing is concluded from it.
"""

from __future__ import annotations

import collections.abc as _abc
import contextvars
import gc
import struct
import time
import weakref
from time import monotonic as _kernels_clock
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping


import numpy as np

from tfsem.oracle import functions as fns
from tfsem.oracle import kernels
from tfsem.oracle.program import ASSIGN, READ, VAR, FeedControlIn, FeedIn, Program
from tfsem.oracle.semantics import DECOMPOSED, READ_STEP, WRITE_STEP
from tfsem.oracle.functions import NUMERIC
from tfsem.oracle.values import FLOAT_DTYPES, Error, Tensor

from .canonical_memo import _functions_of
from .product_by_one import constant_never_subnormal, product_by_one, result_never_subnormal
from .static_shapes import data_inputs, kernel_dtype, reshape_changes_nothing, static_shapes
from .symbolic import _is_tfsems, commutes_opaque

OUTPUTS = "outputs"
SND = "Snd"

#: The second round's extensions (atomic splits, moved Reads, unobserved
#: Reads, Reads merged by data inputs); off: the first round's rule alone
#: (benchmarks/check_scale.py compares the two)
EXTENSIONS = True

#: (R1) and (R2) of "Float rules" in the module docstring (tests switch them
#: off to show which one a proof needs); (R3) of "Shape rules"
DIVISION_BY_POWER_OF_TWO = True
CONSTANT_OPERAND_SECOND = True
#: (S) of "Reshapes to the shape they have" in the module docstring
RESHAPES_BY_SHAPE = True
#: (C) of "Reshapes to the shape they have": a Cast moved outside a Reshape
#: in Assign values (≈-terms)
CAST_OUTSIDE_RESHAPE = True
RESHAPE_OF_RESHAPE = True
#: (R4) x * 1 where x is never subnormal (checking/product_by_one.py; it was
#: two rules, (F1) and (R4), one switch each)
PRODUCT_BY_ONE = True
TILE_BY_ONES = True

#: Constant arguments larger than this (elements, all arguments together) are
#: not evaluated; the application stays a term (equal only to itself).
FOLD_MAX_ELEMENTS = 1 << 16
#: `--float real` (SPEC section 11): no float value is folded (folding computes
#: in IEEE arithmetic; equal terms otherwise hold for every meaning of the
#: ops, so the rule's proofs hold over the reals too).  Per thread.
_REAL = contextvars.ContextVar("tfsem_structural_real", default=False)
#: `structural_refinement(basic=True)`: the extensions off for one call (per thread)
_BASIC = contextvars.ContextVar("tfsem_structural_basic", default=False)
#: `structural_refinement(matched=...)`: where a proof's ν goes (per thread)
_MATCHED = contextvars.ContextVar("tfsem_structural_matched", default=None)
#: `structural_refinement(deadline=...)`: the time.monotonic() past which the
#: rule stops, with no proof (per thread)
_DEADLINE = contextvars.ContextVar("tfsem_structural_deadline", default=None)
#: the reason of a result cut short by the deadline (checking/check.py then
#: goes on, and ends `unknown` where its own stages find no time either)
NO_PROOF_BUDGET = "no proof (budget): the check's deadline passed during the structural rule"


class _OutOfTime(Exception):
    """The deadline passed: the rule stops, concluding nothing."""


def _tick() -> None:
    """Stop (`_OutOfTime`) once the call's deadline has passed.  Every loop
    of the rule over nodes, steps or values calls it at least every 64
    iterations, so that no stretch of it runs long past the deadline."""
    d = _DEADLINE.get()
    if d is not None and time.monotonic() > d:
        raise _OutOfTime()


def _extensions() -> bool:
    return EXTENSIONS and not _BASIC.get()

#: Reductions that reduce nothing when their axes are an empty list: the
#: operand forms (axes a 1-D int32/int64 operand) and the constant forms
#: (axes an attribute), captured at import like the functions below.
_REDUCTIONS_ALONG = {name: fns.lookup(name)
                     for name in ("SumAlong", "MeanAlong", "ReduceMaxAlong", "ReduceMinAlong")}
_REDUCTIONS = {name: fns.lookup(name) for name in ("Sum", "Mean", "ReduceMax", "ReduceMin")}

# The built-in functions whose simplification (V) relies on, captured at
# import: a function re-registered under the same name is not simplified.
_IDENTITY = fns.lookup("Identity")
#: (R1): a division by a power of two and the product it equals, captured at
#: import like the functions below (a function re-registered under one of
#: these names is left alone)
_DIVISIONS = {name: fns.lookup(name) for name in ("RealDiv", "RealDiv.ftz")}
_DIVISION_AS_PRODUCT = {"RealDiv": ("Mul", fns.lookup("Mul")),
                        "RealDiv.ftz": ("Mul.ftz", fns.lookup("Mul.ftz"))}
_COPY = fns.lookup("Copy")
_RESHAPE = fns.lookup("Reshape")
_CAST = fns.lookup("Cast")
#: (C): Cast is exact on these source dtypes (no NaN, infinity or
#: out-of-range float, whose conversion TensorFlow's kernel decides by the
#: element's position)
_EXACT_CAST_SOURCES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                 "uint32", "uint64"})
#: (R5): Tile by ones
_MOVES = {name: fns.lookup(name) for name in ("Tile", "Reshape")}
_SND = fns.lookup("Snd")
_CONST = fns.lookup("Const")


#: The original's half of the rule, remembered per program object (a check
#: tries the rule on one original against each rewrite in turn: Grappler's
#: five optimizers on one graph).  Only what depends on the original alone:
#: its term plan (`_term_plan(p)`, with the per-node lookups `info` keeps),
#: its accesses (`_accesses(p)`) and its static-shape passes
#: (`_value_shapes(p, True | False)`).  All are
#: deterministic functions of the program (immutable), the registry's
#: functions it names, and the switches in the key below; the entry is used
#: only while all of these are as they were, so a remembered value is the
#: value the rule would compute again: the rule's answer is the same
#: (tests/test_structural_original_memo.py compares it with the memo off).
#: A shape pass is remembered only when no kernel fold in it could have
#: been refused (then it may have claimed fewer shapes than a later pass
#: would): the request deadline had not passed when it ended, it took less
#: than a kernel call's own limit, and no fold raised during it.  Keyed on id(p) with a
#: weak reference (as oracle/applications.py): gone with the program.
ORIGINAL_MEMO = True
_ORIGINALS: dict[int, tuple] = {}


def _original_memo(p: Program, create: bool = True) -> dict | None:
    """The memo entry of p (a dict: "plan" -> (plan, info), ("shapes",
    read_shapes) -> shapes, "accesses" -> `_accesses(p)`, and what
    `_of_original` keeps), new where none holds (`create`; else None);
    None when off."""
    if not ORIGINAL_MEMO:
        return None
    from tfsem.oracle import static_shapes as _shapes_module
    key = (*fns.evaluation_epoch(),
           _shapes_module.FOLD_MAX_ELEMENTS)
    entry = _ORIGINALS.get(id(p))
    if (entry is not None and entry[0]() is p and entry[1] == key
            and fns.still_registered(entry[2])):
        return entry[3]
    if not create:
        return None

    def gone(ref, k=id(p)) -> None:
        if _ORIGINALS.get(k, (None,))[0] is ref:
            _ORIGINALS.pop(k, None)
    try:
        ref = weakref.ref(p, gone)
    except TypeError:
        return None
    looked_up = _functions_of(p)
    memo: dict = {}
    _ORIGINALS[id(p)] = (ref, key, looked_up, memo)
    return memo


def _of_original(memo: dict | None, key: Any, make: Callable[[], Any]) -> Any:
    """`make()`, kept in the original's memo entry under `key` (None: not
    kept).  Only for what is a function of the original program alone (and
    of what the entry's key holds: the registry's functions, the fold
    limit), never of the rewrite, and used read-only by its callers: each
    check of one original against a rewrite made it again with the same
    result.  A `make` that raises (the rule's deadline) keeps nothing."""
    if memo is None:
        return make()
    got = memo.get(key)
    if got is None:
        got = memo[key] = make()
    return got


def _original_steps(p: Program, semantics: str, memo: dict | None) -> tuple:
    """(order, preds, index, anc) of p's step DAG: `_steps(p, semantics)`
    and `_ancestors` of it, kept in p's memo entry (`_of_original`)."""
    def make() -> tuple:
        order, preds = _steps(p, semantics)
        return (order, preds, *_ancestors(order, preds))
    return _of_original(memo, ("steps", semantics), make)


def _original_plan(p: Program, memo: dict | None) -> tuple[list, dict]:
    """`_term_plan(p)` and its `info`, remembered in `memo` (not None)."""
    if memo is not None and "plan" in memo:
        return memo["plan"]
    info: dict = {}
    got = (_term_plan(p, info=info), info)
    if memo is not None:
        memo["plan"] = got
    return got


#: The original's attribute keys kept in its memo entry (`_attrs_keys_from`):
#: tests switch it off to compare.
ORIGINAL_ATTRS_KEYS = True


def _attrs_keys_from(p: Program, memo: dict | None, plan: list[tuple]) -> dict:
    """The `_Terms.akeys` a check of p starts with: a copy of p's
    {id(attributes): (attributes, `_attrs_key` of them)} for every node of
    p's term plan (`plan`, `_original_plan`'s, kept in the same entry) with
    attributes, made once per original (`_of_original`), else empty.

    Why it is the table the check would make: `_attrs_key` is a function of
    the mapping's items alone, and a node's attributes are a frozen mapping
    (program.py `_FrozenDict`, refusing every change) of an immutable
    program; each entry holds the mapping itself, so its id names no other
    object while the entry lives, and `attrs_key` takes an entry only for
    that very object (`hit[0] is attrs`).  So a key found here is the key
    `attrs_key` would compute.  Each check of the original's rewrites made
    them again for the original's nodes its exact pass applies (the
    original's own pass is restored, `_original_terms`, but its keys were
    not: the check's own table starts empty); the copy keeps the rewrite's
    keys out of the original's entry.

    Only the plan's nodes: they are the nodes p's passes apply (the exact
    pass's plan names no other node with attributes on the real corpus;
    a node it named beyond them would have its key made in the check, as
    before).  A data-dead node's attributes are keyed by no pass, and a
    key of a tensor holds a copy of its bytes for as long as the entry
    lives: a dead 50 MB Const held 50 MB with the whole program keyed.
    Which keys the table holds changes no key, so no result."""
    if memo is None or not ORIGINAL_ATTRS_KEYS:
        return {}

    def make() -> dict:
        # (the deadline read every 64 nodes, as the passes do: a cut-short
        # table raises out of `_of_original`, which then keeps nothing)
        keys = {}
        node = p.node
        for k, entry in enumerate(plan):
            if not k & 63:
                _tick()
            attrs = node[entry[0]].attrs
            if attrs:
                keys[id(attrs)] = (attrs, _attrs_key(attrs))
        return keys
    return dict(_of_original(memo, "attrs_keys", make))


def _shape_passes(p: Program, memo: dict | None):
    """The `passes` argument of static_shapes: p's passes from `memo`."""
    if memo is None:
        return None
    from tfsem.oracle.static_shapes import _value_shapes

    def passes(q, read_shapes, tick):
        if q is not p:
            return _value_shapes(q, read_shapes, tick=tick)
        got = memo.get(("shapes", read_shapes))
        if got is None:
            # (the kernels' clock: their deadlines are read on it, whatever
            # clock the rule's own deadline checks read)
            from tfsem.oracle import static_shapes as _shapes_module
            started = _kernels_clock()
            failures = _shapes_module.fold_failures
            got = _value_shapes(q, read_shapes, tick=tick)
            now = _kernels_clock()
            cuts = [d for d in (getattr(kernels._local, "deadline", None),
                                getattr(kernels._local, "request_deadline", None))
                    if d is not None]
            # (and no fold raised during it, in any thread: a kernel refused
            # or its child gone may succeed next time, so such a pass is
            # computed again, never remembered weaker)
            if (now - started < kernels.CALL_SECONDS and all(now < d for d in cuts)
                    and _shapes_module.fold_failures == failures):
                memo[("shapes", read_shapes)] = got
        return got
    return passes


@dataclass
class StructuralResult:
    """`proved` is True when the theorem above applies; `reason` says which
    condition failed otherwise (or what was matched); `stats` counts."""
    proved: bool
    reason: str
    stats: dict[str, Any] = field(default_factory=dict)


class _NotApplicable(Exception):
    pass


def structural_refinement(p: Program, p2: Program, semantics: str = "atomic",
                          observe: str = "outputs+state", *, real: bool = False,
                          basic: bool = False, matched: dict | None = None,
                          nan_blind: bool = True,
                          deadline: float | None = None) -> StructuralResult:
    """Try to prove P' ⊑ P by the rule in the module docstring.  Both
    programs must be valid.  Groups M and S exist in decomposed mode only.
    `real`: float arithmetic over the reals (`--float real`): float values
    are never folded.  `basic`: the first round's rule alone (no
    extensions, as `EXTENSIONS` off, for this call only).  `matched`: a
    dict that receives ν on steps ((node, phase) of P -> of P') when the
    rule proves it.  `nan_blind` False: (E3) and (R2) are not applied, as
    when a function of either program observes NaN payloads
    (checking/structural_loops.py: the loops it leaves out of P and P').
    `deadline`: a time.monotonic() value (the check's); once it has passed
    the rule stops and proves nothing (`NO_PROOF_BUDGET`, stats["budget"]),
    as any rule's failure: never a verdict by itself."""
    token = _REAL.set(real)
    token2 = _BASIC.set(basic)
    token3 = _MATCHED.set(matched)
    token4 = _DEADLINE.set(deadline)
    # the rule allocates many small objects (terms, steps) while the
    # programs' tens of thousands of long-lived ones sit in the collector's
    # oldest generation: its full collections took a third of the rule's
    # time on MobileNetV2 (6,480 nodes), single pauses of 0.2 s between two
    # clock checks.  Reference counting frees everything the rule drops;
    # cycles wait until the collector is back on, at the end of the call
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    try:
        # a fold (`_Terms._fold`, the static shapes) that runs TensorFlow's
        # kernel gives up at the deadline too, its child's start included
        # (8.7 s at a 0.5 s budget before): the rule then cannot use that
        # fold, and stops at its next clock reading (docs/budgets.md)
        with kernels.request_deadline(deadline):
            return _structural_refinement(p, p2, semantics, observe, nan_blind)
    finally:
        if collecting:
            gc.enable()
        _DEADLINE.reset(token4)
        _MATCHED.reset(token3)
        _BASIC.reset(token2)
        _REAL.reset(token)


def _structural_refinement(p: Program, p2: Program, semantics: str,
                           observe: str, nan_blind: bool = True) -> StructuralResult:
    started = time.perf_counter()
    stats: dict[str, Any] = {"semantics": semantics, "observe": observe}
    proved, reason = False, ""
    # ν is a guess, and a wrong guess only loses a proof.  First with the
    # Reads and Assigns of P that have no counterpart of the same name
    # deleted, then matched to a twin cse would merge them with (a dead Read
    # or an Assign prune dropped, matched to a twin, inherits the twin's
    # orderings, which may fail (H) where deleting it would not; a used Read,
    # or an Assign under outputs+state, must be matched)
    # (last: Reads merged whatever their control inputs, as cse-ignore-control
    # does; (H) or (H') then decides whether the merge keeps their order)
    plans = None
    try:
        for merge_reads, merge_assigns in ((False, False), (True, False), (False, True),
                                           (True, True), ("data", False))[:5 if _extensions() else 4]:
            _tick()
            try:
                if plans is None:   # (what the terms need depends on the programs alone)
                    memo = _original_memo(p)
                    plan, info = _original_plan(p, memo)
                    shared: dict[str, Any] = {"doomed": {}, "info": (info, {}),
                                              "shape_passes": _shape_passes(p, memo),
                                              "memo": memo}
                    plans = (plan,
                             _term_plan(p2, info=shared["info"][1]),
                             nan_blind and _of_original(memo, "nan_blind",
                                                        lambda: _nan_payload_blind(p))
                             and _nan_payload_blind(p2), _attrs_keys_from(p, memo, plan), {},
                             shared)
                reason = _prove(p, p2, semantics, observe, stats, merge_reads, merge_assigns, plans)
                proved = True
                stats["reads_merged_by"] = ("data inputs" if merge_reads == "data"
                                            else "cse key" if merge_reads else "name")
                break
            except _NotApplicable as exc:
                reason = reason or str(exc)
    except _OutOfTime:
        proved, reason = False, NO_PROOF_BUDGET
        stats["budget"] = True
    stats["seconds"] = round(time.perf_counter() - started, 6)
    return StructuralResult(proved, reason, stats)


# ---------------------------------------------------------------------------


def _interface(p: Program, p2: Program) -> None:
    """(I)"""
    if dict(p.variables) != dict(p2.variables):
        raise _NotApplicable("(I) the variables differ")
    if set(p.outputs) != set(p2.outputs):
        raise _NotApplicable("(I) the output names differ")
    for f in p2.feed_names:
        if f not in p.feed_names or p.feed_type(f) != p2.feed_type(f):
            raise _NotApplicable(f"(I) feed {f!r} is not a feed of the original with the same type")


def _accesses(p: Program) -> dict[str, tuple[str, str, str | None]]:
    """access node -> (kind, variable, fn or None)."""
    out = {}
    for k, n in enumerate(p.nodes):
        if not k & 63:
            _tick()
        if n.op == READ or n.op == ASSIGN:
            x = p.accessed_variable(n.name)
            if x is None:   # not a valid program: variable edges come from Var nodes
                raise _NotApplicable(f"(K) the variable of {n.name!r} is not static")
            out[n.name] = (n.op, x, n.fn if n.op == ASSIGN else None)
    return out


def _cse_keys(p: Program, assigns: bool = False, with_control: bool = True) -> dict[str, int]:
    """node -> an integer equal for nodes that `cse` (`cse-stateful` when
    `assigns`) would merge: same op, attributes, data inputs and set of
    control inputs, recursively.  Only used to *guess* ν; (K), (V) and (H)
    check the guess."""
    table: dict[tuple, int] = {}
    key: dict[str, int] = {}
    inputs = data_inputs(p)
    for j, name in enumerate(p.topological_order):
        if not j & 63:
            _tick()
        n = p.node[name]
        if n.op == ASSIGN and not assigns:
            k: tuple = ("assign", name)
        else:
            data = tuple(("feed", i.name) if isinstance(i, FeedIn) else (key[i.node], i.port)
                         for i in inputs[name])
            control = frozenset(("feed", i.name) if isinstance(i, FeedControlIn) else key[i.node]
                                for i in n.control_inputs)
            k = (n.op, _attrs_key(n.attrs), data, control if with_control else None)
        key[name] = table.setdefault(k, len(table))
    return key


def _match(p: Program, p2: Program, acc: Mapping, acc2: Mapping,
           merge_reads: bool | str = True) -> dict[str, str]:
    """A guess at ν: same name, same kind, variable and function; then a Read
    of P with no counterpart goes where a Read with the same CSE key went."""
    nu: dict[str, str] = {}
    for name, sig in acc.items():
        if acc2.get(name) == sig:
            nu[name] = name
    if not merge_reads:
        return nu
    keys = None
    for name, (kind, x, _fn) in acc.items():
        if name in nu or kind != READ:
            continue
        if keys is None:
            keys = _cse_keys(p, with_control=merge_reads != "data")
            by_key: dict[int, str] = {}
            for other, target in nu.items():
                if acc[other][0] == READ:
                    by_key.setdefault(keys[other], target)
        target = by_key.get(keys[name])
        if target is not None:
            nu[name] = target
    return nu


def _exact(value: Any) -> Any:
    """An attribute value as an exact, hashable key: a tensor by dtype, shape
    and bytes (the JSON form of `fns.attrs_key` writes every empty tensor as
    `[]`, whatever its shape), containers element by element."""
    t = type(value)     # (the common kinds first, by exact type: the same keys)
    if t is str or t is int or t is bool or value is None:
        return (t.__name__, value)
    if t is dict:
        return ("map", tuple(sorted((str(k), _exact(v)) for k, v in value.items())))
    if t is list or t is tuple:
        return ("seq", t.__name__, tuple(_exact(v) for v in value))
    if isinstance(value, Tensor):
        return ("tensor", value.dtype, tuple(value.array.shape), value.array.tobytes(order="C"))
    if isinstance(value, Error):
        return ("error", value.reason)
    if isinstance(value, _abc.Mapping):
        return ("map", tuple(sorted((str(k), _exact(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return ("seq", type(value).__name__, tuple(_exact(v) for v in value))
    if isinstance(value, float):
        # by its bits: float.hex() writes every NaN "nan", whatever its sign
        # and payload, which an op's result can show (fns.attrs_key says why)
        return ("float", struct.pack("<d", value))
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, tuple(value.shape), value.tobytes(order="C"))
    if isinstance(value, (str, int, bool)) or value is None:
        return (type(value).__name__, value)
    # a kind of attribute this key does not know: equal only to itself (the
    # programs hold it for the whole check, so its id is not reused)
    return ("object", type(value).__name__, id(value))


def _attrs_key(attrs: Mapping[str, Any]) -> tuple:
    return tuple(sorted((str(k), _exact(v)) for k, v in attrs.items()))


class _Terms:
    """Hash-consed terms shared by both programs: a term is an int; equal
    ints are structurally equal terms."""

    def __init__(self) -> None:
        self.table: dict[tuple, int] = {}
        self.consts: dict[int, Any] = {}     # const term -> its Value
        self.folds: dict[tuple, tuple] = {}
        self.real = _REAL.get()
        #: (E3) applies: both programs are blind to NaN payloads (`_nan_payload_blind`)
        self.sorts_commutative = not self.real
        #: term -> the dtype its value has at every σ where it is a tensor
        #: (`dtype_of`; terms whose dtype is not known have no entry)
        self.dtypes: dict[int, str] = {}
        #: id(attributes) -> (attributes, `_attrs_key` of them)
        self.akeys: dict[int, tuple[Any, tuple]] = {}
        #: term -> the shape its value has at every σ where it is a tensor,
        #: and id(program) -> its ports' such shapes (checking/static_shapes.py;
        #: (S) of the module docstring)
        self.shapes: dict[int, tuple] = {}
        self.program_shapes: dict[int, Mapping] = {}
        #: (R4) terms that hold no subnormal float32/float64 element wherever
        #: they are tensors (checking/product_by_one.py: N)
        self.never_subnormal: set[int] = set()
        #: port term -> (op, attributes, argument terms) of the application
        #: it is a result of ((C) looks one level down)
        self.origin: dict[int, tuple] = {}
        #: (R3): the result term of Reshape(x) with a fully specified shape
        #: -> (x, that shape)
        self.reshapes: dict[int, tuple[int, tuple[int, ...]]] = {}
        #: `apply`'s results, by application and its arguments' shapes
        self.applied: dict[tuple, tuple[int, ...]] = {}
        #: `_fold` calls that raised (a kernel refused, its child gone, the
        #: deadline): a pass during which one did may have folded less than
        #: a later pass would, and is not remembered (`_original_terms`)
        self.fold_failures = 0
        #: (R1) constant term -> the term of its reciprocal, or None where
        #: it is no divisor (R1) takes (`division_by_power_of_two`)
        self.reciprocals: dict[int, int | None] = {}

    def attrs_key(self, attrs: Mapping[str, Any]) -> tuple:
        """`_attrs_key(attrs)`, computed once per attribute mapping: the
        mappings are the programs' own node attributes, which the rule's
        attempts share (`akeys`, kept with the mapping itself, so that an
        id is never taken for another object's)."""
        if not attrs:
            return ()
        hit = self.akeys.get(id(attrs))
        if hit is not None and hit[0] is attrs:
            return hit[1]
        key = _attrs_key(attrs)
        self.akeys[id(attrs)] = (attrs, key)
        return key

    #: what `snapshot` leaves out: caches of the check's own (attribute
    #: keys, a pure function of the mapping) and what each check sets
    #: (its programs' shapes, by their ids)
    _NOT_KEPT = frozenset({"akeys", "program_shapes"})

    def snapshot(self) -> dict:
        """A copy of every table (`restore` puts it back): the state of the
        terms made so far, which later additions to this object leave as
        it is (the dicts and sets are copied; their keys and values --
        terms, tuples, constants' values, attribute mappings of immutable
        programs -- are never changed once made)."""
        return {k: (v.copy() if isinstance(v, (dict, set)) else v)
                for k, v in self.__dict__.items() if k not in self._NOT_KEPT}

    def restore(self, state: dict) -> None:
        """This object as the one `snapshot` was taken of, at that moment
        (copies: `state` stays as it is for the next restore).  Only onto a
        fresh object with the same attributes (nothing else is replaced)."""
        assert set(state) == set(self.__dict__) - self._NOT_KEPT, "a table not kept"
        for k, v in state.items():
            setattr(self, k, v.copy() if isinstance(v, (dict, set)) else v)

    def make(self, key: tuple) -> int:
        t = self.table.get(key)
        if t is None:
            t = self.table[key] = len(self.table)
        return t

    # -- the first difference (diagnostics only: no proof rests on them) -----

    def key_of(self, t: int) -> tuple:
        """The key term `t` was made from (the inverse of `make`)."""
        rev = getattr(self, "_rev", None)
        if rev is None or len(rev) != len(self.table):
            rev = self._rev = [None] * len(self.table)
            for k, v in self.table.items():
                rev[v] = k
        return rev[t]

    def first_difference(self, t1: int, t2: int) -> list[tuple[int, int]]:
        """The path of term pairs from (t1, t2) down to the first pair that
        differs at its head (op, attributes, port, number of arguments, or
        the kind of leaf) while its parents agree there: at every step the
        two applications have the same head, and the first argument
        position where they differ is followed.  `t1 != t2`."""
        path = [(t1, t2)]
        memo = self.__dict__.setdefault("_difference_memo", {})
        while True:
            # (differing values often share the differing subterms: each
            # pair's next pair is found once)
            nxt = memo.get((t1, t2), False)
            if nxt is False:
                nxt = memo[(t1, t2)] = self._next_difference(t1, t2)
            if nxt is None:
                return path
            t1, t2 = nxt
            path.append(nxt)

    def _next_difference(self, t1: int, t2: int) -> tuple[int, int] | None:
        """The pair `first_difference` follows from (t1, t2), or None where
        the path ends."""
        k1, k2 = self.key_of(t1), self.key_of(t2)
        if not (k1[0] == k2[0] == "port" and k1[2] == k2[2]):
            return None
        a1, a2 = self.key_of(k1[1]), self.key_of(k2[1])
        if a1[1] != a2[1] or a1[2] != a2[2] or len(a1[3]) != len(a2[3]):
            return None
        x1, x2 = a1[3], a2[3]
        if (len(x1) == 2 and x1[0] != x2[0] and x1[1] != x2[1]
                and commutes_up_to_error(a1[1]) and (x1[0] == x2[1] or x1[1] == x2[0])):
            x2 = (x2[1], x2[0])   # (a ≈-term sorts a commutative op's operands by id)
        # (None: equal apps have equal ports, not reached)
        return next(((x, y) for x, y in zip(x1, x2) if x != y), None)

    def describe(self, t: int, depth: int = 1) -> str:
        """A short text of term `t`: `Op(arg, ...)` to `depth` levels,
        leaves as read(node), feed(name) or a constant's dtype, shape and
        (small) value."""
        k = self.key_of(t)
        if k[0] == "port":
            app = self.key_of(k[1])
            if depth <= 0:
                args = "..." if app[3] else ""
            else:
                args = ", ".join(self.describe(a, depth - 1) for a in app[3])
            return f"{app[1]}({args})" + (f":{k[2]}" if k[2] else "")
        if k[0] == "const":
            v = self.consts.get(t)
            arr = v.array if isinstance(v, Tensor) else None
            if arr is not None and arr.size <= 4:
                return f"{k[1]}{list(k[2])} {arr.tolist()}"
            return f"{k[1]}{list(k[2])} const"
        if k[0] == "error":
            return f"error({k[1]})"
        if k[0] in ("read", "unmatched-read"):
            return f"read({k[1]})"
        if k[0] == "feed":
            return f"feed({k[1]})"
        return str(k[0])

    def const(self, value: Any) -> int:
        if isinstance(value, Error):
            t = self.make(("error", value.reason))
        else:
            # (tobytes() is C order whatever the layout; np.ascontiguousarray
            # would turn a scalar into shape (1,))
            t = self.make(("const", value.dtype, tuple(value.array.shape),
                           value.array.tobytes(order="C")))
            self.dtypes.setdefault(t, value.dtype)
            if t not in self.consts and constant_never_subnormal(value):
                self.never_subnormal.add(t)
        self.consts.setdefault(t, value)
        return t

    def feed(self, name: str, dtype: str) -> int:
        t = self.make(("feed", name))
        self.dtypes.setdefault(t, dtype)   # (both programs declare a shared feed alike: (I))
        return t

    def _result_dtype(self, f: fns.Function, args: tuple[int, ...]) -> str | None:
        """The dtype of f's results wherever they are tensors, when the
        arguments' dtypes tell it: Function.apply gives a function that
        neither casts nor mixes dtypes a result of its first strict tensor
        argument's dtype (`_as_tensor`), and refuses strict tensor arguments
        of different dtypes (dtype-mismatch) or passes on a strict
        argument's error; so any strict argument's known dtype is it."""
        if type(f).apply is not fns.Function.apply or f.casts or f.mixed_dtypes:
            return None
        strict = f.strict()
        if not strict:
            return None
        for i in strict:
            d = self.dtypes.get(args[i]) if i < len(args) else None
            if d is not None:
                return d
        return None

    def reduces_nothing(self, f: fns.Function, attrs: Mapping[str, Any],
                        args: tuple[int, ...]) -> bool:
        """Whether f(args) is args[0] at every σ: f is a reduction (Sum,
        Mean, Max, Min, either form) over an empty list of axes, and args[0]
        has a dtype the reduction has a kernel for.  On an error argument
        both are that error (the reductions are strict); on a tensor of a
        numeric dtype the reduction over no axes returns it unchanged: the
        numpy models reduce over `axis=()`, which copies (Mean divides by
        the count 1, Max/Min compare with their initial value only), and
        TensorFlow's reduction kernels, which tfsem runs for floats, copy
        their input when no axis is reduced (reduction_ops_common.h: "Special
        case. Reduces nothing.").  tests/test_structural_reductions.py
        compares both with the argument bit for bit on every numeric dtype's
        edge values; a bool argument has no kernel (no-kernel), hence the
        dtype condition."""
        if _REDUCTIONS_ALONG.get(f.name) is f and len(args) == 2:
            axes = self.consts.get(args[1])
            if not (isinstance(axes, Tensor) and axes.dtype in ("int32", "int64")
                    and tuple(axes.array.shape) == (0,)):
                return False
        elif _REDUCTIONS.get(f.name) is f and len(args) == 1:
            axes = attrs.get("axes")
            if not (isinstance(axes, (list, tuple)) and len(axes) == 0):
                return False
        else:
            return False
        return self.dtypes.get(args[0]) in NUMERIC

    def division_by_power_of_two(self, f: fns.Function, attrs: Mapping[str, Any],
                                 args: tuple[int, int]) -> tuple[str, int] | None:
        """(R1) ("Mul" or "Mul.ftz", the term of 1/c) when f(args) is
        RealDiv(x, c) (or its flushing form) with c a constant float32 or
        float64 tensor each of whose elements is ±2^k with both 2^k and
        2^-k normal numbers of its dtype; else None.  Then RealDiv(x, c) is
        Mul(x, 1/c) at every σ, bit for bit:
         - x an error: both are that error (both strict, c is no error);
         - x a tensor of another dtype: both are the dtype-mismatch error
           (Function.apply checks it before either implementation runs);
         - x a tensor of c's dtype: the same broadcast (1/c has c's shape)
           and, element by element, numpy's IEEE division x/c and product
           x*(1/c) are each the correctly rounded value (round to nearest
           even) of the same real number x·2^-k, which 1/c = ±2^-k
           represents exactly: the same bits, zeros' signs, infinities and
           NaN included (x NaN: x's NaN in both);
         - the flushing forms flush their arguments and result alike:
           c and 1/c are normal, so unflushed, and flush(x) is the same
           argument on both sides.
        Grappler's constant folding and arithmetic optimizer rewrite x / c
        into x * (1/c) for every constant c; for any other c the two differ
        in rounding (x / 196 and x * fl(1/196)) and (R1) does not apply:
        the rewrite stays for the concrete stages, which find the σ that
        shows the difference (tests/test_structural_float_rules.py)."""
        target = _DIVISION_AS_PRODUCT.get(f.name)
        if target is None or _DIVISIONS.get(f.name) is not f or fns.lookup(target[0]) is not target[1]:
            return None
        if attrs:
            return None
        # (the divisor's answer, a function of the constant alone, kept per
        # constant term: the reciprocal's term is the one `const` would give
        # again, hash-consed, so a kept answer is the answer; a gradient
        # divides by the same few constants hundreds of times)
        got = self.reciprocals.get(args[1], False)
        if got is False:
            got = self.reciprocals[args[1]] = self._reciprocal(args[1])
        return None if got is None else (target[0], got)

    def _reciprocal(self, t: int) -> int | None:
        """(R1) The term of 1/c where constant term t is c, a float32 or
        float64 tensor of powers of two as `division_by_power_of_two`
        says, else None."""
        c = self.consts.get(t)
        if not isinstance(c, Tensor) or c.dtype not in ("float32", "float64") or c.array.size == 0:
            return None
        a = c.array
        info = np.finfo(a.dtype)
        with np.errstate(all="ignore"):
            recip = (a.dtype.type(1) / a).astype(a.dtype)
            mantissa, _ = np.frexp(a)
            exact = (np.all(np.isfinite(a)) and np.all(np.abs(mantissa) == 0.5)
                     and np.all(np.abs(a) >= info.tiny) and np.all(np.isfinite(recip))
                     and np.all(np.abs(recip) >= info.tiny) and np.all(recip * a == 1))
        if not exact:
            return None
        return self.const(Tensor(recip, c.dtype))

    def apply(self, op: str, attrs: Mapping[str, Any], args: tuple[int, ...],
              n_out: int) -> tuple[int, ...]:
        """The result terms of `op` applied to terms `args`, simplified as
        the module docstring says.  Computed once per application: what
        `_apply` returns depends only on (op, attributes, arguments, n_out)
        and on the shapes claimed for the arguments (every other table it
        reads -- constants, dtypes, never-subnormal terms, reshapes -- is
        filled when a term is made and never changes for it; `shapes` may
        gain a claim for a term later, from the other program's ports), so
        the second program's nodes that compute what the first's did cost
        a lookup (`applied`), with the same result as computing them."""
        # (`attrs_key`'s lookup written out: this runs once per node of
        # both programs, the same key as `self.attrs_key(attrs)`)
        if attrs:
            akey = self.akeys.get(id(attrs))
            akey = akey[1] if akey is not None and akey[0] is attrs else self.attrs_key(attrs)
        else:
            akey = ()
        key = (op, akey, args, n_out, tuple(map(self.shapes.get, args)))
        hit = self.applied.get(key)
        if hit is None:
            hit = self.applied[key] = self._apply(op, attrs, args, n_out)
        return hit

    def _apply(self, op: str, attrs: Mapping[str, Any], args: tuple[int, ...],
               n_out: int) -> tuple[int, ...]:
        f = fns.lookup(op)
        if f is _IDENTITY and f is not None and len(args) == 1:
            return (args[0],)
        if f is _COPY and f is not None and len(args) == 1:
            return (args[0],) * n_out
        if f is _SND and f is not None and len(args) == 2:
            return (args[1],)
        if f is not None and self.reduces_nothing(f, attrs, args):
            return (args[0],)
        if (f is not None and RESHAPES_BY_SHAPE and self.shapes
                and reshape_changes_nothing(op, f, attrs, args, self.shapes, self.consts)):
            return (args[0],)      # (S): a reshape to the shape its argument has
        shape = self.full_reshape(f, attrs, args) if RESHAPE_OF_RESHAPE else None
        if TILE_BY_ONES and self.tiles_by_ones(f, attrs, args):
            return (args[0],)              # (R5): Tile by ones of a tensor of that rank
        if shape is not None and args[0] in self.reshapes:
            inner, inner_shape = self.reshapes[args[0]]
            if (_elements(inner_shape) == _elements(shape)
                    and _elements(d for d in inner_shape if d) <= _RESHAPE_SPAN_MAX):
                return self.apply(op, attrs, (inner,), n_out)   # (R3)
        if f is not None and len(args) == 2 and not self.real:
            recip = self.division_by_power_of_two(f, attrs, args) if DIVISION_BY_POWER_OF_TWO \
                else None
            if recip is not None:          # (R1): x / c is x * (1/c)
                return self.apply(recip[0], {}, (args[0], recip[1]), n_out)
            if (CONSTANT_OPERAND_SECOND and self.sorts_commutative and commutes_up_to_error(op)
                    and args[0] in self.consts
                    and args[1] not in self.consts and isinstance(self.consts[args[0]], Tensor)
                    and type(f).apply is fns.Function.apply):
                args = (args[1], args[0])  # (R2): the constant operand second
            if PRODUCT_BY_ONE and self.sorts_commutative and product_by_one(
                    f, args, self.never_subnormal, self.consts, self.dtypes):
                return (args[0],)          # (R4): x * 1 is x, x never subnormal
        if f is not None and all(a in self.consts for a in args):
            folded = self._fold(f, attrs, args)
            if folded is not None:
                return folded
        app = self.make(("app", op, self.attrs_key(attrs), args))
        results = tuple(self.make(("port", app, k)) for k in range(n_out))
        if n_out == 1:
            self.origin.setdefault(results[0], (op, attrs, args))
        if shape is not None:
            self.reshapes.setdefault(results[0], (args[0], shape))
        dtype = self._result_dtype(f, args) if f is not None else None
        if dtype is None and f is not None and fns.lookup(op) is f:
            dtype = kernel_dtype(op, attrs)
        if dtype is not None:
            for t in results:
                self.dtypes.setdefault(t, dtype)
        if result_never_subnormal(op, f, args, self.never_subnormal, self.dtypes):
            self.never_subnormal.update(results)
        return results

    def tiles_by_ones(self, f: fns.Function, attrs: Mapping[str, Any],
                      args: tuple[int, ...]) -> bool:
        """(R5) Whether f(args) is Tile(x) with every multiple 1 and x a
        Reshape to a fully specified shape of as many dimensions (`reshapes`,
        the rank of x wherever x is a tensor): then it is x at every σ.  x
        an error: both that error (Tile is strict).  x a tensor: its rank is
        len(multiples), so Tile's rank check passes, and numpy's tile by
        ones is a copy of x (same dtype, shape and elements).  Grappler's
        constant folding removes a Tile by ones (`Tile(Reshape(dy), [1, 1,
        1, 1])`: the gradient of a global average pooling over a 1x1 map);
        the rank condition keeps the shape-mismatch error a Tile of another
        rank gives."""
        if _MOVES.get("Tile") is not f or f is None or len(args) != 1 or set(attrs) != {"multiples"}:
            return False
        m = attrs["multiples"]
        if not isinstance(m, (list, tuple)) or not all(type(d) is int and d == 1 for d in m):
            return False
        inner = self.reshapes.get(args[0])
        return inner is not None and len(inner[1]) == len(m)

    @staticmethod
    def full_reshape(f: fns.Function | None, attrs: Mapping[str, Any],
                     args: tuple[int, ...]) -> tuple[int, ...] | None:
        """(R3) The shape of a Reshape application whose shape attribute is
        fully specified (every dimension a non-negative int: no -1 to
        infer), else None."""
        if f is None or f is not _RESHAPE or len(args) != 1 or set(attrs) != {"shape"}:
            return None
        shape = attrs["shape"]
        if not isinstance(shape, (list, tuple)) or not all(
                type(d) is int and d >= 0 for d in shape):
            return None
        return tuple(shape)

    def apply_up_to_error(self, op: str, attrs: Mapping[str, Any], args: tuple[int, ...],
                          n_out: int) -> tuple[int, ...]:
        """The ≈-terms of `op` applied to ≈-terms `args` (the module's
        "Assign values up to which error"): the exact application, with
        the two operands of a commutative function (E3) in one order."""
        if (self.sorts_commutative and len(args) == 2 and commutes_up_to_error(op)
                and args[0] > args[1]):
            args = (args[1], args[0])
        if CAST_OUTSIDE_RESHAPE and op == "Cast" and n_out == 1 and len(args) == 1:
            inner = self.origin.get(args[0])
            if (inner is not None and inner[0] == "Reshape" and len(inner[2]) == 1
                    and fns.lookup("Reshape") is _RESHAPE and fns.lookup("Cast") is _CAST
                    and self.dtypes.get(inner[2][0]) in _EXACT_CAST_SOURCES):
                # (C): Cast(Reshape(x)) ≈ Reshape(Cast(x))
                cast = self.apply(op, attrs, inner[2], 1)
                return self.apply("Reshape", inner[1], cast, 1)
        return self.apply(op, attrs, args, n_out)

    def _fold(self, f: fns.Function, attrs: Mapping[str, Any], args: tuple[int, ...]):
        key = (f.name, self.attrs_key(attrs), args)
        if key in self.folds:
            return self.folds[key]
        values = [self.consts[a] for a in args]
        size = sum(v.array.size for v in values if isinstance(v, Tensor))
        result = None
        if f is _CONST or size <= FOLD_MAX_ELEMENTS:
            try:
                results = f.apply(values, attrs)
                if len(results) == f.n_out and all(isinstance(r, (Tensor, Error)) for r in results):
                    result = tuple(self.const(r) for r in results)
                if self.real and any(isinstance(v, Tensor) and v.dtype in FLOAT_DTYPES
                                     for v in (*values, *results)):
                    result = None   # (IEEE rounding: not a value over the reals)
            except Exception:   # a user's function that fails stays a term
                self.fold_failures += 1     # (`_original_terms`: such a pass is not kept)
                result = None
        self.folds[key] = result
        return result


#: (R3) the largest product of an inner Reshape's non-zero dimensions: a
#: zero-size shape such as [2^31-1, 2^31-1, 0] is refused by numpy ("array
#: is too big": that product times the item size) and, past int64, by
#: TensorFlow ("has too many elements"), so the inner Reshape fails on the
#: empty tensor the outer one alone accepts.  Below this bound every tensor
#: of size(s1) elements is reshaped by both.
_RESHAPE_SPAN_MAX = 2 ** 31 - 1


def _elements(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


#: (E3)'s functions besides symbolic.COMMUTATIVE_OPAQUE, as tfsem defines them
_UP_TO_ERROR_COMMUTATIVE = {name: fns.lookup(name)
                            for name in ("SquaredDifference", "SquaredDifference.ftz")}


def commutes_up_to_error(op: str) -> bool:
    """Whether f(a, b) ≈ f(b, a) for function `op` ((E3))."""
    if commutes_opaque(op):
        return True
    f = _UP_TO_ERROR_COMMUTATIVE.get(op)
    return f is not None and fns.lookup(op) is f


#: Functions that turn a NaN's payload or sign into bits an outcome shows:
#: TensorFlow's Bitcast, and the uint8 packings of scatter and slice
#: operands where their bytes reach anything but an Assign (which unpacks
#: them into a variable, where SPEC equality makes all NaNs equal again).
NAN_PAYLOAD_OBSERVERS = frozenset({"Bitcast"})
_PACKINGS = frozenset({"PackScatter", "PackSlice"})


def nan_payload_observer(p: Program, unknown: bool = True) -> tuple[str, str] | None:
    """(node, function) of a node of `p` that may give outcomes differing on
    NaNs that differ only in payload or sign, or None.  SPEC equality makes
    all NaNs equal, and every other function of tfsem's maps NaN-equal
    arguments to NaN-equal results (arithmetic passes some NaN on,
    comparisons and casts treat every NaN alike).  Such a node: Bitcast, a
    packing whose bytes reach anything but an Assign's value, and with
    `unknown` an op tfsem knows nothing of (`tf.OP/N/M` not among the known
    ops) or a function a user registered (Assign functions included)."""
    # ("value": the value of an Assign whose function unpacks a packing,
    # Assign-Scatter* and Assign-StridedSliceAssign; a Write (Snd) or any
    # other Assign function stores the bytes themselves, which the final
    # state then shows: a uint8 variable written PackScatter(i, Add(NaN1,
    # NaN2)) holds NaN1's bits)
    from tfsem.oracle.opdefs.state import PACKED_ASSIGNS
    consumers: dict[str, set] = {}

    def consumed() -> dict[str, set]:      # (built at the first packing only)
        if not consumers:
            for j, n in enumerate(p.nodes):
                if not j & 63:
                    _tick()
                for k, i in enumerate(inputs[n.name]):
                    if not isinstance(i, FeedIn):
                        consumers.setdefault(i.node, set()).add(
                            "value" if n.op == ASSIGN and k == 1 and n.fn in PACKED_ASSIGNS
                            else n.op)
        return consumers

    inputs = data_inputs(p)
    # (the ops whose checks below, which depend on the op alone, passed:
    # asked once per op, not once per node -- 12 ms for MobileNetV2's
    # rewrite, each check; the packings' check depends on the node, and
    # stays before it)
    passed: set[str] = set()
    for j, n in enumerate(p.nodes):
        if not j & 63:
            _tick()
        op = n.attrs.get("fn") if n.op == ASSIGN else n.op
        if not isinstance(op, str) or op in (VAR, READ):
            continue
        name = op[3:].split("/", 1)[0] if op.startswith("tf.") else op
        if name in NAN_PAYLOAD_OBSERVERS:
            return n.name, name
        if name in _PACKINGS and (consumed().get(n.name, set()) - {"value"}
                                  or n.name in {o.node for o in p.outputs.values()}):
            return n.name, name
        if not unknown or op in passed:
            continue
        passed.add(op)             # (each check that fails below returns)
        f = fns.lookup(op)
        if f is None:
            continue               # not a function: control flow
        if op.startswith("tf."):
            from tfsem.oracle.opdefs.registry import known_ops, lookup
            d = lookup(name)
            # (an op tfsem now models, pure, was a known op when such a
            # program was written -- DivNoNan, Prod, Pad, ... moved from
            # the known ops to models: its kernel is no less blind to a
            # NaN's payload than its model, whose function passes below)
            if name not in known_ops() and not (
                    d is not None and d.stateful is None and d.functions and all(
                        (g := fns.lookup(fname)) is not None and _is_tfsems(g)
                        for fname in d.function_names())):
                # (and only tfsem's own: a plugin's OpDef of the same name
                # says nothing of TensorFlow's kernel, Fingerprint's say)
                return n.name, name
        elif not _is_tfsems(f):
            return n.name, name
    return None


def _nan_payload_blind(p: Program) -> bool:
    """Whether no function of `p` observes a NaN's payload or sign
    (`nan_payload_observer`): then two runs whose values differ only there
    have equal outcomes, which (E3) needs where the two orders of an IEEE
    addition or multiplication of two NaNs give different NaNs (x86, numpy
    and TensorFlow pass on the first operand's payload: Add(NaN1, NaN2) has
    NaN1's bits, Add(NaN2, NaN1) NaN2's; Bitcast shows them)."""
    return nan_payload_observer(p) is None


def _congruent_up_to_error(f: fns.Function | None) -> bool:
    """Whether ≈ is a congruence for f ((E2) of the module docstring): its
    `apply` is Function.apply, whose implementation never sees an error
    argument, or f is strict in every argument."""
    if f is None:
        return False
    return (type(f).apply is fns.Function.apply
            or tuple(f.strict()) == tuple(range(f.n_in)))


def _term_plan(p: Program, exact_assigns: bool = False, settled: bool = True,
               info: dict[str, tuple] | None = None) -> list[tuple]:
    """Which terms `_program_terms` builds for p, node by node in
    topological order: (name, op, data inputs, function, results, need the
    exact term, need the ≈-term, ≈ a congruence for the function).  Exact
    terms for the ports outputs depend on (and, with `exact_assigns`, Assign
    values), ≈-terms for those Assign values depend on; a function ≈ is no
    congruence for takes its exact term as its ≈-term.  It depends on p
    alone, so the rule's attempts share it.  `settled=False`: no ≈-term
    (the exact Assign values alone, with `exact_assigns`).  `info`, if
    given, keeps what each node's entry needs (function, congruence, data
    inputs, sources) for the next plan of the same program (in one call of
    the rule: the functions are looked up once)."""
    inputs = data_inputs(p)
    info = {} if info is None else info
    # (the nodes in topological order with their ops, and the Assigns'
    # value inputs: the same for every plan of p; under a key no node has)
    ops = info.get(("ops",))
    if ops is None:
        ops = info[("ops",)] = [(name, p.node[name].op) for name in p.topological_order]
        info[("values",)] = [inputs[name][1] for name, op in ops if op == ASSIGN]
    need_exact = {port.node for port in p.outputs.values()}
    need_settled: set[str] = set()
    for v in info[("values",)]:
        if not isinstance(v, FeedIn):
            if settled:
                need_settled.add(v.node)
            if exact_assigns:
                need_exact.add(v.node)
    accesses = (VAR, READ, ASSIGN)
    for k, (name, op) in enumerate(reversed(ops)):
        if not k & 63:
            _tick()
        if op in accesses:
            continue
        got = info.get(name)
        if got is None:
            f = fns.lookup(op)
            ins = inputs[name]
            got = info[name] = (f, _congruent_up_to_error(f), ins,
                                [i.node for i in ins if not isinstance(i, FeedIn)])
        f, congruent, ins, sources = got
        if name in need_settled:
            if congruent:
                need_settled.update(sources)
            else:
                need_exact.add(name)
        if name in need_exact:
            need_exact.update(sources)
    plan = []
    for k, (name, op) in enumerate(ops):
        if not k & 63:
            _tick()
        if op in accesses:
            plan.append((name, op, inputs[name], None, 0, False, False, False))
        elif name in need_exact or name in need_settled:
            f, congruent, ins, _sources = info[name]
            n_out = f.n_out if f is not None else p.node[name].n_outputs()
            plan.append((name, op, ins, f, n_out, name in need_exact,
                         name in need_settled, congruent))
    return plan


def _program_terms(p: Program, terms: _Terms, leaf_of_read: Mapping[str, tuple],
                   exact_assigns: bool = False, plan: list[tuple] | None = None,
                   names: dict[int, str] | None = None, known: Mapping | None = None,
                   values_out: dict | None = None):
    """(Assign name -> ≈-term of its tensor input, output name -> exact term,
    and with `exact_assigns` Assign name -> exact term of its input): Assign
    values up to which error, outputs exactly (module docstring, V≈).  Only
    the terms these need are built (`_term_plan`).  `names`, when given,
    gets for each term the first node whose port it is (diagnostics:
    `_differences`).  `values_out`, when given, gets every port's exact
    term built; `known`, such a table from an earlier call for the same
    program and leaves, whose ports are taken as they are, not built again
    (the exact Assign values of a proof, after the outputs')."""
    value: dict[tuple[str, int], int] = dict(known) if known else {}
    settled: dict[tuple[str, int], int] = {}   # the ≈-terms
    if plan is None:
        plan = _term_plan(p, exact_assigns)

    def arg(i, table) -> int:
        if isinstance(i, FeedIn):
            return terms.feed(i.name, p.feed_type(i.name).dtype)
        return table[(i.node, i.port)]

    assigns: dict[str, int] = {}
    exact: dict[str, int] = {}
    port_shapes = terms.program_shapes.get(id(p)) or {}

    # (the loop below is `shaped` and `arg` written out, with the tables'
    # methods bound once: a Grappler rewrite runs it for each of its
    # thousands of nodes, and the calls were half its time.  What each
    # node's entries are is unchanged: a feed's term, else the table's)
    feed = terms.feed
    apply, apply_up_to_error = terms.apply, terms.apply_up_to_error
    shape_of = port_shapes.get
    shape_claim = terms.shapes.setdefault
    named = names.setdefault if names is not None else None
    for k, (name, op, inputs, f, n_out, need_exact, need_settled, congruent) in enumerate(plan):
        if not k & 63:
            _tick()
        if op == VAR:
            continue
        if op == READ:
            value[(name, 0)] = settled[(name, 0)] = t = terms.make(leaf_of_read[name])
            sh = shape_of((name, 0))
            if sh is not None:
                shape_claim(t, sh)
            if named is not None:
                named(t, name)
        elif op == ASSIGN:
            if inputs[1] is not None and (isinstance(inputs[1], FeedIn)
                                          or (inputs[1].node, inputs[1].port) in settled):
                assigns[name] = arg(inputs[1], settled)
            if exact_assigns:
                exact[name] = arg(inputs[1], value)
        else:
            attrs = p.node[name].attrs
            if need_exact and known and (name, 0) in known:
                results = tuple([value[(name, port)] for port in range(n_out)])
            elif need_exact:
                results = apply(op, attrs, tuple([
                    feed(i.name, p.feed_type(i.name).dtype) if isinstance(i, FeedIn)
                    else value[(i.node, i.port)] for i in inputs]), n_out)
                for port, t in enumerate(results):
                    sh = shape_of((name, port))
                    if sh is not None:
                        shape_claim(t, sh)
                    value[(name, port)] = t
                    if named is not None:
                        named(t, name)
            if need_settled:
                if congruent:
                    results = apply_up_to_error(op, attrs, tuple([
                        feed(i.name, p.feed_type(i.name).dtype) if isinstance(i, FeedIn)
                        else settled[(i.node, i.port)] for i in inputs]), n_out)
                    for port, t in enumerate(results):
                        sh = shape_of((name, port))
                        if sh is not None:
                            shape_claim(t, sh)
                # (otherwise the ≈-term is the exact one, computed above:
                # equal values are ≈)
                for port, t in enumerate(results):
                    settled[(name, port)] = t
                    if named is not None:
                        named(t, name)
    outputs = {o: value[(port.node, port.port)] for o, port in p.outputs.items()}
    if values_out is not None:
        values_out.update(value)
    return assigns, outputs, (exact if exact_assigns else None)


#: The original's terms, remembered per original (in its `_original_memo`
#: entry) across the checks of its rewrites: tests switch it off to compare.
ORIGINAL_TERMS = True
#: At most this many starts (Read leaves, shapes, modes) remembered per
#: original, the latest kept: a check of Grappler's optimizers has one or two
ORIGINAL_TERMS_KEPT = 2
#: Functions `_Terms._apply` may look up besides those the original names
#: ((R1)'s products, (C)'s Reshape and Cast): a remembered pass holds while
#: these are the registry's too
_LOOKED_UP_BY_APPLY = ("Mul", "Mul.ftz", "Reshape", "Cast")


def _original_terms(p: Program, terms: "_Terms", leaves: Mapping[str, tuple], leaves_key: tuple,
                    plan: list[tuple], memo: dict | None) -> tuple[dict, dict, dict, dict]:
    """(assigns, outputs, names, values) of `_program_terms(p, terms,
    leaves, plan=plan, names=names, values_out=values)` on a fresh `terms`
    (no term made yet; its modes and p's shapes set), the pass itself
    remembered in p's memo entry, where every check of p against a rewrite
    makes it first (a MobileNetV2 check of Grappler's: a quarter of the
    rule's time, the same in each of the five checks).

    **Why a remembered pass is the pass.**  Before it, `terms` is empty;
    the pass reads nothing of the rewrite: only p (immutable), the Read
    leaves (`leaves_key`), the plan (p's, from the same memo entry), p's
    claimed shapes (`terms.program_shapes[id(p)]`, which may depend on the
    rewrite: both programs' Assigns decide whether Reads get shapes, so the
    very dict is compared, the memo's pass of p), the modes `_Terms` holds
    (`real`, `sorts_commutative`, the latter from the rewrite too), the
    module's switches, and the registry's functions it looks up (those p
    names, the entry's own key and `still_registered`; and
    `_LOOKED_UP_BY_APPLY`) and the rule's code itself (`_code`).  Given
    those, every step of the pass is determined (hash-consing numbers
    terms in the order they are made, the same order each time; each
    function is deterministic), so the tables
    after it are the ones kept, term for term: restoring copies of them
    leaves `terms` exactly as the pass would (the rewrite's pass then makes
    the same terms with the same numbers: the same result, reason and
    counts; tests/test_structural_original_terms.py compares them with
    `ORIGINAL_TERMS` off).  Not kept: a pass during which a fold raised
    (a kernel refused at the deadline may fold next time), or one cut
    short (`_OutOfTime` leaves before the pass is kept).  The kernels the
    pass ran are noted again on a hit (`kernels.note`), so that a verdict
    names the same kernels."""
    names: dict[int, str] = {}
    values: dict = {}
    if memo is None or not ORIGINAL_TERMS:
        assigns, outputs, _ = _program_terms(p, terms, leaves, plan=plan, names=names,
                                             values_out=values)
        return assigns, outputs, names, values
    shapes = terms.program_shapes.get(id(p))
    mkey = ("terms", leaves_key, terms.real, terms.sorts_commutative, _switches())
    hit = memo.get(mkey)
    code = _code()
    if (hit is not None and hit[0] is plan and hit[1] is shapes
            and fns.still_registered(hit[2]) and len(hit[9]) == len(code)
            and all(a is b for a, b in zip(hit[9], code))):
        state, assigns, outputs, names, values, used = hit[3:9]
        terms.restore(state)
        kernels.note(used)
        return dict(assigns), dict(outputs), dict(names), dict(values)
    looked_up = tuple((n, fns.lookup(n)) for n in _LOOKED_UP_BY_APPLY)
    with kernels.record() as used:
        assigns, outputs, _ = _program_terms(p, terms, leaves, plan=plan, names=names,
                                             values_out=values)
    if terms.fold_failures == 0 and fns.still_registered(looked_up):
        # (`list(memo)` first: another thread's check of p may add to the
        # entry meanwhile, and a dict must not change while it is iterated)
        kept = [k for k in list(memo) if isinstance(k, tuple) and k[0] == "terms"]
        for k in kept[:max(0, len(kept) - ORIGINAL_TERMS_KEPT + 1)]:
            memo.pop(k, None)       # (the oldest first: dicts keep insertion order)
        memo[mkey] = (plan, shapes, looked_up, terms.snapshot(), dict(assigns), dict(outputs),
                      dict(names), dict(values), frozenset(used), code)
    return assigns, outputs, names, values


def _code() -> tuple:
    """This module's functions and classes and `_Terms`' attributes, the
    objects they are now: a pass is remembered for the code that made it
    (a test replaces a method or a helper, `reduces_nothing`,
    `commutes_opaque`, to show what a proof needs; compared by identity)."""
    return (*(v for v in globals().values() if callable(v)),
            *(v for k in vars(_Terms) if callable(v := getattr(_Terms, k))))


def _switches() -> tuple:
    """The module's switches a term pass reads (`_Terms._apply`)."""
    return (RESHAPES_BY_SHAPE, RESHAPE_OF_RESHAPE, TILE_BY_ONES, DIVISION_BY_POWER_OF_TWO,
            CONSTANT_OPERAND_SECOND, PRODUCT_BY_ONE, CAST_OUTSIDE_RESHAPE, FOLD_MAX_ELEMENTS)


#: A step is (node name, phase): ONE for a node that is one step, READ_STEP
#: and WRITE_STEP for the two steps of a decomposed Assign.  (Tuples, not
#: strings: a node may well be called "a@read".)
ONE = ""
Step = tuple[str, str]


def _steps(p: Program, semantics: str) -> tuple[list[Step], dict[Step, list[Step]]]:
    """The step DAG: steps in a topological order, and each step's
    predecessors.  A decomposed Assign `a` is the steps a.r -> a.w; an edge
    u -> v runs from u's last step to v's first."""
    split = semantics == DECOMPOSED
    order: list[Step] = []
    preds: dict[Step, list[Step]] = {}
    for k, name in enumerate(p.topological_order):
        if not k & 63:
            _tick()
        before = [_last(p, q, split) for q in p.predecessors(name)]
        if split and p.node[name].op == ASSIGN:
            order += [(name, READ_STEP), (name, WRITE_STEP)]
            preds[(name, READ_STEP)] = before
            preds[(name, WRITE_STEP)] = [(name, READ_STEP)]
        else:
            order.append((name, ONE))
            preds[(name, ONE)] = before
    return order, preds


def _last(p: Program, name: str, split: bool) -> Step:
    return (name, WRITE_STEP) if split and p.node[name].op == ASSIGN else (name, ONE)


def _prove(p: Program, p2: Program, semantics: str, observe: str, stats: dict[str, Any],
           merge_reads: bool | str, merge_assigns: bool, plans: tuple | None = None) -> str:
    _interface(p, p2)
    decomposed = semantics == DECOMPOSED
    # (shared by the attempts: what depends on the programs alone)
    shared = plans[5] if plans is not None and len(plans) > 5 else {}
    if "accesses" not in shared:
        # (the original's from its memo entry: `_accesses` depends on the
        # program alone; one that raised is not kept, and raises again)
        memo = shared.get("memo")
        acc = memo.get("accesses") if memo is not None else None
        if acc is None:
            acc = _accesses(p)
            if memo is not None:
                memo["accesses"] = acc
        shared["accesses"] = (acc, _accesses(p2))
    acc, acc2 = shared["accesses"]
    nu = _match(p, p2, acc, acc2, merge_reads)   # Reads and same-function Assigns
    for s, t in list(nu.items()):
        if acc[s][0] == ASSIGN and acc[s] != acc2[t]:
            del nu[s]                   # same name, another function: fuse or split below
        elif acc[s][:2] != acc2[t][:2]:
            raise _NotApplicable(f"(K) {s!r} and {t!r} differ in kind or variable")

    plans = plans if plans is not None else (
        _term_plan(p), _term_plan(p2), _nan_payload_blind(p) and _nan_payload_blind(p2))
    leaves = {s: ("read", nu[s]) if s in nu else ("unmatched-read", s)
              for s, (kind, _x, _f) in acc.items() if kind == READ}
    leaves2 = {t: ("read", t) for t in acc2}
    # the terms depend on the programs and the Reads' leaves alone: an
    # attempt whose guess gives every Read the leaf an earlier one gave it
    # (most do: they differ in Assigns, or find no Read to merge) takes that
    # attempt's terms (hash-consed: later additions change no term)
    built = plans[4] if len(plans) > 4 else {}
    key = tuple(sorted(leaves.items()))
    doomed = shared.setdefault("doomed", {})
    if key in doomed:
        # an earlier attempt with these leaves found (V) false: the Assigns
        # (V) compares are matched by name, the same in every attempt, and
        # the outputs are the outputs, so this one would find it false too
        raise _NotApplicable(doomed[key])
    if key in built:
        terms, assigns, outputs, assigns2, outputs2, names, names2, values = built[key]
    else:
        terms = _Terms()
        if len(plans) > 3:
            terms.akeys = plans[3]          # (attribute keys shared by the attempts)
        if not plans[2]:
            terms.sorts_commutative = False    # (E3) only where no function sees a NaN's bits
        if RESHAPES_BY_SHAPE:
            terms.program_shapes = dict(zip((id(p), id(p2)), static_shapes(
                p, p2, tick=_tick if _DEADLINE.get() is not None else None,
                passes=shared.get("shape_passes"))))
        names2: dict[int, str] = {}
        # (the original's terms first, from its memo entry where an earlier
        # check built them from the same start: `_original_terms`)
        assigns, outputs, names, values_p = _original_terms(p, terms, leaves, key, plans[0],
                                                            shared.get("memo"))
        values: tuple[dict, dict] = (values_p, {})   # (the exact terms built, of each program)
        assigns2, outputs2, _ = _program_terms(p2, terms, leaves2, plan=plans[1], names=names2,
                                               values_out=values[1])
        built[key] = (terms, assigns, outputs, assigns2, outputs2, names, names2, values)

    # Assign groups (K): `step` maps P steps to P' steps
    step: dict[Step, Step] = {}
    kinds: dict[str, int] = {"same": 0, "merged": 0, "fused": 0, "split": 0}
    for s, t in nu.items():
        if acc[s][0] == READ:
            step[(s, ONE)] = (t, ONE)
    images = {t for s, t in nu.items() if acc[s][0] == ASSIGN}
    same_by_key: dict[Any, str] = {}       # cse-stateful key, or (variable, function,
    #                                        value term) -> P' Assign
    struct = _cse_keys(p, assigns=True) if merge_assigns and decomposed else {}
    fused_reads: set[str] = set()
    split_reads: set[str] = set()
    # the step of P' a P step's predecessors must reach, where it is not its
    # image (S atomic: the split Read); and the atomic splits (a, rr, x)
    first: dict[Step, Step] = {}
    atomic_splits: list[tuple[str, str, str]] = []
    dead_splits = 0
    deleted_assigns: list[str] = []

    def map_assign(a: str, t: str) -> None:
        if decomposed:
            step[(a, READ_STEP)], step[(a, WRITE_STEP)] = (t, READ_STEP), (t, WRITE_STEP)
        else:
            step[(a, ONE)] = (t, ONE)

    for a, (kind, x, fn) in acc.items():
        t = nu.get(a)
        if kind == ASSIGN and t is not None:                # the same Assign
            map_assign(a, t)
            kinds["same"] += 1
            same_by_key.setdefault((x, fn, assigns[a]), t)
            if struct:
                same_by_key.setdefault(struct[a], t)
    for a, (kind, x, fn) in acc.items():
        if kind != ASSIGN or a in nu:
            continue
        other = acc2.get(a)
        if other is not None and other[0] == ASSIGN and other[1] == x and a not in images:
            f2 = other[2]
            if fn == SND and f2 != SND:
                # fuse: P's Write a := F(Read r of x, v) is P' 's Assign-F a := v
                r = _fused_read(terms, assigns[a], f2, assigns2[a], acc, x, fused_reads)
                if r is not None:
                    fused_reads.add(r)
                    images.add(a)
                    if decomposed:
                        step[(r, ONE)] = (a, READ_STEP)
                        step[(a, READ_STEP)] = step[(a, WRITE_STEP)] = (a, WRITE_STEP)
                    else:
                        step[(r, ONE)] = step[(a, ONE)] = (a, ONE)
                    kinds["fused"] += 1
                    continue
            if fn != SND and f2 == SND and (decomposed or _extensions()):
                # split: P's Assign-F a := v is P' 's Read rr of x, then Write a := F(rr, v)
                rr = _split_read(terms, assigns2[a], fn, assigns[a], acc2, x,
                                 split_reads | set(nu.values()))
                if rr is not None:
                    split_reads.add(rr)
                    images.add(a)
                    if decomposed:
                        step[(a, READ_STEP)], step[(a, WRITE_STEP)] = (rr, ONE), (a, WRITE_STEP)
                    else:
                        # (S atomic): a is ranked at the Write; its P-predecessors
                        # must come before rr, and no other write of x may fall
                        # between rr and the Write (checked with (H) below)
                        step[(a, ONE)] = (a, ONE)
                        first[(a, ONE)] = (rr, ONE)
                        atomic_splits.append((a, rr, x))
                    kinds["split"] += 1
                    continue
        t = same_by_key.get(struct.get(a, -1)) or same_by_key.get((x, fn, assigns[a]))
        if merge_assigns and decomposed and t is not None:
            # merged (decomposed only): identical Assigns, read and write back to back
            if acc2[t] == acc[a] and assigns[a] == assigns2[t]:
                map_assign(a, t)
                kinds["merged"] += 1
                continue
        deleted_assigns.append(a)

    # every write step of P' stands for some write step of P; a read step of
    # P' that stands for nothing is a Read or the read step of a Write
    covered = set(step.values())
    for t, (kind, _x, fn) in acc2.items():
        if kind != ASSIGN:
            continue
        write = (t, WRITE_STEP) if decomposed else (t, ONE)
        if write not in covered:
            raise _NotApplicable(f"(K) Assign {t!r} of the rewrite has no counterpart in the original")
        if decomposed and (t, READ_STEP) not in covered and fn != SND:
            raise _NotApplicable(f"(K) the read step of Assign {t!r} of the rewrite stands for "
                                 "nothing in the original")

    # (A)
    if deleted_assigns and observe != OUTPUTS:
        raise _NotApplicable(f"(A) Assign {deleted_assigns[0]!r} of the original has no "
                             "counterpart, and the final state is observed")

    # (V)
    differing = [(f"Assign {a!r}", assigns[a], assigns2[t]) for a, t in nu.items()
                 if acc[a][0] == ASSIGN and assigns[a] != assigns2[t]]
    differing += [(f"output {o!r}", outputs[o], outputs2[o]) for o in p.outputs
                  if outputs[o] != outputs2[o]]
    if differing and "first_difference" not in stats:
        stats["first_difference"] = _differences(terms, differing, names, names2)
    for a, t in nu.items():
        if acc[a][0] == ASSIGN and assigns[a] != assigns2[t]:
            doomed[key] = (f"(V) the value assigned by {a!r} is not the same term "
                           f"as the one assigned by {t!r} in the rewrite")
            raise _NotApplicable(doomed[key])
    for o in p.outputs:
        if outputs[o] != outputs2[o]:
            doomed[key] = f"(V) output {o!r} is not the same term in the rewrite"
            raise _NotApplicable(doomed[key])
    # (proved: which Assign values were equal only up to which error)
    # (exact terms alone: the ≈-terms are built; `_term_plan` settled=False)
    info = shared.get("info", ({}, {}))
    memo = shared.get("memo")
    exact = _program_terms(p, terms, leaves, exact_assigns=True, known=values[0],
                           plan=_of_original(memo, "exact_plan", lambda: _term_plan(
                               p, True, settled=False, info=info[0])))[2]
    exact2 = _program_terms(p2, terms, leaves2, exact_assigns=True, known=values[1],
                            plan=_term_plan(p2, True, settled=False, info=info[1]))[2]
    up_to_error = sum(1 for a, t in nu.items()
                      if acc[a][0] == ASSIGN and exact[a] != exact2[t])

    # (H) on steps, and (A)'s "no matched step is hb-after a deleted Assign"
    # (P's steps, their ancestor sets and its unobserved Reads depend on P
    # alone: made once for the checks of one original, `_of_original`)
    order, preds, index, anc = _original_steps(p, semantics, memo)
    order2, preds2 = _steps(p2, semantics)
    index2, anc2 = _ancestors(order2, preds2)
    # (X) an atomic split is not interleaved: rr before the Write, and every
    # other write step of x ordered before rr or after the Write
    writes2 = _write_steps(acc2, decomposed)
    unobserved = _of_original(memo, "unobserved", lambda: frozenset(_unobserved_reads(p, acc)))
    for a, rr, x in atomic_splits:
        ww, rs = (a, ONE), (rr, ONE)
        if not anc2[ww] >> index2[rs] & 1:
            raise _NotApplicable(f"(X) the split Read {rr!r} is not ordered before {a!r}")
        for w2 in writes2.get(x, ()):
            if w2 != ww and not (anc2[rs] >> index2[w2] & 1 or anc2[w2] >> index2[ww] & 1):
                why = _dead_after(rs, x, observe, acc, unobserved, step, anc2, index2)
                if why is not None:
                    raise _NotApplicable(f"(X) {''.join(w2)!r} may write {x!r} between the "
                                         f"split Read {rr!r} and the Write {a!r}; (X') {why}")
                dead_splits += 1
                break

    # (H'): P's ancestor sets (made above), for the Reads (H) is relaxed for
    writes = _write_steps(acc, decomposed, skip=set(deleted_assigns))
    deleted_vars = {acc[a][1] for a in deleted_assigns}
    relaxed: set[Step] = set()
    unmatched_reads = 0

    mapped: dict[Step, int] = {}
    after_deleted: dict[Step, bool] = {}
    dset = {(a, phase) for a in deleted_assigns for phase in (ONE, READ_STEP, WRITE_STEP)}
    for k, u in enumerate(order):
        if not k & 63:
            _tick()
        bits, late = 0, False
        for q in preds[u]:
            bits |= mapped[q]
            if q in step and q not in relaxed:
                bits |= 1 << index2[step[q]]
            late = late or after_deleted[q] or q in dset
        mapped[u], after_deleted[u] = bits, late
        t = step.get(u)
        if t is None:
            continue
        f = first.get(u, t)
        outside = bits & ~(anc2[f] | (1 << index2[f]))
        if (outside or late) and _extensions() and u[1] == ONE and u[0] in unobserved and u[0] in nu:
            # (U) a Read whose value nothing compared uses: outside every group
            del step[u], nu[u[0]]
            unmatched_reads += 1
            continue
        if late:
            raise _NotApplicable(f"(A) {''.join(u)!r} waits for a deleted Assign")
        if outside:
            why = "" if not _extensions() else _relax(u, t, acc, acc2, step, writes, writes2, anc,
                                                   index, anc2, index2, deleted_vars, bits)
            if why is None:
                relaxed.add(u)
                continue
            missing = next(order2[i] for i in range(len(order2)) if outside >> i & 1)
            raise _NotApplicable(f"(H) {''.join(u)!r} comes after a step that becomes "
                                 f"{''.join(missing)!r}, which the rewrite no longer orders "
                                 f"before {''.join(f)!r}" + (f"; {why}" if why else ""))

    read_images: dict[str, int] = {}
    for s, t in nu.items():
        if acc[s][0] == READ:
            read_images[t] = read_images.get(t, 0) + 1
    merged = sum(k - 1 for k in read_images.values())
    deleted_reads = sum(1 for s, (kind, _x, _f) in acc.items()
                        if kind == READ and s not in nu and s not in fused_reads) - unmatched_reads
    extra_reads = sum(1 for t, (kind, _x, _f) in acc2.items()
                      if kind == READ and t not in read_images and t not in split_reads)
    stats.update(relaxed_reads=len(relaxed), unobserved_reads_unmatched=unmatched_reads,
                 dead_splits=dead_splits,
                 accesses=len(acc), reads_matched=sum(read_images.values()), merged_reads=merged,
                 deleted_reads=deleted_reads, deleted_assigns=len(deleted_assigns),
                 extra_reads=extra_reads, terms=len(terms.table),
                 assigns_up_to_error=up_to_error,
                 **{f"assigns_{k}": v for k, v in kinds.items()})
    parts = [f"{len(acc)} accesses"]
    if merged:
        parts.append(f"{merged} Reads merged")
    if deleted_reads:
        parts.append(f"{deleted_reads} unobserved Reads deleted")
    if extra_reads:
        parts.append(f"{extra_reads} unused Reads added")
    if relaxed:
        parts.append(f"{len(relaxed)} Reads moved, each between the same writes")
    if unmatched_reads:
        parts.append(f"{unmatched_reads} unobserved Reads reordered")
    if dead_splits:
        parts.append(f"{dead_splits} split Assigns racing on a variable nobody reads after")
    for k in ("merged", "fused", "split"):
        if kinds[k]:
            parts.append(f"{kinds[k]} Assigns {k}")
    if deleted_assigns:
        parts.append(f"{len(deleted_assigns)} unobserved Assigns deleted (outputs only)")
    order = ("the original's order between accesses kept" if not (relaxed or dead_splits)
             else "the original's order between accesses kept where a value depends on it")
    values = "values equal as terms"
    if up_to_error:
        values += (f" ({up_to_error} Assign value{'s' if up_to_error != 1 else ''} up to which "
                   "error: commutative operands in one order)")
    sink = _MATCHED.get()
    if sink is not None:
        sink.clear()
        sink.update(step)
    return ("structural: access skeleton preserved (" + ", ".join(parts)
            + f"; {values}, {order})")


def _differences(terms: _Terms, differing: list[tuple[str, int, int]],
                 names: Mapping[int, str], names2: Mapping[int, str]) -> dict[str, Any]:
    """Where (V) fails, for the user (JSON `structural_first_difference`):
    the first differing value (an Assign's or an output's) and, in it, the
    first pair of subterms that differ at their head while everything above
    them agrees (`_Terms.first_difference`), each with the node of its
    program that computes it (or, for a term no node computes, such as the
    product (R1) makes of a division, the nearest node above it); then how
    many values differ and the most frequent differing head pairs."""
    kinds: dict[str, int] = {}
    first = None
    for what, t1, t2 in differing:
        _tick()
        path = terms.first_difference(t1, t2)
        d1, d2 = path[-1]
        kind = f"{_head(terms, d1)} -> {_head(terms, d2)}"
        kinds[kind] = kinds.get(kind, 0) + 1
        if first is None:
            n1 = next((names[a] for a, _b in reversed(path) if a in names), None)
            n2 = next((names2[b] for _a, b in reversed(path) if b in names2), None)
            first = {"value": what,
                     "original": {"node": n1, "term": terms.describe(d1, 2)},
                     "rewrite": {"node": n2, "term": terms.describe(d2, 2)},
                     "depth": len(path) - 1}
    top = sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))[:8]
    return {"values_differing": len(differing), **first,
            "kinds": [{"change": k, "values": v} for k, v in top]}


def _head(terms: _Terms, t: int) -> str:
    k = terms.key_of(t)
    if k[0] == "port":
        return terms.key_of(k[1])[1]
    return "const" if k[0] == "const" else k[0]


def race_free(p: Program) -> bool:
    """Whether every two accesses of one variable of `p`, one of them an
    Assign, are ordered by hb (edges, data and control): then every run
    gives each Read the same value and each variable the same sequence of
    writes (Facts 1 and 2), so `p` has one outcome at every σ, whatever the
    values, in either semantics mode (a decomposed Assign's two steps sit
    where the node does).  checking/check.py uses it to choose which σ to
    compare in full first; no verdict rests on it."""
    acc = {}
    for n in p.nodes:
        if n.op == READ or n.op == ASSIGN:
            x = p.accessed_variable(n.name)
            if x is None:
                return False
            acc.setdefault(x, []).append((n.name, n.op == ASSIGN))
    if not any(any(w for _n, w in accs) and len(accs) > 1 for accs in acc.values()):
        return True
    # (an original's steps and ancestor sets, made by the rule's attempt on
    # it or kept for the next check: `_original_steps`; a rewrite's, made)
    _order, _preds, index, anc = _original_steps(p, "atomic", _original_memo(p, create=False))
    for accs in acc.values():
        for i, (a, wa) in enumerate(accs):
            for b, wb in accs[i + 1:]:
                if not (wa or wb):
                    continue
                sa, sb = (a, ONE), (b, ONE)
                if not (anc[sb] >> index[sa] & 1 or anc[sa] >> index[sb] & 1):
                    return False
    return True


def _dead_after(rs: Step, x: str, observe: str, acc: Mapping, unobserved: set[str],
                step: Mapping[Step, Step], anc2: Mapping[Step, int],
                index2: Mapping[Step, int]) -> str | None:
    """(X') for an atomic split of x whose Read is rs in P': None when x is
    dead from rs on (outputs only, and every Read of P of x whose value is
    compared has its image before rs in P'), else why not."""
    if observe != OUTPUTS:
        return "the final state is observed"
    for r, (kind, y, _f) in acc.items():
        if kind != READ or y != x or r in unobserved:
            continue
        t = step.get((r, ONE))
        if t is None or not anc2[rs] >> index2[t] & 1:
            return f"Read {r!r} of {x!r}, whose value is used, is not ordered before it"
    return None


def _ancestors(order: list[Step],
               preds: Mapping[Step, list[Step]]) -> tuple[dict[Step, int], dict[Step, int]]:
    """(position of each step in `order`, each step's ancestors as a bitset
    of positions); `order` is topological."""
    index = {u: i for i, u in enumerate(order)}
    anc: dict[Step, int] = {}
    for k, u in enumerate(order):
        if not k & 63:
            _tick()
        bits = 0
        for q in preds[u]:
            bits |= anc[q] | (1 << index[q])
        anc[u] = bits
    return index, anc


def _write_steps(acc: Mapping, decomposed: bool, skip: set[str] = frozenset()) -> dict[str, list[Step]]:
    """Each variable's write steps: its Assigns' (write step in decomposed
    mode), those in `skip` left out."""
    writes: dict[str, list[Step]] = {}
    for a, (kind, x, _fn) in acc.items():
        if kind == ASSIGN and a not in skip:
            writes.setdefault(x, []).append((a, WRITE_STEP) if decomposed else (a, ONE))
    return writes


def _unobserved_reads(p: Program, acc: Mapping) -> set[str]:
    """The Reads of P from which no path of data edges reaches an output or
    the value input of an Assign: their leaf occurs in no term (V) compares
    (terms follow data edges only)."""
    live: set[str] = set()
    consumers: dict[str, list[tuple[str, int]]] = {}
    inputs = data_inputs(p)
    for n in p.nodes:
        for k, i in enumerate(inputs[n.name]):
            if not isinstance(i, FeedIn):
                consumers.setdefault(i.node, []).append((n.name, k))
    fetched = {port.node for port in p.outputs.values()}
    for k, name in enumerate(reversed(p.topological_order)):
        if not k & 63:
            _tick()
        n = p.node[name]
        if name in fetched or any((p.node[c].op == ASSIGN and k == 1)
                                  or (p.node[c].op not in (ASSIGN, READ, VAR) and c in live)
                                  for c, k in consumers.get(name, ())):
            live.add(name)
    return {r for r, (kind, _x, _f) in acc.items() if kind == READ and r not in live}


def _relax(u: Step, t: Step, acc: Mapping, acc2: Mapping, step: Mapping[Step, Step],
           writes: Mapping[str, list[Step]], writes2: Mapping[str, list[Step]],
           anc: Mapping[Step, int], index: Mapping[Step, int],
           anc2: Mapping[Step, int], index2: Mapping[Step, int],
           deleted_vars: set[str], before: int) -> str | None:
    """(H') for a Read u of P in a group R whose image t fails (H): None when
    u may be relaxed, else why not.  See "Moved Reads" in the module
    docstring."""
    r, phase = u
    if phase != ONE or acc[r][0] != READ or acc2.get(t[0], (None,))[0] != READ:
        return ""
    x = acc[r][1]
    if x in deleted_vars:
        return f"an Assign of {x!r} is deleted"
    for w2 in writes2.get(x, ()):
        if not (anc2[t] >> index2[w2] & 1 or anc2[w2] >> index2[t] & 1):
            return (f"(H') {''.join(w2)!r} and {t[0]!r} are not ordered in the rewrite")
    for w in writes.get(x, ()):
        w2 = step.get(w)
        if w2 is None:
            return f"(H') the write {''.join(w)!r} has no image"
        if anc2[t] >> index2[w2] & 1:
            if not anc[u] >> index[w] & 1:
                return (f"(H') the rewrite orders {''.join(w2)!r} before {t[0]!r}, "
                        f"the original does not order {''.join(w)!r} before {r!r}")
        elif anc[u] >> index[w] & 1:
            return (f"(H') the rewrite orders {t[0]!r} before {''.join(w2)!r}, "
                    f"the original orders {''.join(w)!r} before {r!r}")
        elif not anc[w] >> index[u] & 1 and before & ~anc2[w2]:
            # a race in P that P' decides (r first): every matched step before
            # r in P must be before the write in P'
            return (f"(H') the rewrite orders {t[0]!r} before {''.join(w2)!r} (unordered in "
                    f"the original) but not every step the original orders before {r!r}")
    return None


def _strict_in_value(fn: str) -> bool:
    f = fns.lookup(fn)
    return f is not None and f.n_in == 2 and f.n_out == 1 and 1 in f.strict()


def _fused_read(terms: _Terms, written: int, fn: str, value2: int, acc: Mapping, x: str,
                taken: set[str]) -> str | None:
    """The Read r of x such that `written` (the term a Write of P stores) is
    fn(read r, v) with v the term `value2` (what P' 's Assign-fn stores),
    fn strict in v; r not matched to a Read of P' and not fused already."""
    if not _strict_in_value(fn):
        return None
    _tick()
    for r, (kind, y, _f) in acc.items():
        if kind == READ and y == x and r not in taken:
            leaf = terms.table.get(("unmatched-read", r))
            if leaf is not None and terms.apply_up_to_error(fn, {}, (leaf, value2), 1)[0] == written:
                return r
    return None


def _split_read(terms: _Terms, written2: int, fn: str, value: int, acc2: Mapping, x: str,
                taken: set[str]) -> str | None:
    """The Read rr of x in P' such that `written2` (the term P' 's Write
    stores) is fn(read rr, v) with v the term `value` (what P's Assign-fn
    stores), fn strict in v; rr neither the image of a Read of P nor used
    by another split (`taken`)."""
    if not _strict_in_value(fn):
        return None
    _tick()
    for rr, (kind, y, _f) in acc2.items():
        if kind == READ and y == x and rr not in taken:
            leaf = terms.table.get(("read", rr))
            if leaf is not None and terms.apply_up_to_error(fn, {}, (leaf, value), 1)[0] == written2:
                return rr
    return None


__all__ = ["StructuralResult", "race_free", "structural_refinement"]
