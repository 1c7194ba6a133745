"""What the service tells an operator in the hub's output by default."""

from __future__ import annotations

import logging

from quota_service.app import HubgridService
from service_app import served  # noqa: F401


def test_the_service_logs_at_info_by_default():
    assert HubgridService().log_level == logging.INFO


async def test_a_refusal_is_one_info_line_naming_the_caller(served, caplog):  # noqa: F811
    with caplog.at_level(logging.INFO):
        resp, data = await served.call("POST", "domains", "alice", json_body={"name": "x"})
    assert resp.code == 403
    lines = [r.getMessage() for r in caplog.records
             if r.levelno == logging.INFO and r.getMessage().startswith("refused ")]
    assert lines == [f"refused POST {served.svc.api_prefix}domains for alice: 403 {data['message']}"]


async def test_a_refused_allocation_of_the_hub_names_the_hub(served, caplog):  # noqa: F811
    with caplog.at_level(logging.INFO):
        resp, _ = await served.call("POST", "internal/allocations", "internal",
                                    json_body={"user": "nobody-here", "project": "ml",
                                               "slots": {"cpu": "1"}})
    assert 400 <= resp.code < 500
    assert any(r.getMessage().startswith("refused POST") and "for the hub" in r.getMessage()
               for r in caplog.records)
