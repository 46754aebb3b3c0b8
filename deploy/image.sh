#!/usr/bin/env bash
# Builds and tests the container image offline, without a registry (CI and `make image`):
#   deploy/image.sh build   a bookworm base from debootstrap, then deploy/Dockerfile's runtime stage fed
#                           the hubcast binary built on this host (.build-image/release/hubcast)
#   deploy/image.sh test    `hubcast demo` inside that image; exits with the demo's status
# Podman, runc and debootstrap come from Debian and are installed here if missing (root or sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

image=${HUBCAST_IMAGE:-localhost/hubcast:latest}
base=localhost/hubcast-base:bookworm-minbase
work=.build-image
export CONTAINERS_CONF=$PWD/deploy/image/containers.conf

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "image: need root (or sudo) for podman and debootstrap" >&2; exit 1; }
  sudo="sudo --preserve-env=CONTAINERS_CONF"
fi

install_tools() {
  local missing=()
  for package in podman runc debootstrap; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return
  echo "image: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The Debian mirror this machine's apt already uses (deb822 or one-line sources), else the default one.
mirror() {
  local uri
  uri=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
        | grep -v security | sed -E 's/^URIs:[[:space:]]*//; s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?//' | awk '{print $1; exit}')
  echo "${uri:-http://deb.debian.org/debian}"
}

# Stands in for debian:bookworm-slim, which needs a registry: the same release, minimal variant.
build_base() {
  if $sudo podman image exists "$base"; then return; fi
  local rootfs=$work/rootfs
  $sudo rm -rf "$rootfs"
  echo "image: debootstrap --variant=minbase bookworm from $(mirror)"
  $sudo debootstrap --variant=minbase bookworm "$rootfs" "$(mirror)" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  # debootstrap writes the release alone; the updates and security suites come from this host's sources.
  if [ -f /etc/apt/sources.list.d/debian.sources ] && grep -q bookworm /etc/apt/sources.list.d/debian.sources; then
    $sudo rm -f "$rootfs/etc/apt/sources.list"
    $sudo cp /etc/apt/sources.list.d/debian.sources "$rootfs/etc/apt/sources.list.d/debian.sources"
  fi
  $sudo rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  $sudo tar -C "$rootfs" -c . | $sudo podman import --quiet - "$base" >/dev/null
  $sudo rm -rf "$rootfs"
}

build() {
  install_tools
  [ -x "$work/release/hubcast" ] || { echo "image: $work/release/hubcast missing; run make image" >&2; exit 1; }
  mkdir -p "$work/stage"
  # A plain file at a fixed path: the build context (.dockerignore) admits exactly this one.
  install -m 0755 "$work/release/hubcast" "$work/stage/hubcast"
  build_base
  $sudo podman build --network=host --format docker --pull=never \
    --target runtime-prebuilt \
    --build-arg RUNTIME_BASE="$base" \
    -f deploy/Dockerfile -t "$image" .
}

run_test() {
  install_tools
  $sudo podman image exists "$image" || { echo "image: $image missing; run make image" >&2; exit 1; }
  local user missing
  user=$($sudo podman run --rm --no-healthcheck --entrypoint id "$image" -u)
  [ "$user" != 0 ] || { echo "image: runs as root" >&2; exit 1; }
  # Every shared library the binary links is in the runtime stage (ldd prints "not found" otherwise).
  missing=$($sudo podman run --rm --no-healthcheck --entrypoint ldd "$image" /usr/local/bin/hubcast | grep "not found" || true)
  [ -z "$missing" ] || { echo "image: libraries missing: $missing" >&2; exit 1; }
  echo "image: runs as uid $user, all libraries present; hubcast demo in $image"
  # As a platform runs it: read-only root, only /tmp writable. The demo has no HTTP port, so no health check.
  $sudo podman run --rm --no-healthcheck --network=host --read-only --tmpfs /tmp "$image" demo --devices 2000
}

case "${1:-}" in
  build) build ;;
  test) run_test ;;
  *) echo "usage: deploy/image.sh build|test" >&2; exit 2 ;;
esac
