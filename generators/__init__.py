"""Program generators: the seeds' example families and random valid programs.

- `families`: parametrised programs from the seeds and the oracle benchmarks;
- `strategies`: Hypothesis strategies of valid programs and their inputs
  (`programs`, `inputs_for`), the seeded generator behind `tfsem generate`
  (`random_programs`, `random_inputs`), and race detection (`has_race`);
- `builder`: the one construction both run, written against `draw.Draw`;
- `races`: unordered conflicting accesses, lost updates;
- `stats`: summaries of a batch of programs (sizes, operation kinds, races).
"""
