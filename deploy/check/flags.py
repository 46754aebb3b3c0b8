#!/usr/bin/env python3
"""Every `hubcast` command and flag the deploy files use exists, as the binary's own --help says.

Reads the Kubernetes Deployments' args, Compose's hubcast services (command lists, the entrypoint,
and `hubcast …` lines inside shell commands), the systemd unit's ExecStart and the Dockerfile's CMD;
asks `BINARY <command> --help` for each command once. A misspelt flag would otherwise show only when
the platform starts the process (exit 2, a restart loop).
Usage: flags.py DEPLOY_DIR BINARY
"""
import pathlib
import re
import shlex
import subprocess
import sys

import yaml

COMMANDS = {"run", "replay", "demo", "send", "produce", "canary", "emulator", "dev-broker", "backend"}


def uses(root):
    """(where, command words, flags) for every hubcast invocation in the files."""
    for path in sorted((root / "k8s").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "Deployment":
                continue
            for container in doc["spec"]["template"]["spec"].get("containers", []):
                args = [str(a) for a in container.get("args", [])]
                if args:
                    yield f"{path.name} {container['name']}", args
    compose = yaml.safe_load((root / "compose.yaml").read_text())
    for name, service in compose["services"].items():
        if "hubcast" not in str(service.get("image", "")):
            continue
        entrypoint = [str(e) for e in (service.get("entrypoint") or [])]
        command = service.get("command")
        if isinstance(command, list) and entrypoint[:1] in (["hubcast"], []) and command and command[0] in COMMANDS:
            yield f"compose {name}", [str(c) for c in command]
        elif isinstance(command, list):
            for line in "\n".join(str(c) for c in command).splitlines():
                for match in re.finditer(r"\bhubcast ((?:" + "|".join(COMMANDS) + r")\b[^&|;>]*)", line):
                    yield f"compose {name}", shlex.split(match.group(1).replace("$$", "$"))
        if entrypoint[:1] == ["hubcast"] and len(entrypoint) > 1:
            yield f"compose {name} entrypoint", entrypoint[1:]
    for line in (root / "systemd" / "hubcast.service").read_text().splitlines():
        if line.startswith("ExecStart="):
            words = shlex.split(line.split("=", 1)[1])
            yield "systemd ExecStart", words[1:]
    for line in (root / "Dockerfile").read_text().splitlines():
        if line.startswith("CMD ["):
            yield "Dockerfile CMD", [w.strip(' "') for w in line[5:].rstrip("]").split(",")]


def help_flags(binary, words, cache):
    command = words[0]
    key = ("backend", "serve") if command == "backend" and (len(words) < 2 or words[1].startswith("-")) else tuple(words[:2] if command == "backend" else words[:1])
    if key not in cache:
        answer = subprocess.run([binary, *key, "--help"], capture_output=True, text=True)
        cache[key] = None if answer.returncode != 0 else set(re.findall(r"(?m)^  (?:-[a-z], )?(--[a-z0-9-]+)", answer.stdout))
    return key, cache[key]


def main():
    root, binary = pathlib.Path(sys.argv[1]), sys.argv[2]
    failures, cache, checked = 0, {}, 0
    for where, words in uses(root):
        if not words or words[0] not in COMMANDS:
            print(f"flags: {where}: `hubcast {' '.join(words[:1])}` is not a hubcast command", file=sys.stderr)
            failures += 1
            continue
        key, flags = help_flags(binary, words, cache)
        if flags is None:
            print(f"flags: {where}: `hubcast {' '.join(key)} --help` failed", file=sys.stderr)
            failures += 1
            continue
        for word in words[1:]:
            if not word.startswith("--"):
                continue
            checked += 1
            flag = word.split("=", 1)[0]
            if flag not in flags:
                print(f"flags: {where}: `hubcast {' '.join(key)}` has no {flag}", file=sys.stderr)
                failures += 1
    if not failures:
        print(f"flags: {checked} flags in the deploy files, each one its command's --help lists")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
