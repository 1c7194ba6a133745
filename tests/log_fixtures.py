"""What the session log tests share: the paths of a log (read by its
owner, appended by the hub) and alice's allocated session to log to."""

from __future__ import annotations

import pytest


def logs_path(alloc_id: str, query: str = "") -> str:
    return f"allocations/{alloc_id}/logs{query}"


def internal_logs(alloc_id: str) -> str:
    return f"internal/allocations/{alloc_id}/logs"


@pytest.fixture
def alice_session(cluster):
    cluster.add_group("gpu", {"node-1": ()})
    return cluster.submit("alice", "ml", "gpu", slots={"cpu": "1"})["id"]
