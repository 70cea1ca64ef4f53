"""Python's cyclic garbage collector paused for a stage that makes many
objects and no reference cycles (a graph's import, a counterexample's
replay on an array back end).

With the collector on, the stage's allocations set off collections that
walk the older generations again and again, and now and then every live
object, to find no garbage (a third of a 50,000-node import; 694
collections in the replays of the real corpus's 47 `unsound` checks).
Reference counting frees what the stage drops; a cycle made inside waits
until the collector is back on.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def gc_paused():
    """The collector off inside, on again after if it was on.

    When it ends, what was made inside is moved to the oldest generation
    (`gc.freeze()` then `gc.unfreeze()`, two list splices) instead of being
    left in the youngest: re-enabled, the collector would otherwise scan all
    of it at once, and again in the middle generation, to find no garbage
    (a tenth of a 50,000-node import; after the replay of MobileNetV2's
    first counterexample, 141,000 objects, 17-34 ms).  Full collections
    still visit it, as they visit every long-lived object.  Skipped where
    the process froze objects of its own (`tfsem serve` does): unfreezing
    would thaw them.  (Telling it counts them, `gc.get_freeze_count`
    walking the frozen objects: about 22 ns each, 1 ms for `tfsem serve`'s
    ~50,000.)  Another thread may turn the collector on again
    before this ends: then the rest of the stage runs as it did before."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()
