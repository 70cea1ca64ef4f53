"""The check's scope keeps what the process held before it out of the cyclic
collector's sight (oracle/applications.py `scope`, `_freeze`): frozen when the
outermost scope starts, put back when it ends, left alone where the collector
is off or something froze objects of its own (`tfsem serve`)."""

from __future__ import annotations

import gc
import weakref

import pytest

from tfsem.oracle import applications


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    assert not gc.get_freeze_count(), "the test process froze objects before this test"
    gc.enable()
    try:
        yield
    finally:
        if gc.get_freeze_count():
            gc.unfreeze()
        (gc.enable if was else gc.disable)()


class _Cycle:
    def __init__(self):
        self.me = self


def test_the_outermost_scope_freezes_what_was_there_and_puts_it_back(collector_on):
    with applications.scope():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with applications.scope():          # nested: the outer one's freeze stands
            assert gc.get_freeze_count() == frozen
        assert gc.get_freeze_count() == frozen
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()


def test_a_cycle_dropped_inside_the_scope_is_collected_there(collector_on):
    with applications.scope():
        made = _Cycle()
        gone = weakref.ref(made)
        del made
        assert gone() is not None           # (a cycle: reference counts cannot free it)
        gc.collect()
        assert gone() is None               # made after the freeze: collected as before


def test_an_old_cycle_dropped_inside_waits_for_the_end_of_the_scope(collector_on):
    old = _Cycle()
    gone = weakref.ref(old)
    with applications.scope():
        del old
        gc.collect()
        assert gone() is not None           # frozen: not walked during the check
    gc.collect()
    assert gone() is None                   # put back: collected after it


def test_nothing_is_frozen_with_the_collector_off(collector_on):
    gc.disable()
    with applications.scope():
        assert gc.get_freeze_count() == 0
    assert not gc.isenabled()


def _frozen(obj) -> bool:
    """Whether `obj` (a tracked container) is in the permanent generation:
    gc.get_objects() lists every generation but that one."""
    return not any(o is obj for o in gc.get_objects())


def test_a_process_that_froze_its_own_objects_keeps_them_frozen(collector_on):
    ours = [[]]
    gc.freeze()
    mine = gc.get_freeze_count()
    later = [[]]            # made after the process's freeze: young
    with applications.scope():
        # (the count may fall, never rise: a frozen object dropped by its
        # count is freed -- the interpreter's own, at any moment)
        assert gc.get_freeze_count() <= mine
        assert _frozen(ours)
        assert not _frozen(later)           # the scope froze nothing more
    assert gc.get_freeze_count() <= mine
    assert _frozen(ours)                    # not thawed by the scope's end
