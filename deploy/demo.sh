#!/usr/bin/env bash
# The end-to-end demo on loopback. Until `hubcast demo` (the pipeline) lands, it shows the Kafka
# half: a dev broker, the sample news published to the category topics, and each topic read back.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(swift build --show-bin-path)/hubcast

log=$(mktemp)
"$bin" dev-broker --log-level warning >"$log.out" 2>"$log" &
broker_pid=$!
trap 'kill $broker_pid 2>/dev/null; wait $broker_pid 2>/dev/null; rm -f "$log" "$log.out"' EXIT
for _ in $(seq 50); do [ -s "$log.out" ] && break; sleep 0.1; done
brokers=$(head -n1 "$log.out")
echo "dev broker (in memory) at $brokers"

echo "publishing deploy/sample-news.jsonl (one invalid item is expected to be rejected):"
"$bin" produce --brokers "$brokers" --file deploy/sample-news.jsonl || true

for topic in news.world news.politics news.business news.technology news.science news.sports; do
  count=$(kcat -b "$brokers" -C -t "$topic" -o beginning -e -q -f '%s\n' | wc -l)
  echo "  $topic: $count item(s)"
done
echo "The pipeline to Notification Hubs (hubcast run / hubcast demo) arrives with the pipeline issue."
