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


#: whether tfsem froze the process's objects itself (`freeze_for_check`,
#: the applications scope around a check): known without asking the
#: collector, whose count walks every frozen object (25 ms with
#: TensorFlow imported, paid by each confirmation's `gc_paused` inside a
#: check before this flag)
_frozen_here = False


def frozen() -> bool:
    """Whether any objects are frozen: by tfsem's own check scope (a flag),
    else by the process (`gc.get_freeze_count`, a walk, cheap when there
    are none)."""
    return _frozen_here or gc.get_freeze_count() > 0


def freeze_for_check() -> bool:
    """Freeze what the process holds (`gc.freeze()`) unless the collector is
    off or something is frozen already; whether it froze.  Undone by
    `unfreeze_for_check`."""
    global _frozen_here
    if not gc.isenabled() or frozen():
        return False
    gc.freeze()
    _frozen_here = True
    return True


def unfreeze_for_check() -> None:
    global _frozen_here
    _frozen_here = False
    gc.unfreeze()


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
            if not frozen():
                gc.freeze()
                gc.unfreeze()
            gc.enable()
