#!/usr/bin/env bash
# Builds and tests the container image offline, without a registry (CI and `make image`):
#   deploy/image.sh build   a bookworm base from debootstrap, then deploy/Dockerfile's runtime stage fed
#                           the hubcast binary built on this host (.build-image/release/hubcast)
#   deploy/image.sh test    `hubcast demo` inside that image (exits with the demo's status), the HEALTHCHECK, and
#                           a smoke of run and the backend checked from outside the containers
# HUBCAST_IMAGE names the image (default localhost/hubcast:latest); HUBCAST_BINARY packages another build.
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
  # HUBCAST_BINARY: another build to package (it must be linked with --static-swift-stdlib on bookworm).
  local binary=${HUBCAST_BINARY:-$work/release/hubcast}
  [ -x "$binary" ] || { echo "image: $binary missing; run make image" >&2; exit 1; }
  mkdir -p "$work/stage"
  # A plain file at a fixed path: the build context (.dockerignore) admits exactly this one.
  install -m 0755 "$binary" "$work/stage/hubcast"
  build_base
  # What the binary was built from: the commit, and every Swift package at its resolved version
  # (Package.resolved is not committed; Package.swift pins the direct ones exactly).
  local dependencies
  dependencies=$(swift package --scratch-path "$work" show-dependencies --format json 2>/dev/null | python3 deploy/image/dependencies.py)
  $sudo podman build --network=host --format docker --pull=never \
    --target runtime-prebuilt \
    --build-arg RUNTIME_BASE="$base" \
    --label "org.opencontainers.image.revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)" \
    --label "dev.hubcast.dependencies=$dependencies" \
    -f deploy/Dockerfile -t "$image" .
}

