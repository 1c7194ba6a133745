"""The service's garbage collector settings (quota_service/runtime/collector.py)."""

from __future__ import annotations

import gc

import pytest
from traitlets import TraitError

from quota_service.runtime import collector


@pytest.fixture
def restored():
    """Python's thresholds and nothing frozen again after the test."""
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


def test_settle_freezes_what_is_held_and_spaces_young_collections(restored):
    gc.unfreeze()
    held = [[i] for i in range(1000)]  # container objects the "service" keeps
    assert collector.settle(5000) == (5000, *collector.OLDER)
    assert gc.get_threshold() == (5000, *collector.OLDER)
    assert gc.get_freeze_count() >= len(held)
    # frozen objects are never walked again: a full collection leaves them frozen
    gc.collect()
    assert gc.get_freeze_count() >= len(held)


def test_zero_leaves_pythons_collector_alone(restored):
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    assert collector.settle(0) == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_the_setting_is_checked_at_configuration():
    from quota_service.app import HubgridService

    svc = HubgridService()
    assert svc.gc_young_threshold == 20000
    svc.gc_young_threshold = 0
    with pytest.raises(TraitError, match="gc_young_threshold -1: from 0 to 1000000"):
        svc.gc_young_threshold = -1
    with pytest.raises(TraitError, match="from 0 to 1000000"):
        svc.gc_young_threshold = 2_000_000
