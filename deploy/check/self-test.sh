#!/usr/bin/env bash
# Shows `make deploy-check` catches what it is for: each case copies deploy/, breaks one file the way a
# careless edit would, runs only the check meant to catch it, and expects that check to fail (with the
# copy untouched otherwise; the same check passes on the real files just before, in deploy-check.sh).
# Exits 1 if any breakage goes unnoticed.
set -euo pipefail
cd "$(dirname "$0")/../.."

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
missed=()

# expect_failure CHECK FILE SED-EXPRESSION DESCRIPTION
expect_failure() {
  local check=$1 file=$2 expression=$3 description=$4 copy=$scratch/deploy
  rm -rf "$copy" "$scratch/docs"
  mkdir -p "$copy" "$scratch/docs"
  cp -r deploy/Dockerfile deploy/compose.yaml deploy/k8s deploy/systemd deploy/prometheus deploy/grafana "$copy/"
  cp docs/deploy.md "$scratch/docs/"
  sed -i -e "$expression" "$copy/$file"
  if cmp -s "deploy/$file" "$copy/$file"; then
    echo "self-test: $description: the edit changed nothing (fix the case)" >&2
    missed+=("$description")
    return
  fi
  if bash deploy/deploy-check.sh --root "$copy" --only "$check" >"$scratch/out" 2>&1; then
    echo "self-test: MISSED $description ($check passed)" >&2
    missed+=("$description")
  else
    echo "self-test: caught $description ($check)"
  fi
}

expect_failure kubernetes-validate k8s/run-deployment.yaml \
  's/terminationGracePeriodSeconds:/terminationGracePeriodSecond:/' "a misspelt Deployment field"
expect_failure kubernetes-validate k8s/run-pdb.yaml \
  's/maxUnavailable: 1/maxUnavailable: [1]/' "a PodDisruptionBudget value of the wrong type"
expect_failure kubernetes-validate k8s/run-scaledobject.yaml \
  's/maxReplicaCount:/maxReplicas:/' "a ScaledObject field KEDA does not have"
expect_failure kubernetes-validate k8s/kustomization.yaml \
  '/run-networkpolicy.yaml/d' "a manifest the kustomization leaves out"
expect_failure kustomize k8s/kustomization.yaml \
  's/^  - name: hubcast$/  - name: hubcast-image/' "an images entry that matches no container's image"
expect_failure kustomize k8s/kustomization.yaml \
  '/backend-pdb.yaml/d' "a manifest left out of the rendered kustomization"
expect_failure kustomize k8s/backend-service.yaml \
  's/app.kubernetes.io\/component: backend/app.kubernetes.io\/component: api/' "a Service selecting no pod"
expect_failure kustomize k8s/run-scaledobject.yaml \
  's/    name: hubcast-run$/    name: hubcast-runner/' "a ScaledObject scaling a Deployment that is not there"
expect_failure checkov-kubernetes k8s/run-deployment.yaml \
  's/readOnlyRootFilesystem: true/readOnlyRootFilesystem: false/' "a writable root filesystem"
expect_failure compose-schema compose.yaml \
  's/^    restart: "no"$/    restarts: "no"/' "a Compose key the specification does not have"
expect_failure yamllint compose.yaml \
  's/^  kafka:$/  kafka:\n  kafka:/' "a duplicated Compose service key"
expect_failure hadolint Dockerfile \
  's/^WORKDIR \/src$/RUN cd \/src/' "a RUN cd instead of WORKDIR"
expect_failure checkov-dockerfile Dockerfile \
  '/^HEALTHCHECK/,/^  CMD/d' "an image without a HEALTHCHECK"
expect_failure systemd-verify systemd/hubcast.service \
  's/^NoNewPrivileges=yes/NoNewPrivilege=yes/' "a misspelt systemd directive"
