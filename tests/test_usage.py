"""What a domain's levels hold, summed from columns (on SQLite and PostgreSQL)."""

from __future__ import annotations

from decimal import Decimal

from quota_service.scheduling import holdings as usage


def test_a_queue_of_same_sized_requests_adds_up_per_user_project_and_domain(cluster):
    cluster.add_group("solo", {"solo-1": ()}, cpu="2")
    cluster.join("bob", "acme", "web")
    running = cluster.submit("alice", "ml", "solo", slots={"cpu": "1.5", "mem": "1G"})
    waiting = [cluster.submit("alice", "ml", "solo", slots={"cpu": "1.5", "mem": "1G"})
               for _ in range(3)]
    bobs = cluster.submit("bob", "web", "solo", slots={"cpu": "0.5"})
    assert {w["state"] for w in waiting} == {"pending"}
    alice, bob = cluster.user_id("alice"), cluster.user_id("bob")
    with cluster.world.session_factory() as s:
        acme = s.get(usage.Allocation, running["id"]).domain_id
        bob_project = s.get(usage.Allocation, bobs["id"]).project_id
        held = usage.domain_usage(s, acme)
        mine = held[("user", alice)]
        assert (mine.used, mine.sessions) == ({"cpu": Decimal("1.5"), "mem": Decimal(2**30)}, 1)
        assert (mine.pending, mine.pending_sessions) == (
            {"cpu": Decimal("4.5"), "mem": Decimal(3 * 2**30)}, 3)
        domain = held[("domain", acme)]  # bob's waits behind alice's (head of line)
        assert (domain.used["cpu"], domain.sessions) == (Decimal("1.5"), 1)
        assert (domain.pending["cpu"], domain.pending_sessions) == (Decimal("5.0"), 4)
        assert held[("user", bob)].pending == held[("project", bob_project)].pending == {
            "cpu": Decimal("0.5")}
        # one request left out (the one being judged)
        less = usage.domain_usage(s, acme, exclude=waiting[0]["id"])[("user", alice)]
        assert (less.pending["cpu"], less.pending_sessions) == (Decimal("3.0"), 2)
        assert mine.usage(minus={"cpu": Decimal("1.5")}).pending_sessions == 2
