#!/usr/bin/env python3
"""Strict offline validation of deploy/k8s (run by deploy/deploy-check.sh in its venv).

Every manifest the kustomization lists is validated strictly (unknown fields are errors) against the
Kubernetes version given: built-in kinds with kubernetes-validate's bundled schemas, KEDA's ScaledObject
with the schema of its vendored CRD. A kind without a schema is an error, not kubernetes-validate's
warning, and so is a manifest the kustomization does not list (or lists but is missing).
"""
import argparse
import copy
import pathlib
import sys

import jsonschema
import yaml
from kubernetes_validate import utils


def strict(schema):
    """The CRD's openAPIV3Schema as JSON Schema, with unknown fields rejected as the API server prunes them.

    Walks with an explicit stack: the CRD's nesting is bounded, but no recursion on input depth anyway.
    """
    root = copy.deepcopy(schema)
    stack = [root]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if node.pop("x-kubernetes-int-or-string", False):
            node.pop("type", None)
            node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        preserve = node.get("x-kubernetes-preserve-unknown-fields", False)
        if "properties" in node and "additionalProperties" not in node and not preserve:
            node["additionalProperties"] = False
        for key, value in node.items():
            if key in ("properties", "patternProperties"):
                stack.extend(value.values())
            elif key in ("items", "additionalProperties", "not"):
                stack.append(value)
            elif key in ("anyOf", "allOf", "oneOf"):
                stack.extend(value)
    return root


def crd_schemas(paths):
    """(apiVersion, kind) -> strict JSON Schema, from CustomResourceDefinition files."""
    schemas = {}
    for path in paths:
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for version in crd["spec"]["versions"]:
                schema = strict(version["schema"]["openAPIV3Schema"])
                # metadata is the API server's ObjectMeta; the CRD leaves it open, so check its core fields here.
                schema["properties"]["metadata"] = {
                    "type": "object",
                    "required": ["name"],
                    "properties": {"name": {"type": "string"}, "namespace": {"type": "string"},
                                   "labels": {"type": "object"}, "annotations": {"type": "object"}},
                    "additionalProperties": False,
                }
                schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata", "spec"})
                schemas[(f"{group}/{version['name']}", kind)] = schema
    return schemas


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory", type=pathlib.Path)
    parser.add_argument("--kubernetes-version", required=True)
    parser.add_argument("--crd", type=pathlib.Path, action="append", default=[])
    args = parser.parse_args()

    errors = []
    kustomization = yaml.safe_load((args.directory / "kustomization.yaml").read_text())
    listed = kustomization.get("resources", [])
    present = sorted(p.name for p in args.directory.glob("*.yaml") if p.name != "kustomization.yaml")
    for name in sorted(set(present) - set(listed)):
        errors.append(f"{name}: not listed in kustomization.yaml resources")
    for name in sorted(set(listed) - set(present)):
        errors.append(f"kustomization.yaml lists {name}, which does not exist")

    crds = crd_schemas(args.crd)
    checked = 0
    for name in listed:
        path = args.directory / name
        if not path.exists():
            continue
        for index, resource in enumerate(yaml.safe_load_all(path.read_text())):
            if resource is None:
                continue
            where = f"{name}[{index}] {resource.get('kind')}/{(resource.get('metadata') or {}).get('name')}"
            key = (resource.get("apiVersion"), resource.get("kind"))
            try:
                if key in crds:
                    jsonschema.Draft7Validator(crds[key]).validate(resource)
                else:
                    utils.validate(resource, args.kubernetes_version, strict=True)
                checked += 1
            except jsonschema.ValidationError as error:
                path_text = ".".join(str(p) for p in error.absolute_path)
                errors.append(f"{where}: {path_text}: {error.message}")
            except utils.SchemaNotFoundError as error:
                errors.append(f"{where}: no schema: {error.message}")
            except Exception as error:  # kubernetes-validate wraps schema errors in its own types
                errors.append(f"{where}: {getattr(error, 'message', error)}")

    for line in errors:
        print(f"k8s: {line}", file=sys.stderr)
    if errors:
        return 1
    print(f"k8s: {checked} manifests valid against Kubernetes {args.kubernetes_version} (strict)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
