#!/usr/bin/env python3
"""Every metric the dashboard and the alert rules name is one hubcast exports.

The exported names are read from the sources: every `label: "hubcast_…"` given to a swift-metrics
Counter, Meter, Recorder or Timer (the Prometheus name is the label; timers listed in
PrometheusMetrics.histograms get the name given there), plus what Hummingbird's MetricsMiddleware
records for the backend. A query may add `_bucket`, `_sum` or `_count` to a histogram's name.
Usage: metric_names.py DEPLOY_DIR SOURCES_DIR
"""
import json
import pathlib
import re
import sys

import yaml

# Hummingbird's MetricsMiddleware (the backend's requests), as swift-prometheus names them.
HUMMINGBIRD = {"hb_requests", "hb_request_errors", "http_server_request_duration", "http_server_active_requests"}  # hb.requests, …
QUERY_NAME = re.compile(r"\b((?:hubcast|hb|http_server)_[a-z0-9_]+)\b")


def exported(sources):
    names, histograms = set(HUMMINGBIRD), {}
    for path in sources.rglob("*.swift"):
        text = path.read_text()
        names.update(re.findall(r'label:\s*"(hubcast_[a-z0-9_]+)"', text))
        names.update(re.findall(r'static let endToEndLabel = "(hubcast_[a-z0-9_]+)"', text))
        for label, name in re.findall(r'"(hubcast_[a-z0-9_]+)":\s*\(\s*"(hubcast_[a-z0-9_]+)"', text):
            histograms[label] = name
    for label, name in histograms.items():
        names.discard(label)
        names.add(name)
    return names, set(histograms.values()) | {"http_server_request_duration"}


def queries(root):
    dashboard = json.loads((root / "grafana" / "hubcast.json").read_text())
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield f"dashboard panel {panel['title']!r}", target["expr"]
    rules = yaml.safe_load((root / "prometheus" / "hubcast-alerts.yaml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            yield f"alert {rule['alert']}", rule["expr"]


def main():
    root, sources = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    names, histograms = exported(sources)
    failures = 0
    for where, expr in queries(root):
        for name in QUERY_NAME.findall(expr):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            if name in names or (base in histograms and base != name):
                continue
            print(f"metric-names: {where} names {name}, which hubcast does not export", file=sys.stderr)
            failures += 1
    print(f"metric-names: {len(names)} exported names; every query's names among them" if not failures else "")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
