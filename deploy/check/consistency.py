#!/usr/bin/env python3
"""The timing rule every platform file must keep: the stop deadline exceeds the drain timeout.

On SIGTERM `hubcast run` drains for at most HUBCAST_DRAIN_TIMEOUT seconds, then commits and leaves the
group; the platform kills it at its own deadline (Kubernetes terminationGracePeriodSeconds, compose
stop_grace_period, systemd TimeoutStopSec). A deadline at or below the drain timeout cuts the drain
short, and what was in flight is sent again after the rebalance.
"""
import pathlib
import re
import sys

import yaml

MARGIN = 5  # seconds for the final commit and the group leave after the drain


def seconds(text):
    """Compose/systemd durations as used here: 45, 45s, 1m30s."""
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s?)?", str(text).strip())
    if not match or not any(match.groups()):
        raise ValueError(f"unreadable duration {text!r}")
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


def k8s(root):
    drain = grace = None
    for path in sorted((root / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc:
                continue
            if doc.get("kind") == "ConfigMap" and "HUBCAST_DRAIN_TIMEOUT" in doc.get("data", {}):
                drain = int(doc["data"]["HUBCAST_DRAIN_TIMEOUT"])
            if doc.get("kind") == "Deployment" and doc["metadata"]["name"] == "hubcast-run":
                grace = doc["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30)
    return "k8s hubcast-run terminationGracePeriodSeconds", drain, grace


def compose(root):
    doc = yaml.safe_load((root / "compose.yaml").read_text())
    run = doc["services"]["run"]
    return ("compose run stop_grace_period", int(run["environment"]["HUBCAST_DRAIN_TIMEOUT"]),
            seconds(run.get("stop_grace_period", "10s")))


def systemd(root):
    drain = stop = None
    for line in (root / "systemd" / "hubcast.service").read_text().splitlines():
        if line.startswith("Environment=HUBCAST_DRAIN_TIMEOUT="):
            drain = int(line.split("=", 2)[2])
        elif line.startswith("TimeoutStopSec="):
            stop = seconds(line.split("=", 1)[1])
    return "systemd TimeoutStopSec", drain, stop


def main():
    root = pathlib.Path(sys.argv[1])
    failures = 0
    for what, drain, deadline in (k8s(root), compose(root), systemd(root)):
        if drain is None or deadline is None:
            print(f"consistency: {what}: drain timeout or deadline not found", file=sys.stderr)
            failures += 1
        elif deadline < drain + MARGIN:
            print(f"consistency: {what} is {deadline} s, not above the drain timeout ({drain} s) + {MARGIN} s",
                  file=sys.stderr)
            failures += 1
        else:
            print(f"consistency: {what} {deadline} s > drain {drain} s + {MARGIN} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
