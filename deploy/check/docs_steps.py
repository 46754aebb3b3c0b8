#!/usr/bin/env python3
"""The deploy guide's steps against the files they deploy: run in the order written, they work.

Reads docs/deploy.md (next to the deploy/ folder given) and checks, per platform:
- Kubernetes: the namespace the kustomization puts everything in is created before any Secret is
  created in it, every Secret the steps create is one a manifest mounts or reads, with the keys the
  manifests use, every Secret a manifest needs is created by the steps, and `kubectl apply -k`
  comes after the Secrets;
- Compose: the image the guide builds is the image compose.yaml runs by default;
- Compose: every secret file compose.yaml reads is one the guide says how to make;
- systemd: the guide installs the unit where systemd reads it, and the env file and credentials the unit reads.
Usage: docs_steps.py DEPLOY_DIR
"""
import pathlib
import re
import shlex
import sys

import yaml


def shell_blocks(markdown, heading):
    """The ```sh blocks under one '## heading' (up to the next '## '), as lists of command lines."""
    blocks, in_section, block = [], False, None
    for line in markdown.splitlines():
        if block is None and line.startswith("## "):
            in_section = line == heading
            continue
        if not in_section:
            continue
        if block is not None:
            if line == "```":
                blocks.append(block)
                block = None
            else:
                block.append(line)
        elif line == "```sh":
            block = []
    joined = []
    for block in blocks:
        text = "\n".join(block).replace("\\\n", " ")
        joined.append([line.split(" #")[0].strip() for line in text.splitlines() if line.strip()])
    return joined


def k8s_needs(root):
    """The namespace, and each Secret name the manifests use with the keys they read from it."""
    kustomization = yaml.safe_load((root / "k8s" / "kustomization.yaml").read_text())
    namespace = kustomization["namespace"]
    needs = {}
    for name in kustomization["resources"]:
        for doc in yaml.safe_load_all((root / "k8s" / name).read_text()):
            if not doc or doc.get("kind") != "Deployment":
                continue
            pod = doc["spec"]["template"]["spec"]
            for volume in pod.get("volumes", []):
                secret = volume.get("secret")
                if secret:
                    needs.setdefault(secret["secretName"], set()).update(item["key"] for item in secret.get("items", []))
            for container in pod.get("containers", []):
                for env in container.get("env", []):
                    ref = env.get("valueFrom", {}).get("secretKeyRef")
                    if ref:
                        needs.setdefault(ref["name"], set()).add(ref["key"])
    return namespace, needs


def check_k8s(root, guide, problems):
    namespace, needs = k8s_needs(root)
    commands = [line for block in shell_blocks(guide, "## Kubernetes") for line in block]
    if not commands:
        problems.append("docs/deploy.md: no ```sh steps under '## Kubernetes'")
        return
    namespace_at = apply_at = None
    created = {}
    for index, line in enumerate(commands):
        words = shlex.split(line)
        if not words or words[0] != "kubectl":
            continue
        if words[:3] == ["kubectl", "apply", "-f"] and words[3].endswith("namespace.yaml"):
            namespace_at = index
        elif words[:3] == ["kubectl", "create", "namespace"] and words[3] == namespace:
            namespace_at = index
        elif words[:3] == ["kubectl", "apply", "-k"]:
            apply_at = index
        elif "secret" in words and "create" in words:
            ns = words[words.index("-n") + 1] if "-n" in words else "default"
            name = words[words.index("generic") + 1]
            keys = {re.split("=", word.split("=", 1)[1], maxsplit=1)[0]
                    for word in words if word.startswith(("--from-file=", "--from-literal="))}
            created[name] = keys
            if ns != namespace:
                problems.append(f"docs/deploy.md: Secret {name} is created in namespace {ns}, the manifests are in {namespace}")
            if namespace_at is None or namespace_at > index:
                problems.append(f"docs/deploy.md: Secret {name} is created before its namespace {namespace} exists")
            if apply_at is not None and apply_at < index:
                problems.append(f"docs/deploy.md: Secret {name} is created after `kubectl apply -k`, which needs it")
    if apply_at is None:
        problems.append("docs/deploy.md: the Kubernetes steps never run `kubectl apply -k`")
    for name, keys in needs.items():
        if name not in created:
            problems.append(f"docs/deploy.md: the manifests need Secret {name}, which the steps do not create")
        elif not keys <= created[name]:
            problems.append(f"docs/deploy.md: Secret {name} lacks the keys {sorted(keys - created[name])} the manifests read")
    for name in created.keys() - needs.keys():
        problems.append(f"docs/deploy.md: the steps create Secret {name}, which no manifest uses")


def check_compose(root, guide, problems):
    compose = yaml.safe_load((root / "compose.yaml").read_text())
    images = {str(service.get("image", "")) for service in compose["services"].values()}
    runs = {match.group(1) for image in images for match in [re.fullmatch(r"\$\{HUBCAST_IMAGE:-([^}]+)\}", image)] if match}
    built = {match.group(1) for match in re.finditer(r"docker build [^\n]*-t (\S+)", guide)}
    if len(runs) != 1:
        problems.append(f"compose.yaml: expected one default hubcast image, found {sorted(runs)}")
    elif not built or built != runs:
        problems.append(f"docs/deploy.md: builds {sorted(built)}, compose.yaml runs {sorted(runs)}")
    for name, secret in (compose.get("secrets") or {}).items():
        if not secret.get("file"):
            continue  # from the environment or external: nothing for the guide to make
        path = "deploy/" + str(secret["file"]).removeprefix("./")
        if path not in guide:
            problems.append(f"compose.yaml: the secret {name} is read from {path}, which docs/deploy.md never says how to make")


def check_systemd(root, guide, problems):
    unit = (root / "systemd" / "hubcast.service").read_text()
    env_files = {line.split("=", 1)[1].lstrip("-") for line in unit.splitlines() if line.startswith("EnvironmentFile=")}
    # LoadCredential=ID:PATH names a file to make; LoadCredential=ID alone reads systemd's credential store.
    credentials = {line.split("=", 1)[1].split(":", 1)[1] for line in unit.splitlines()
                   if line.startswith("LoadCredential=") and ":" in line.split("=", 1)[1]}
    for env_file in sorted(env_files | credentials):
        if env_file not in unit.split("[Unit]")[0] and env_file not in guide:
            problems.append(f"systemd: the unit reads {env_file}, which neither its install steps nor docs/deploy.md create")
    if "/etc/systemd/system/" not in unit.split("[Unit]")[0]:
        problems.append("systemd: the unit's install steps do not put it in /etc/systemd/system/")


def main():
    root = pathlib.Path(sys.argv[1])
    guide = (root.parent / "docs" / "deploy.md").read_text()
    problems = []
    check_k8s(root, guide, problems)
    check_compose(root, guide, problems)
    check_systemd(root, guide, problems)
    for problem in problems:
        print(f"docs-steps: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print("docs-steps: the deploy guide's steps match the files, in an order that works")


if __name__ == "__main__":
    main()
