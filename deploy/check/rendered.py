#!/usr/bin/env python3
"""What `kubectl apply -k deploy/k8s` would apply, rendered offline by `kubectl kustomize` and checked
(run by deploy/deploy-check.sh in its venv).

The files are checked one by one elsewhere; this reads what kustomize makes of them together:
- every manifest in the folder is rendered, once (none left out, none twice);
- every namespaced object lands in the kustomization's namespace;
- every container runs the image the kustomization names (`images:` newName and newTag), so an image
  name in a manifest that the `images:` entry does not match (it would deploy the bare name) fails;
- what a Service, a PodDisruptionBudget, a NetworkPolicy or a ScaledObject selects is a workload
  that is rendered (a selector that matches no pod's labels protects, exposes or scales nothing).
Usage: rendered.py DEPLOY_ROOT
"""
import pathlib
import shutil
import subprocess
import sys

import yaml

CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PriorityClass"}
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet"}


def render(folder):
    kubectl = shutil.which("kubectl")
    if not kubectl:
        raise SystemExit("kubectl is not installed (deploy-check installs Debian's kubernetes-client)")
    result = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise SystemExit(f"kubectl kustomize {folder} failed: {result.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def identity(doc):
    return (doc.get("kind"), doc.get("metadata", {}).get("name"))


def containers(doc):
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    return spec.get("containers", []) + spec.get("initContainers", [])


def main(root):
    folder = pathlib.Path(root) / "k8s"
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    namespace = kustomization.get("namespace")
    images = {i["name"]: f"{i.get('newName', i['name'])}:{i['newTag']}" for i in kustomization.get("images", [])}
    rendered = render(folder)
    problems = []

    files = {}
    for path in sorted(folder.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                files[identity(doc)] = path.name
    seen = {}
    for doc in rendered:
        seen[identity(doc)] = seen.get(identity(doc), 0) + 1
    for key, name in sorted(files.items(), key=lambda kv: kv[1]):
        if key not in seen:
            problems.append(f"{name}: {key[0]} {key[1]} is not rendered (missing from the kustomization's resources)")
    for key, count in seen.items():
        if count > 1:
            problems.append(f"{key[0]} {key[1]} is rendered {count} times")

    for doc in rendered:
        kind, name = identity(doc)
        if kind not in CLUSTER_SCOPED and doc.get("metadata", {}).get("namespace") != namespace:
            problems.append(f"{kind} {name} renders into namespace {doc.get('metadata', {}).get('namespace')!r}, not {namespace!r}")
        for container in containers(doc):
            if container.get("image") not in images.values():
                problems.append(f"{kind} {name}: container {container.get('name')} runs {container.get('image')!r}, "
                                f"not an image the kustomization names ({', '.join(sorted(images.values()))})")

    pod_labels = [doc["spec"]["template"]["metadata"].get("labels", {}) for doc in rendered
                  if doc.get("kind") in WORKLOADS]
    workloads = {doc["metadata"]["name"] for doc in rendered if doc.get("kind") in WORKLOADS}

    def selects_a_pod(selector):
        return any(all(labels.get(k) == v for k, v in selector.items()) for labels in pod_labels)

    for doc in rendered:
        kind, name = identity(doc)
        spec = doc.get("spec", {})
        if kind == "Service":
            selector = spec.get("selector", {})
        elif kind in ("PodDisruptionBudget",):
            selector = spec.get("selector", {}).get("matchLabels", {})
        elif kind == "NetworkPolicy":
            selector = spec.get("podSelector", {}).get("matchLabels", {})
        elif kind == "ScaledObject":
            target = spec.get("scaleTargetRef", {}).get("name")
            if target not in workloads:
                problems.append(f"ScaledObject {name} scales {target!r}, which is not rendered")
            continue
        else:
            continue
        if not selector or not selects_a_pod(selector):
            problems.append(f"{kind} {name} selects {selector}, which no rendered pod carries")

    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: rendered.py DEPLOY_ROOT")
    sys.exit(main(sys.argv[1]))
