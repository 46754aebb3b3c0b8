#!/usr/bin/env bash
# Emulator benchmark: latency of one send to a tag with a 100k-device audience, and sustained
# sends/s with wrk on loopback. Prints a table and writes benchmarks/results/emulator.json.
# Usage: benchmarks/emulator.sh [devices] [seconds] [connections] [wrk threads]
# wrk shares the machine's cores with the server; one wrk thread leaves the server the most.
set -euo pipefail
cd "$(dirname "$0")/.."
devices=${1:-100000}
seconds=${2:-10}
connections=${3:-64}
threads=${4:-1}
bin=${HUBCAST_BIN:-$(swift build -c release --show-bin-path)/hubcast}
out=benchmarks/results
mkdir -p "$out"
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true; rm -rf "$work"' EXIT

"$bin" emulator --hub bench --devices "$devices" --log-level warning >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 600); do [ -s "$work/out" ] && break; sleep 0.1; done
connection=$(head -n1 "$work/out")
[ -n "$connection" ] || { echo "emulator did not start: $(cat "$work/err")" >&2; exit 1; }
port=$(sed -E 's#.*sb://127.0.0.1:([0-9]+)/.*#\1#' <<<"$connection")
export HUBCAST_SAS=$(python3 benchmarks/lib/sas.py bench <<<"$connection")
url="http://127.0.0.1:$port/bench/messages/?api-version=2020-06"
followers=$(curl -s -X POST -H "Authorization: $HUBCAST_SAS" -H "ServiceBusNotification-Format: template" \
  -H "ServiceBusNotification-Tags: World" -H "Content-Type: application/json" --data '{"messageParam":"warm-up"}' "$url" >/dev/null;
  curl -s "http://127.0.0.1:$port/_emulator/deliveries" | python3 -c 'import json,sys; print(json.load(sys.stdin)["deliveries"][-1]["matched"])')

# Latency: one connection, one request at a time.
wrk -t1 -c1 -d"${seconds}s" --latency -s benchmarks/lib/template-send.lua "$url" >"$work/latency.txt"
# Throughput: many connections.
wrk -t"$threads" -c"$connections" -d"${seconds}s" --latency -s benchmarks/lib/template-send.lua "$url" >"$work/throughput.txt"

python3 - "$work" "$devices" "$followers" "$connections" "$out/emulator.json" <<'PY'
import json, re, sys, platform, os
work, devices, followers, connections, dest = sys.argv[1:6]
def parse(path):
    text = open(path).read()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    def ms(label):
        m = re.search(rf"{label}\s+([\d.]+)(us|ms|s)\b", text)
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return {"requestsPerSec": rps, "p50Ms": ms("50%"), "p99Ms": ms("99%"), "non2xx": int(errors.group(1)) if errors else 0}
lat, thr = parse(f"{work}/latency.txt"), parse(f"{work}/throughput.txt")
result = {"machine": {"cores": os.cpu_count(), "platform": platform.platform()}, "devices": int(devices),
          "audienceOfTag": int(followers), "singleConnection": lat, "connections": int(connections), "loaded": thr}
json.dump(result, open(dest, "w"), indent=2)
print(f"emulator, {devices} simulated devices, tag World reaches {followers}")
print(f"{'run':<28}{'sends/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'non-2xx':>9}")
print(f"{'1 connection (latency)':<28}{lat['requestsPerSec']:>10.0f}{lat['p50Ms']:>9.2f}{lat['p99Ms']:>9.2f}{lat['non2xx']:>9}")
print(f"{connections + ' connections':<28}{thr['requestsPerSec']:>10.0f}{thr['p50Ms']:>9.2f}{thr['p99Ms']:>9.2f}{thr['non2xx']:>9}")
print(f"wrote {dest}")
PY