# The image's HEALTHCHECK against a real `hubcast run` (dev broker in a second container; the hub check is
# skipped, /healthz only says the poll loop turns). Needs the --http-port that serves /healthz.
health_test() {
  local help
  help=$($sudo podman run --rm --no-healthcheck "$image" run --help)
  if ! grep -q -- '--http-port' <<<"$help"; then
    echo "image: HEALTHCHECK NOT EXERCISED: this hubcast has no --http-port (no /healthz) yet" >&2
    return
  fi
  local name=hubcast-image-test-$$ broker port
  # Expanded now (the locals are gone when a RETURN trap fires later) and cleared after it ran once.
  # shellcheck disable=SC2064
  trap "$sudo podman rm -f '$name-broker' '$name-run' >/dev/null 2>&1 || true; trap - RETURN" RETURN
  $sudo podman run -d --no-healthcheck --network=host --read-only --name "$name-broker" "$image" dev-broker --port 0 >/dev/null
  # The broker prints its address first; read that line and leave `logs -f` to end with the container.
  read -r broker < <(timeout 60 $sudo podman logs -f "$name-broker" 2>/dev/null) || true
  [ -n "$broker" ] || { echo "image: the dev broker did not start" >&2; exit 1; }
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # --health-interval=disable: no systemd timer (there is no systemd here); `healthcheck run` probes on demand.
  $sudo podman run -d --health-interval=disable --network=host --read-only --tmpfs /tmp --name "$name-run" \
    -e HUBCAST_HTTP_PORT="$port" -e HUBCAST_HUB=hubcast \
    -e HUBCAST_CONNECTION_STRING='Endpoint=sb://127.0.0.1:9/;SharedAccessKeyName=k;SharedAccessKey=a2V5;UseDevelopmentEmulator=true' \
    "$image" run --brokers "$broker" --skip-hub-check --dlq file:/tmp/dlq.jsonl >/dev/null 2>"$work/podman-run.log" \
    || { cat "$work/podman-run.log" >&2; exit 1; }
  # Each attempt is the image's own health probe; the deadline is a guard, not a timing assumption.
  local deadline=$((SECONDS + 60))
  until $sudo podman healthcheck run "$name-run" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      $sudo podman logs "$name-run" 2>&1 | tail -20 >&2
      echo "image: HEALTHCHECK never passed for hubcast run" >&2
      exit 1
    fi
    sleep 1
  done
  echo "image: HEALTHCHECK passes for hubcast run (/healthz on port $port)"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# GETs a URL until its status is $2 (each answer is the event; 90 s is a guard), then prints the body.
wait_for_status() {
  local url=$1 want=$2 deadline=$((SECONDS + 90)) status
  while true; do
    status=$(curl -s -o "$work/answer" -w '%{http_code}' "${@:3}" "$url" || true)
    [ "$status" = "$want" ] && { cat "$work/answer"; return 0; }
    [ $SECONDS -lt $deadline ] || { echo "image: $url answered $status, not $want: $(cat "$work/answer" 2>/dev/null)" >&2; return 1; }
    sleep 0.5
  done
}

# The image as a platform runs it, checked from outside the containers (on loopback, as every test
# here): a `run` member without a partition is ready; the backend's operations port answers /readyz
# and /metrics; behind a trusted proxy, failed logins count per forwarded client, so one guesser does
# not lock out the others; Basic over plain http is taken from a proxy only when it is trusted and
# says https. (The untrusted proxy is 127.0.0.2: test traffic stays on loopback, and a loopback
# request that relays someone, with X-Forwarded-*, is a proxy's like any other.)
operations_smoke() {
  local name=hubcast-image-smoke-$$ broker a b api ops ready
  # shellcheck disable=SC2064
  trap "$sudo podman rm -f '$name-broker' '$name-a' '$name-b' '$name-backend' >/dev/null 2>&1 || true; trap - RETURN" RETURN
  $sudo podman run -d --no-healthcheck --network=host --read-only --name "$name-broker" "$image" dev-broker --port 0 --partitions 1 >/dev/null
  read -r broker < <(timeout 60 $sudo podman logs -f "$name-broker" 2>/dev/null) || true
  [ -n "$broker" ] || { echo "image: the dev broker did not start" >&2; exit 1; }
  local hub='Endpoint=sb://127.0.0.1:9/;SharedAccessKeyName=k;SharedAccessKey=a2V5;UseDevelopmentEmulator=true'
  # Two members of one group for one partition: one of them has none, as a rollout's surge pod.
  a=$(free_port); b=$(free_port)
  for member in "a:$a" "b:$b"; do
    $sudo podman run -d --no-healthcheck --network=host --read-only --tmpfs /tmp --name "$name-${member%%:*}" \
      -e HUBCAST_HTTP_PORT="${member#*:}" -e HUBCAST_HUB=hubcast -e HUBCAST_CONNECTION_STRING="$hub" \
      "$image" run --brokers "$broker" --skip-hub-check --categories World --dlq file:/tmp/dlq.jsonl >/dev/null
  done
  local deadline=$((SECONDS + 90)) idle=""
  until [ -n "$idle" ]; do
    for port in "$a" "$b"; do
      ready=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$port/readyz" || true)
      if grep -q '"detail":"none assigned' <<<"$ready"; then idle="$ready"; fi
    done
    [ -n "$idle" ] || [ $SECONDS -lt $deadline ] || { echo "image: no member ever stood without a partition" >&2; exit 1; }
    [ -n "$idle" ] || sleep 0.5
  done
  [ "${idle##* }" = 200 ] || { echo "image: a member without a partition is not ready: $idle" >&2; exit 1; }
  echo "image: a run member without a partition answers /readyz 200"

  # The backend behind a "proxy" at 127.0.0.1: its users file made in the container (the password
  # on stdin), three failed logins allowed per address.
  api=$(free_port); ops=$(free_port)
  $sudo podman run -d --no-healthcheck --network=host --read-only --tmpfs /tmp --name "$name-backend" \
    -e HUBCAST_CONNECTION_STRING="$hub" --entrypoint bash "$image" -c \
    "printf 'alice-secret-pw\n' | hubcast backend add-user --users-file /tmp/users --name alice --cost 4 >/dev/null && \
     exec hubcast backend --host 127.0.0.1 --port $api --http-port $ops --brokers $broker --hub hubcast \
     --users-file /tmp/users --store /tmp/backend.sqlite --no-consumer --trusted-proxies 127.0.0.1 \
     --max-failed-logins-per-address 3" >/dev/null
  wait_for_status "http://127.0.0.1:$ops/readyz" 200 >/dev/null || exit 1
  local guesser=(-H 'X-Forwarded-For: 203.0.113.9' -H 'X-Forwarded-Proto: https') n
  local url="http://127.0.0.1:$api/api/notifications/1"
  for n in 1 2 3; do wait_for_status "$url" 401 -u "nobody$n:wrong" "${guesser[@]}" >/dev/null || exit 1; done
  wait_for_status "$url" 429 -u alice:alice-secret-pw "${guesser[@]}" >/dev/null || exit 1
  # Another client behind the same proxy is not locked out (404: authenticated, no item 1).
  wait_for_status "$url" 404 -u alice:alice-secret-pw -H 'X-Forwarded-For: 198.51.100.20' \
    -H 'X-Forwarded-Proto: https' >/dev/null || exit 1
  wait_for_status "http://127.0.0.1:$ops/metrics" 200 | grep -q 'hubcast_backend_login_failures 3' \
    || { echo "image: the backend's /metrics lacks its failed logins" >&2; exit 1; }
  # The trusted proxy relaying a plain-http client, and an untrusted one (127.0.0.2) claiming https:
  # both refused; the latter's own request (nothing relayed) is a loopback client's.
  local relayed=(-u alice:alice-secret-pw -H 'X-Forwarded-For: 198.51.100.20')
  wait_for_status "$url" 401 "${relayed[@]}" -H 'X-Forwarded-Proto: http' | grep -q 'only over TLS' \
    || { echo "image: Basic was taken from a proxy relaying plain http" >&2; exit 1; }
  wait_for_status "$url" 401 --interface 127.0.0.2 "${relayed[@]}" -H 'X-Forwarded-Proto: https' | grep -q 'only over TLS' \
    || { echo "image: an untrusted proxy's X-Forwarded-Proto counted" >&2; exit 1; }
  wait_for_status "$url" 404 --interface 127.0.0.2 -u alice:alice-secret-pw >/dev/null || exit 1
  echo "image: backend /readyz and /metrics on the operations port; behind a trusted proxy the lockout counts the client; Basic over plain http only from a trusted proxy saying https"
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
  # The resolved Swift packages are on the image, each direct dependency among them at its pinned version.
  local labelled pinned
  labelled=$($sudo podman image inspect --format '{{ index .Labels "dev.hubcast.dependencies" }}' "$image")
  for pinned in $(grep -oE 'github.com/[^"]+", exact: "[^"]+' Package.swift | sed -E 's|.*/([^/"]+)", exact: "(.*)|\1@\2|' | tr 'A-Z' 'a-z'); do
    grep -q "\(^\|,\)$pinned\(,\|$\)" <<<"$labelled" || { echo "image: dev.hubcast.dependencies lacks $pinned: $labelled" >&2; exit 1; }
  done
  echo "image: dev.hubcast.dependencies lists every pinned package ($(tr ',' '\n' <<<"$labelled" | wc -l) in all)"
  echo "image: runs as uid $user, all libraries present; hubcast demo in $image"
  # As a platform runs it: read-only root, only /tmp writable. The demo has no HTTP port, so no health check.
  $sudo podman run --rm --no-healthcheck --network=host --read-only --tmpfs /tmp "$image" demo --devices 2000
  health_test
  operations_smoke
}

case "${1:-}" in
  build) build ;;
  test) run_test ;;
  *) echo "usage: deploy/image.sh build|test" >&2; exit 2 ;;
esac
