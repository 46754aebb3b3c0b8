#!/usr/bin/env python3
"""hubcast benchmarks, side by side in one run on loopback; prints tables, writes
benchmarks/results/latest.json.

1. Ceiling: wrk POSTing hubcast's exact template send (same headers, same body) at the same
   connection count to nginx `return 201` and to `hubcast emulator`.
2. hubcast end to end: items preloaded into a dev broker, a release `hubcast run` drains them into
   nginx; sends/s, ratio to the wrk ceiling, p50/p99 send latency, peak RSS, CPU s per 1,000 sends,
   SAS tokens minted.
3. The Python peer (peers/python_peer.py: confluent-kafka + aiohttp) on the same sink and items.
4. Memory growth: hubcast's peak RSS per item count.

Sends/s of a pipeline is what the sink saw: requests / (last request − first request), from
nginx's access log ($msec), the same clock for hubcast and the peer. RSS and CPU come from wait4
on the measured process alone. Usage (make bench / make bench-quick call it):
  benchmarks/bench.py [--items 10000,100000,1000000] [--peer-items 10000,100000] [--connections 64] [--seconds 10]
"""
import argparse, json, os, platform, re, shutil, socket, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATEGORIES = ["World", "Politics", "Business", "Technology", "Science", "Sports"]
HUB = "bench"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, what, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not start on port {port}")


class Nginx:
    """nginx `return 201` on two loopback ports: one silent (for wrk), one logging $msec per request."""

    def __init__(self, work):
        self.work, self.quiet, self.logged = work, free_port(), free_port()
        self.log = os.path.join(work, "access.log")
        conf = os.path.join(work, "nginx.conf")
        with open(conf, "w") as f:
            f.write(f"""daemon off; master_process on; worker_processes 1; pid {work}/nginx.pid; error_log {work}/error.log warn;
events {{ worker_connections 4096; }}
http {{ client_body_temp_path {work}/body; keepalive_requests 10000000; log_format t '$msec';
  server {{ listen 127.0.0.1:{self.quiet}; access_log off; location / {{ return 201; }} }}
  server {{ listen 127.0.0.1:{self.logged}; access_log {self.log} t buffer=256k flush=1s; location / {{ return 201; }} }} }}
""")
        self.proc = subprocess.Popen(["nginx", "-p", work, "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.quiet, "nginx")

    def start_log(self):
        # nginx appends (O_APPEND), so truncating starts a fresh log; the last run's buffer was flushed.
        open(self.log, "w").close()

    def sink_rate(self):
        """(requests, sends/s) seen by the logging port since start_log."""
        time.sleep(1.5)  # the log buffer flushes every second
        stamps = [float(l) for l in open(self.log) if l.strip()]
        if len(stamps) < 2:
            return len(stamps), 0.0
        return len(stamps), len(stamps) / max(max(stamps) - min(stamps), 0.001)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def wrk(url, connections, seconds, sas):
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", os.path.join(ROOT, "benchmarks/lib/template-send.lua"), url],
                         capture_output=True, text=True, env={**os.environ, "HUBCAST_SAS": sas}).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"requestsPerSec": rate, "non2xx": int(errors.group(1)) if errors else 0}


def start_emulator(binary, work):
    out, err = open(os.path.join(work, "emulator.out"), "w"), open(os.path.join(work, "emulator.err"), "w")
    proc = subprocess.Popen([binary, "emulator", "--hub", HUB, "--log-level", "warning"], stdout=out, stderr=err)
    for _ in range(600):
        text = open(os.path.join(work, "emulator.out")).read()
        if text.strip():
            connection = text.splitlines()[0].strip()
            port = int(re.search(r"sb://127\.0\.0\.1:(\d+)/", connection).group(1))
            return proc, connection, port
        time.sleep(0.1)
    raise SystemExit("emulator did not start: " + open(os.path.join(work, "emulator.err")).read())


def sas_for(connection):
    return subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks/lib/sas.py"), HUB], input=connection,
                          capture_output=True, text=True, check=True).stdout.strip()


