#!/usr/bin/env python3
"""Rules the platform files must keep together, read as an operator applying them would meet them.

- Stop deadlines: on SIGTERM `hubcast run` drains for at most its drain timeout, then commits and leaves
  the group; the platform kills it at its own deadline (Kubernetes terminationGracePeriodSeconds, compose
  stop_grace_period, systemd TimeoutStopSec). A deadline at or below the drain timeout cuts the drain
  short. In systemd the drain is on the command line: the env file would override an Environment= line.
- Evictions: every PodDisruptionBudget lets unready pods go (unhealthyPodEvictionPolicy: AlwaysAllow),
  or a drain waits for as long as a pod stays unready.
- KEDA: broker names are fully qualified (<pod>.<service>.<namespace>.svc…): the scaler resolves them
  from KEDA's namespace.
- Compose: Kafka's data directory (KAFKA_LOG_DIRS) is on a volume; every backend names a users file it
  mounts.
- systemd: no secret in an Environment= line.
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
        if line.startswith("ExecStart="):
            match = re.search(r"--drain-timeout[= ](\d+)", line)
            drain = int(match.group(1)) if match else None
        elif line.startswith("TimeoutStopSec="):
            stop = seconds(line.split("=", 1)[1])
    return "systemd TimeoutStopSec (drain from ExecStart's --drain-timeout)", drain, stop


def environment(service):
    """A compose service's environment, in either of its two forms."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(str(e).split("=", 1) if "=" in str(e) else (str(e), "") for e in env)
    return {k: str(v) for k, v in env.items()}


def k8s_docs(root):
    for path in sorted((root / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                yield path.name, doc


# The commands that serve /healthz, /readyz and /metrics on --http-port (docs/configuration.md's
# `http-port` row, which the tests hold to every command's --help).
HTTP_PORT_COMMANDS = {"run", "backend", "emulator"}


def k8s_probe_ports(root, name, doc, settings):
    """Every probe of a Deployment's containers aims at a port the container's command opens."""
    for container in doc["spec"]["template"]["spec"].get("containers", []):
        args = [str(a) for a in container.get("args", [])]
        command = args[0] if args else "run"
        flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
        env = dict(settings) if container.get("envFrom") else {}
        env.update({e["name"]: str(e.get("value")) for e in container.get("env", []) if "value" in e})
        opened = {}
        if "port" in flags or command == "backend":
            opened["api"] = int(flags.get("port", 8080))
        http_port = flags.get("http-port", env.get("HUBCAST_HTTP_PORT"))
        # A port bound to loopback is opened for nobody the kubelet is.
        http_host = flags.get("http-host", env.get("HUBCAST_HTTP_HOST", "127.0.0.1"))
        if http_port and command in HTTP_PORT_COMMANDS and http_host not in ("127.0.0.1", "::1", "localhost"):
            opened["http"] = int(http_port)
        ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
        for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
            probe = container.get(kind, {}).get("httpGet")
            if not probe:
                continue
            port = ports.get(probe["port"], probe["port"])
            yield (f"{name} {container['name']} {kind} on {port}",
                   None if port in opened.values() else f"is not a port `hubcast {command}` opens here ({opened or 'none'})")


def rules(root):
    """(rule, problem or None) for every rule that reads the files together."""
    settings = {}
    for _, doc in k8s_docs(root):
        if doc.get("kind") == "ConfigMap":
            settings.update({k: str(v) for k, v in doc.get("data", {}).items()})
    for name, doc in k8s_docs(root):
        if doc.get("kind") == "Deployment":
            yield from k8s_probe_ports(root, name, doc, settings)
        if doc.get("kind") == "PodDisruptionBudget":
            policy = doc["spec"].get("unhealthyPodEvictionPolicy")
            yield (f"{name}: unhealthyPodEvictionPolicy",
                   None if policy == "AlwaysAllow" else f"is {policy!r}: an unready pod blocks `kubectl drain`")
        if doc.get("kind") == "ScaledObject":
            for trigger in doc["spec"].get("triggers", []):
                servers = trigger.get("metadata", {}).get("bootstrapServers") if trigger.get("type") == "kafka" else None
                for host in (servers.split(",") if servers else []):
                    name_only = host.strip().rsplit(":", 1)[0]
                    qualified = ".svc" in name_only or re.fullmatch(r"[\d.]+", name_only) or name_only.count(".") >= 3
                    yield (f"{name}: bootstrapServers {name_only}",
                           None if qualified else "is not fully qualified: KEDA resolves it from its own namespace")
    compose_doc = yaml.safe_load((root / "compose.yaml").read_text())
    services = compose_doc["services"]
    kafka = services.get("kafka", {})
    log_dirs = environment(kafka).get("KAFKA_LOG_DIRS", "")
    mounts = [v["target"] if isinstance(v, dict) else str(v).split(":")[1] for v in kafka.get("volumes", [])
              if isinstance(v, dict) or ":" in str(v)]
    on_volume = any(d == m or d.startswith(m.rstrip("/") + "/") for d in log_dirs.split(",") if d for m in mounts)
    yield ("compose kafka: KAFKA_LOG_DIRS on a volume", None if on_volume else f"{log_dirs or 'unset'} is not under {mounts}")
    for service_name, service in services.items():
        command = service.get("command") or []
        command = command.split() if isinstance(command, str) else [str(c) for c in command]
        if command[:1] == ["backend"]:
            users = [c.split("=", 1)[1] for c in command if c.startswith("--users-file=")] or \
                [environment(service)["HUBCAST_USERS_FILE"]] * ("HUBCAST_USERS_FILE" in environment(service))
            secrets = []
            for entry in service.get("secrets", []):
                target = entry if isinstance(entry, str) else entry.get("target", entry.get("source"))
                secrets.append(target if target.startswith("/") else "/run/secrets/" + target)
            yield (f"compose {service_name}: users file",
                   None if users and users[0] in secrets else "no --users-file it mounts: the backend exits 2, nobody could log in")
    for line in (root / "systemd" / "hubcast.service").read_text().splitlines():
        if line.startswith("Environment=") and re.search(r"CONNECTION_STRING|PASSWORD|SECRET|://[^/@\s]+:[^/@\s]+@", line):
            yield ("systemd: secrets", f"{line.split('=', 2)[1]} is set in the environment: use LoadCredential=")


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
    for rule, problem in rules(root):
        if problem:
            print(f"consistency: {rule} {problem}", file=sys.stderr)
            failures += 1
        else:
            print(f"consistency: {rule} ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
