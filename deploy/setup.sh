#!/usr/bin/env bash
# Installs the Debian packages hubcast builds and tests with, only those missing.
# Safe to run again; runs `apt-get update` at most once, and only when something is missing.
set -euo pipefail

packages=(
  librdkafka-dev        # Kafka client (and its mock cluster, for dev-broker)
  libcurl4-openssl-dev  # HTTP transport to Notification Hubs
  libssl-dev            # HMAC-SHA256 for SAS tokens
  pkg-config            # how SwiftPM finds the three above
  kcat                  # interop tests: an ordinary Kafka tool against dev-broker
  python3-jsonschema    # tests: a standard JSON Schema validator checks schemas/ against the fixtures
  nginx-light           # tests and benchmarks: a TLS server and a `return 201` sink on loopback
  openssl               # tests: a self-signed certificate for that TLS server
  curl                  # tests: raw HTTP against the emulator
  postgresql            # tests: the backend's PostgreSQL store, a server the tests start on loopback
  iproute2              # tests: the README's steps run in a network namespace of their own (ip link)
  util-linux            # tests: unshare, for that namespace
  libxml2               # tests: Foundation's XMLParser reads the emulator's Atom as a client library would
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all system packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