class Broker:
    """A dev broker holding `items` news items across the six category topics (6 partitions each)."""

    def __init__(self, binary, items, work):
        self.proc = subprocess.Popen([binary, "dev-broker", "--partitions", "6", "--log-level", "warning"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.bootstrap = self.proc.stdout.readline().strip()
        if not self.bootstrap:
            raise SystemExit("dev broker did not start")
        path = os.path.join(work, f"items-{items}.jsonl")
        if not os.path.exists(path):
            with open(path, "w") as f:
                for n in range(items):
                    f.write(json.dumps({"id": f"bench-{n}", "headline": f"Earthquake of magnitude 6.1 strikes off the coast {n}",
                                        "category": CATEGORIES[n % 6]}) + "\n")
        subprocess.run([binary, "produce", "--brokers", self.bootstrap, "--file", path, "--log-level", "warning"],
                       check=True, stdout=subprocess.DEVNULL)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def measured(argv, env, stdout_path):
    """Runs a process to its end; returns (exit status, peak RSS MiB, CPU seconds) of it alone."""
    with open(stdout_path, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), round(usage.ru_maxrss / 1024, 1), usage.ru_utime + usage.ru_stime


def connection_string(port):
    return f"Endpoint=sb://127.0.0.1:{port}/;SharedAccessKeyName=bench;SharedAccessKey=bench-key;UseDevelopmentEmulator=true"


def sink_run(label, binary, items, nginx, work, env, argv_for):
    """Runs one program, `argv_for(bootstrap)`, against a broker preloaded with `items` and nginx's
    logging port. Returns (the last line of its stdout as JSON, the figures every program has)."""
    broker = Broker(binary, items, work)
    try:
        nginx.start_log()
        out = os.path.join(work, "program.out")
        code, rss, cpu = measured(argv_for(broker.bootstrap), env, out)
        requests, rate = nginx.sink_rate()
    finally:
        broker.stop()
    lines = open(out).read().splitlines()
    summary = json.loads(lines[-1]) if lines else {"sent": 0}
    if code != 0 or summary["sent"] != items:
        raise SystemExit(f"{label} exited {code} having sent {summary['sent']} of {items}")
    return summary, {"items": items, "sent": summary["sent"], "sinkRequests": requests, "sendsPerSec": round(rate, 1),
                     "peakRssMiB": rss, "cpuSecondsPer1000Sends": round(cpu / max(1, summary["sent"]) * 1000, 4)}


def hubcast_run(binary, items, nginx, connections, work):
    env = {**os.environ, "HUBCAST_CONNECTION_STRING": connection_string(nginx.logged)}
    final, row = sink_run("hubcast run", binary, items, nginx, work, env, lambda bootstrap: [
        binary, "run", "--brokers", bootstrap, "--hub", HUB, "--skip-hub-check", "--concurrency", str(connections),
        "--exit-when-idle", "2", "--metrics-interval", "1", "--dlq", f"file:{work}/dlq.jsonl", "--log-level", "warning"])
    return {**row, "p50Ms": final["latencyMs"]["p50"], "p99Ms": final["latencyMs"]["p99"], "sasTokensMinted": final.get("sasTokensMinted")}


def peer_python(work):
    venv = os.path.join(ROOT, "benchmarks/.venv")
    python = os.path.join(venv, "bin/python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "confluent-kafka==2.16.1", "aiohttp==3.14.5"], check=True)
    return python


def peer_run(python, binary, items, nginx, connections, work):
    url = f"http://127.0.0.1:{nginx.logged}/{HUB}/messages/?api-version=2020-06"
    summary, row = sink_run("python peer", binary, items, nginx, work, dict(os.environ), lambda bootstrap: [
        python, os.path.join(ROOT, "benchmarks/peers/python_peer.py"), "--brokers", bootstrap, "--url", url,
        "--connection-string", connection_string(nginx.logged), "--concurrency", str(connections)])
    return {**row, "p50Ms": summary["p50Ms"], "p99Ms": summary["p99Ms"]}


def merge_micro(path, output):
    """Adds ordo-one/benchmark's export to latest.json as per-operation figures (p80 of the samples).

    The export gives times per 1,000 operations (scalingFactor .kilo) in its unit; malloc counts are
    already per operation (its "K" there is the scaling factor's label, not a multiplier: compare the
    text table of `swift package benchmark`)."""
    time_ns = {"ns": 1, "μs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
    micro = {}
    for e in json.load(open(path)):
        name, metric = e["name"].rsplit(" - ", 1)
        p80 = re.search(r"80th percentile: ([\d.]+)", e.get("extra", ""))
        value = float(p80.group(1)) if p80 else float(e["value"])
        row = micro.setdefault(name, {})
        if metric.startswith("Time"):
            row["nsPerOp"] = round(value * time_ns[e["unit"]] / 1000, 1)
        elif metric.startswith("Malloc"):
            row["mallocsPerOp"] = value
    result = json.load(open(output)) if os.path.exists(output) else {}
    result["micro"] = micro
    with open(output, "w") as f:
        json.dump(result, f, indent=2)
    print(f"\n{'micro-benchmark (p80 of samples)':<46}{'ns/op':>10}{'mallocs/op':>12}")
    for name, row in micro.items():
        print(f"{name:<46}{row.get('nsPerOp', 0):>10,.0f}{row.get('mallocsPerOp', 0):>12g}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", default="10000,100000,1000000", help="hubcast runs: item counts, comma-separated")
    parser.add_argument("--peer-items", default="10000,100000", help="Python peer runs: item counts, comma-separated")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections = hubcast --concurrency = peer pool size")
    parser.add_argument("--seconds", type=int, default=10, help="length of each wrk run")
    parser.add_argument("--output", default=os.path.join(ROOT, "benchmarks/results/latest.json"))
    parser.add_argument("--micro-json", help="only merge this micro-benchmark export into --output and print it")
    args = parser.parse_args()
    if args.micro_json:
        return merge_micro(args.micro_json, args.output)
    binary = os.environ.get("HUBCAST_BIN") or os.path.join(
        subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True).stdout.strip(), "hubcast")
    work = tempfile.mkdtemp(prefix="hubcast-bench-")
    nginx = Nginx(work)
    emulator = None
    try:
        python = peer_python(work) if args.peer_items else None
        emulator, emulator_connection, emulator_port = start_emulator(binary, work)
        print(f"ceiling: wrk, 1 thread, {args.connections} connections, {args.seconds} s each", file=sys.stderr)
        ceiling = {
            "nginx": wrk(f"http://127.0.0.1:{nginx.quiet}/{HUB}/messages/?api-version=2020-06", args.connections, args.seconds, "none"),
            "emulator": wrk(f"http://127.0.0.1:{emulator_port}/{HUB}/messages/?api-version=2020-06", args.connections, args.seconds,
                            sas_for(emulator_connection)),
        }
        emulator.terminate()
        emulator.wait()
        emulator = None
        runs, peers = [], []
        for n in [int(x) for x in args.items.split(",") if x]:
            print(f"hubcast run: {n:,} items", file=sys.stderr)
            runs.append(hubcast_run(binary, n, nginx, args.connections, work))
        for n in [int(x) for x in args.peer_items.split(",") if x]:
            print(f"python peer: {n:,} items", file=sys.stderr)
            peers.append(peer_run(python, binary, n, nginx, args.connections, work))
    finally:
        if emulator:
            emulator.terminate()
        nginx.stop()
        shutil.rmtree(work, ignore_errors=True)

    wrk_nginx = ceiling["nginx"]["requestsPerSec"]
    for r in runs:
        r["ratioToWrkOnNginx"] = round(r["sendsPerSec"] / wrk_nginx, 3)
        peer = next((p for p in peers if p["items"] == r["items"]), None)
        r["ratioToPythonPeer"] = round(r["sendsPerSec"] / peer["sendsPerSec"], 2) if peer and peer["sendsPerSec"] else None
    result = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "machine": {"cores": os.cpu_count(), "platform": platform.platform(), "memoryGiB": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
              "connections": args.connections, "ceiling": ceiling, "hubcast": runs, "pythonPeer": peers,
              "memoryGrowth": [{"items": r["items"], "peakRssMiB": r["peakRssMiB"]} for r in runs]}
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(result, f, indent=2)

    print(f"\nCeiling (wrk, same request, {args.connections} connections): nginx return 201 {wrk_nginx:,.0f}/s;"
          f" hubcast emulator {ceiling['emulator']['requestsPerSec']:,.0f}/s")
    print(f"\n{'':<8}{'items':>10}{'sends/s':>10}{'÷ wrk':>8}{'÷ peer':>8}{'p50 ms':>8}{'p99 ms':>8}{'RSS MiB':>9}{'CPU s/1k':>10}{'SAS':>5}")
    for r in runs:
        ratio = f"{r['ratioToPythonPeer']:.1f}" if r["ratioToPythonPeer"] else "-"
        print(f"{'hubcast':<8}{r['items']:>10,}{r['sendsPerSec']:>10,.0f}{r['ratioToWrkOnNginx']:>8.3f}{ratio:>8}{r['p50Ms']:>8.2f}"
              f"{r['p99Ms']:>8.2f}{r['peakRssMiB']:>9}{r['cpuSecondsPer1000Sends']:>10.3f}{r['sasTokensMinted']:>5}")
    for p in peers:
        print(f"{'python':<8}{p['items']:>10,}{p['sendsPerSec']:>10,.0f}{p['sendsPerSec'] / wrk_nginx:>8.3f}{'1.0':>8}{p['p50Ms']:>8.2f}"
              f"{p['p99Ms']:>8.2f}{p['peakRssMiB']:>9}{p['cpuSecondsPer1000Sends']:>10.3f}{'1':>5}")
    print(f"\nMemory growth (hubcast peak RSS): " + ", ".join(f"{r['items']:,} → {r['peakRssMiB']} MiB" for r in runs))
    print(f"wrote {os.path.relpath(args.output, ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
