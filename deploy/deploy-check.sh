#!/usr/bin/env bash
# Validates the deployment files offline with maintained linters (make deploy-check):
#   hadolint + checkov        deploy/Dockerfile
#   kubernetes-validate       deploy/k8s (strict, Kubernetes $K8S_VERSION; KEDA's CRD schema vendored)
#   checkov                   deploy/k8s (Kubernetes checks; skips carry their reason next to them)
#   kustomize                 deploy/k8s rendered by `kubectl kustomize`: every manifest once, in the namespace,
#                             the kustomization's image in every container, every selector matching a pod
#   check-jsonschema          deploy/compose.yaml against the Compose specification's schema (vendored)
#   yamllint                  compose, Kubernetes and Prometheus YAML
#   systemd-analyze           deploy/systemd/hubcast.service: verify, and its sandbox's exposure score
#   consistency               the files read together: stop deadlines above the drain timeout (all three
#                             platforms), probes on ports the commands open, PDB eviction policy, KEDA's
#                             broker names, Kafka's data on its volume, users files, no secret in the unit
#   docs-steps                docs/deploy.md's steps against the files: Secrets after their namespace and
#                             before `apply -k`, with the names and keys the manifests read; the image
#                             compose runs is the one the guide builds, and its secret files made;
#                             systemd's unit, env file and credentials where they go
#   prometheus-rules          deploy/prometheus: promtool check rules, and each alert's unit test
#   metric-names              every metric the dashboard (deploy/grafana) and the rules name is exported
#   flags                     every hubcast command and flag the files use is in that command's --help
# Usage: deploy/deploy-check.sh [--root DIR] [--only NAME]...   (DIR: a copy of deploy/, for the self-test)
# The linters go into .build-deploycheck/venv (PyPI, pinned in deploy/check/requirements.txt).
# Vendored schemas (deploy/check/schemas/): compose-spec.json is compose-spec/compose-spec's
# schema/compose-spec.json at 170098ba07d9f53c383a41bfd4c5166b0a4529a6 (2026-06-23), verbatim; the KEDA CRD's
# origin is in its header. Refresh them by hand when a newer Compose or KEDA is the target.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

K8S_VERSION=1.37.0
# systemd-analyze security's exposure threshold, in tenths (0 = fully sandboxed, 100 = not at all).
SYSTEMD_EXPOSURE_MAX=20
venv=.build-deploycheck/venv
root=deploy
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --root) root=$2; shift 2 ;;
    --only) only+=("$2"); shift 2 ;;
    *) echo "usage: deploy/deploy-check.sh [--root DIR] [--only NAME]..." >&2; exit 2 ;;
  esac
done

apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "deploy-check: installing $* (Debian)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

install_tools() {
  command -v systemd-analyze >/dev/null || apt_install systemd
  command -v promtool >/dev/null || apt_install prometheus
  # `kubectl kustomize` renders deploy/k8s as `kubectl apply -k` would (Debian's client is enough for the
  # kustomization's namespace, resources and images).
  command -v kubectl >/dev/null || apt_install kubernetes-client
  python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv
  # Reinstalled only when the pinned list changes.
  local stamp=$venv/.requirements
  if ! cmp -s deploy/check/requirements.txt "$stamp" 2>/dev/null; then
    echo "deploy-check: installing linters into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r deploy/check/requirements.txt
    cp deploy/check/requirements.txt "$stamp"
  fi
}

wanted() {
  [ ${#only[@]} -eq 0 ] && return 0
  local name
  for name in "${only[@]}"; do [ "$name" = "$1" ] && return 0; done
  return 1
}

failed=()
# run NAME COMMAND...: runs one check, shows its output only when it fails.
run() {
  local name=$1; shift
  wanted "$name" || return 0
  local out
  if out=$("$@" 2>&1); then
    echo "deploy-check: $name ok"
  else
    echo "deploy-check: $name FAILED" >&2
    printf '%s\n' "$out" | sed 's/^/    /' >&2
    failed+=("$name")
  fi
}

checkov() {
  # --skip-download: no calls to Prisma Cloud for guidelines; the bundled checks run offline.
  "$venv/bin/checkov" --quiet --compact --skip-download "$@"
}

# systemd-analyze verify exits 0 on unknown keys and unparsable values (it only warns), so any output fails.
# ExecStart's binary must exist for verify: a copy of the unit points it at a stand-in, nothing else changes.
systemd_verify() {
  local unit=$1 scratch
  scratch=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$scratch'; trap - RETURN" RETURN
  install -m 0755 /bin/true "$scratch/hubcast"
  sed "s#^ExecStart=/usr/local/bin/hubcast#ExecStart=$scratch/hubcast#" "$unit" >"$scratch/hubcast.service"
  grep -q "^ExecStart=$scratch/hubcast" "$scratch/hubcast.service" || { echo "ExecStart is not /usr/local/bin/hubcast"; return 1; }
  local out
  out=$(systemd-analyze verify "$scratch/hubcast.service" 2>&1) || { echo "$out"; return 1; }
  [ -z "$out" ] || { echo "$out"; return 1; }
}

# The alert rules parse, and each alert's unit test holds (the test file sits beside the rules).
prometheus_rules() {
  promtool check rules "$1/hubcast-alerts.yaml" >/dev/null && (cd "$1" && promtool test rules hubcast-alerts.test.yaml)
}

systemd_security() {
  systemd-analyze security --offline=true --threshold="$SYSTEMD_EXPOSURE_MAX" --no-pager "$1" >/dev/null 2>&1 || {
    systemd-analyze security --offline=true --no-pager "$1" 2>&1 | tail -1
    echo "exposure above $SYSTEMD_EXPOSURE_MAX tenths: the unit lost some of its sandbox"
    return 1
  }
}

install_tools
py=$venv/bin/python
run hadolint "$venv/bin/hadolint" "$root/Dockerfile"
run checkov-dockerfile checkov --framework dockerfile -f "$root/Dockerfile"
run kubernetes-validate "$py" deploy/check/k8s_validate.py "$root/k8s" --kubernetes-version "$K8S_VERSION" \
  --crd deploy/check/schemas/keda.sh_scaledobjects.yaml
run checkov-kubernetes checkov --framework kubernetes -d "$root/k8s"
run kustomize "$py" deploy/check/rendered.py "$root"
run compose-schema "$venv/bin/check-jsonschema" --schemafile deploy/check/schemas/compose-spec.json "$root/compose.yaml"
run yamllint "$venv/bin/yamllint" --strict -c deploy/check/yamllint.yaml "$root/compose.yaml" "$root/k8s" "$root/prometheus"
run systemd-verify systemd_verify "$root/systemd/hubcast.service"
run systemd-security systemd_security "$root/systemd/hubcast.service"
run consistency "$py" deploy/check/consistency.py "$root"
run docs-steps "$py" deploy/check/docs_steps.py "$root"
run prometheus-rules prometheus_rules "$root/prometheus"
run metric-names "$py" deploy/check/metric_names.py "$root" Sources
if wanted flags; then
  # The binary whose --help the files are held to: HUBCAST_BIN, else this tree's debug build (made here if
  # missing; `make test` has made it in CI).
  bin=${HUBCAST_BIN:-}
  if [ -z "$bin" ]; then
    swift build --product hubcast >/dev/null 2>&1 || { echo "deploy-check: could not build hubcast for the flags check" >&2; exit 1; }
    bin=$(swift build --show-bin-path)/hubcast
  fi
  run flags "$py" deploy/check/flags.py "$root" "$bin"
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "deploy-check: failed: ${failed[*]}" >&2
  exit 1
fi
echo "deploy-check: all passed"
