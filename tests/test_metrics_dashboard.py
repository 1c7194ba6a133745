"""The Grafana dashboard (deploy/grafana/hubgrid-dashboard.json) against the
real metrics: every metric its queries name, and every label they select
or group by, is in what a real service serves over a real ledger (the
ledger of tests/test_metrics.py). It needs no Kubernetes: its data source
is an import input, and no query names a Kubernetes label.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from quota_service.operations.passstats import timed
from service_app import served  # noqa: F401
from test_metrics import build

DASHBOARD = Path(__file__).resolve().parent.parent / "deploy" / "grafana" / "hubgrid-dashboard.json"
METRIC = re.compile(r"\b(hubgrid_[a-z0-9_]+)\b")
#: labels a Kubernetes scrape adds; the dashboard must work without them
K8S_LABELS = {"namespace", "pod", "container", "node", "service", "endpoint"}
PROMQL_WORDS = {"by", "on", "without", "ignoring", "group_left", "group_right"}


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def panels(d: dict) -> list[dict]:
    out = []
    for p in d["panels"]:
        out += [p] + p.get("panels", [])
    return out


def queries(d: dict) -> list[str]:
    exprs = [t["expr"] for p in panels(d) for t in p.get("targets", [])]
    exprs += [v["definition"] for v in d["templating"]["list"] if v["type"] == "query"]
    return exprs


def selected_labels(expr: str) -> dict[str, set[str]]:
    """metric -> the labels its selector names; "*" -> the labels grouped or matched on."""
    out: dict[str, set[str]] = {"*": set()}
    for metric, selector in re.findall(r"(hubgrid_[a-z0-9_]+)\s*\{([^}]*)\}", expr):
        out.setdefault(metric, set()).update(re.findall(r"([a-z_]+)\s*(?:=~|!~|!=|=)", selector))
    for group in re.findall(r"\b(?:by|on|without|ignoring)\s*\(([^)]*)\)", expr):
        out["*"].update(x.strip() for x in group.split(",") if x.strip())
    for metric, label in re.findall(r"label_values\((hubgrid_[a-z0-9_]+),\s*([a-z_]+)\)", expr):
        out.setdefault(metric, set()).add(label)
    return out


def test_the_dashboard_needs_no_kubernetes_and_takes_its_data_source_as_an_input():
    d = dashboard()
    assert [(i["name"], i["pluginId"]) for i in d["__inputs"]] == [("DS_PROMETHEUS", "prometheus")]
    for p in panels(d):
        if p["type"] != "row":
            assert p["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, p["title"]
            assert p["targets"], p["title"]
    for expr in queries(d):
        assert METRIC.search(expr), expr
        used = set().union(*selected_labels(expr).values())
        assert not used & K8S_LABELS, expr


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_every_metric_and_label_the_dashboard_queries_is_served(served, cluster):  # noqa: F811
    t = build(cluster)
    served.svc.clock = lambda: t["now"]
    timed(served.svc.pass_stats, "schedule", served.svc.schedule_now)()  # a service that ran
    resp, text = await served.call("GET", "metrics", "root")
    assert resp.code == 200, text
    served_labels: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            served_labels.setdefault(sample.name, set()).update(sample.labels)
    missing = []
    for expr in queries(dashboard()):
        names = set(METRIC.findall(expr))
        missing += [f"{n} ({expr})" for n in names if n not in served_labels]
        labels = selected_labels(expr)
        for metric, used in labels.items():
            if metric != "*" and metric in served_labels:
                missing += [f"{metric}{{{x}}}" for x in used - served_labels[metric]]
        offered = set().union(*(served_labels.get(n, set()) for n in names))
        missing += [f"by/on ({x}) in {expr}" for x in labels["*"] - offered - PROMQL_WORDS]
    assert missing == []
    # and it reads every family of the endpoint but the per-user ones
    queried = {n for expr in queries(dashboard()) for n in METRIC.findall(expr)}
    unused = {n for n in served_labels if not n.startswith("hubgrid_user_")} - queried
    assert unused <= {"hubgrid_reclaim_events_created", "hubgrid_gpu_share_seconds_created"}
