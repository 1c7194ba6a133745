"""authz.usage_scope for every kind of caller: whose usage each may read."""

from __future__ import annotations

import pytest

from quota_service.core.authz import Principal, usage_scope
from quota_service.core.models import Role


@pytest.mark.parametrize("principal,scope", [
    (Principal("root", Role.superadmin, "acme"), (None, None)),         # everyone's
    (Principal("ada", Role.domain_admin, "acme"), ("acme", None)),      # their domain's
    (Principal("gus", Role.domain_admin, "globex"), ("globex", None)),
    (Principal("alice", Role.user, "acme"), ("acme", "alice")),         # their own
    (Principal("alice", Role.user, "acme", credential="keypair", keypair="K"), ("acme", "alice")),
])
def test_each_caller_reads_the_usage_of_their_reach(principal, scope):
    assert usage_scope(principal) == scope
