"""HTML reports of checked rewrites and fuzzing campaigns (issue 8).

- `graph`: programs as inline SVG in the seed's notation, laid out in pure
  Python (layered drawing; no Graphviz needed);
- `finding`: one page per finding (`render_finding_page`): verdict, both
  programs with the rewrite's changes highlighted, σ, outcomes, and the
  breaking run step by step;
- `index`: the campaign's index page (`render_index`);
- `site`: writes a report folder (`write_report`);
- `html`: escaping, page shell, CSS;
- `examples`: a worked example (seed 002's load/store reordering) for
  previews and tests.

Every page is self-contained and loads nothing from a network.
"""

from .finding import render_finding_page
from .index import render_index
from .site import FindingPage, write_report

__all__ = ["FindingPage", "render_finding_page", "render_index", "write_report"]
