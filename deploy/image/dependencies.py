#!/usr/bin/env python3
"""Every Swift package the build resolved, transitive ones included, as `name@version,…` (sorted): the
image's `dev.hubcast.dependencies` label. Reads `swift package show-dependencies --format json` on stdin."""
import json
import sys

pending, resolved = list(json.load(sys.stdin)["dependencies"]), {}
while pending:
    package = pending.pop()
    resolved[package["identity"]] = package["version"]
    pending += package["dependencies"]
print(",".join(f"{name}@{version}" for name, version in sorted(resolved.items())))
