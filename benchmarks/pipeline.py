#!/usr/bin/env python3
"""End-to-end benchmark: `hubcast run` draining preloaded items into a `return 201` nginx sink,
side by side with wrk sending the same request to the same sink at the same connection count.

Prints a table and writes benchmarks/results/pipeline.json. Usage:
  benchmarks/pipeline.py [--items 10000,100000] [--connections 64] [--seconds 10]
Needs a release build (make bench-quick does it), nginx, wrk. Traffic stays on 127.0.0.1.
"""
import argparse, json, os, platform, re, shutil, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(work):
    port = free_port()
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""daemon off; master_process on; worker_processes 1; pid {work}/nginx.pid; error_log {work}/error.log warn;
events {{ worker_connections 4096; }}
http {{ access_log off; client_body_temp_path {work}/body; keepalive_requests 1000000;
  server {{ listen 127.0.0.1:{port}; location / {{ return 201; }} }} }}
""")
    proc = subprocess.Popen(["nginx", "-p", work, "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nginx did not start")


def wrk(url, connections, seconds):
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", os.path.join(ROOT, "benchmarks/lib/template-send.lua"), url],
                         capture_output=True, text=True, env={**os.environ, "HUBCAST_SAS": "SharedAccessSignature sr=x&sig=y&se=1&skn=bench"}).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def hubcast_run(binary, items, port, connections, work):
    broker = subprocess.Popen([binary, "dev-broker", "--partitions", "6", "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    bootstrap = broker.stdout.readline().strip()
    try:
        lines = os.path.join(work, f"items-{items}.jsonl")
        categories = ["World", "Politics", "Business", "Technology", "Science", "Sports"]
        with open(lines, "w") as f:
            for n in range(items):
                f.write(json.dumps({"id": f"bench-{n}", "headline": f"Earthquake of magnitude 6.1 strikes off the coast {n}",
                                    "category": categories[n % 6]}) + "\n")
        subprocess.run([binary, "produce", "--brokers", bootstrap, "--file", lines, "--log-level", "warning"], check=True, stdout=subprocess.DEVNULL)
        env = {**os.environ, "HUBCAST_CONNECTION_STRING":
               f"Endpoint=sb://127.0.0.1:{port}/;SharedAccessKeyName=bench;SharedAccessKey=bench;UseDevelopmentEmulator=true"}
        out_path = os.path.join(work, "metrics.jsonl")
        with open(out_path, "w") as out:
            proc = subprocess.Popen([binary, "run", "--brokers", bootstrap, "--hub", "hub", "--skip-hub-check", "--concurrency", str(connections),
                                     "--exit-when-idle", "2", "--metrics-interval", "1", "--dlq", f"file:{work}/dlq.jsonl", "--log-level", "warning"],
                                    stdout=out, stderr=subprocess.DEVNULL, env=env)
            # wait4 gives this one process's peak RSS and CPU, not the broker's or the producer's.
            _, status, usage = os.wait4(proc.pid, 0)
        stdout = open(out_path).read()
    finally:
        broker.terminate()
        broker.wait()
    metrics = [json.loads(l) for l in stdout.splitlines() if l.strip()]
    final = metrics[-1]
    # Whole intervals with sends in them; the first and last are partial, so they are left out.
    rates = [m["sendsPerSec"] for m in metrics[:-1] if m["sendsPerSec"] > 0]
    steady = rates[1:-1] if len(rates) > 2 else rates
    return {
        "items": items, "sent": final["sent"], "failed": final["failed"],
        "sendsPerSec": statistics.median(steady) if steady else 0.0,
        "p50Ms": final["latencyMs"]["p50"], "p99Ms": final["latencyMs"]["p99"],
        "peakRssMiB": round(usage.ru_maxrss / 1024, 1),
        "cpuSecondsPer1000Sends": round((usage.ru_utime + usage.ru_stime) / max(1, final["sent"]) * 1000, 3),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", default="10000,100000")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--seconds", type=int, default=10)
    args = parser.parse_args()
    binary = os.environ.get("HUBCAST_BIN") or os.path.join(
        subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True).stdout.strip(), "hubcast")
    work = tempfile.mkdtemp(prefix="hubcast-bench-")
    nginx, port = start_nginx(work)
    try:
        url = f"http://127.0.0.1:{port}/hub/messages/?api-version=2020-06"
        ceiling = wrk(url, args.connections, args.seconds)
        runs = [hubcast_run(binary, int(n), port, args.connections, work) for n in args.items.split(",")]
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(work, ignore_errors=True)
    result = {"machine": {"cores": os.cpu_count(), "platform": platform.platform()}, "connections": args.connections,
              "wrkCeilingOnNginx": ceiling, "hubcast": runs}
    os.makedirs(os.path.join(ROOT, "benchmarks/results"), exist_ok=True)
    with open(os.path.join(ROOT, "benchmarks/results/pipeline.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(f"sink: nginx return 201; {args.connections} connections; wrk ceiling {ceiling:,.0f} req/s (same request, same run)")
    print(f"{'items':>9}{'sends/s':>10}{'÷ wrk':>8}{'p50 ms':>8}{'p99 ms':>8}{'peak RSS MiB':>14}{'CPU s/1k sends':>16}")
    for r in runs:
        print(f"{r['items']:>9}{r['sendsPerSec']:>10,.0f}{r['sendsPerSec'] / ceiling:>8.2f}{r['p50Ms']:>8.2f}{r['p99Ms']:>8.2f}"
              f"{r['peakRssMiB']:>14}{r['cpuSecondsPer1000Sends']:>16}")
    print("wrote benchmarks/results/pipeline.json")


if __name__ == "__main__":
    sys.exit(main())