expect_failure systemd-security systemd/hubcast.service \
  '/^DynamicUser=yes/d; /^ProtectSystem=strict/d; /^SystemCallFilter/d; /^CapabilityBoundingSet=/d' \
  "a unit without its sandbox"
expect_failure consistency k8s/run-deployment.yaml \
  's/terminationGracePeriodSeconds: 45/terminationGracePeriodSeconds: 30/' "a grace period no longer than the drain"
expect_failure consistency k8s/backend-deployment.yaml \
  's/containerPort: 9090/containerPort: 9091/' "a probe on a port the backend does not open"
expect_failure consistency k8s/configmap.yaml \
  '/HUBCAST_HTTP_HOST/d' "probes on a port bound to loopback"
expect_failure consistency systemd/hubcast.service \
  's/ --drain-timeout=30//' "a drain the env file could raise past TimeoutStopSec"
expect_failure consistency k8s/run-pdb.yaml \
  '/unhealthyPodEvictionPolicy/d' "a PodDisruptionBudget that blocks drains while a pod is unready"
expect_failure consistency k8s/run-scaledobject.yaml \
  's/kafka.kafka.svc.cluster.local:9092/kafka-0.kafka:9092/' "a broker name KEDA cannot resolve"
expect_failure consistency compose.yaml \
  '/KAFKA_LOG_DIRS/d' "Kafka's data outside its volume"
expect_failure consistency compose.yaml \
  's|"--users-file=/run/secrets/backend-users", ||' "a backend without a users file"
expect_failure consistency systemd/hubcast.service \
  's|^Environment=HUBCAST_HTTP_PORT=9090|Environment=HUBCAST_CONNECTION_STRING=Endpoint=sb://x/|' "a secret in the unit's environment"
expect_failure prometheus-rules prometheus/hubcast-alerts.yaml \
  's/max(hubcast_canary_last_success_timestamp_seconds) > 180/max(hubcast_canary_last_success_timestamp_seconds) > 600/' \
  "an alert that no longer fires when its test says it must"
expect_failure metric-names grafana/hubcast.json 's/hubcast_pace_rate)/hubcast_pace_rates)/' "a dashboard query on a metric hubcast does not export"
expect_failure metric-names prometheus/hubcast-alerts.yaml 's/min(hubcast_hub_available)/min(hubcast_hub_up)/' "an alert on a metric hubcast does not export"
expect_failure flags k8s/backend-deployment.yaml 's/--users-file=/--user-file=/' "a misspelt flag in a Deployment's args"
expect_failure flags systemd/hubcast.service 's/ --drain-timeout=30/ --drain-time=30/' "a misspelt flag in the unit's ExecStart"
# FILE paths are relative to the copy of deploy/; the guide is beside it, as in the repository.
expect_failure docs-steps ../docs/deploy.md \
  '/^kubectl apply -f deploy\/k8s\/namespace.yaml$/d; /^kubectl apply -k deploy\/k8s$/i kubectl apply -f deploy/k8s/namespace.yaml' \
  "the guide creates the Secrets before their namespace"
expect_failure docs-steps ../docs/deploy.md 's/--from-file=users=/--from-file=userlist=/' "the guide's Secret lacks a key the backend reads"
expect_failure docs-steps ../docs/deploy.md 's/-t localhost\/hubcast:latest/-t hubcast/' "the guide builds an image compose does not run"
expect_failure docs-steps ../docs/deploy.md 's|deploy/secrets/backend-users|deploy/secrets/users|' "the guide never makes a secret file compose reads"
expect_failure docs-steps systemd/hubcast.service \
  's|^LoadCredential=connection-string:/etc/hubcast/connection-string|LoadCredential=connection-string:/etc/hubcast/hub-key|' \
  "a credential the install steps never create"

if [ ${#missed[@]} -gt 0 ]; then
  echo "self-test: deploy-check missed: ${missed[*]}" >&2
  exit 1
fi
echo "self-test: deploy-check caught every breakage"
