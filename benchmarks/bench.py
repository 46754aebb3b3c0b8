#!/usr/bin/env python3
"""hubcast benchmarks, side by side in one run on one nginx sink on loopback; prints tables and the
goals with PASS/MISS, writes benchmarks/results/latest.json (or --output).

1. Ceiling: wrk (1 thread) POSTing hubcast's exact template send (lib/template-send.lua) to nginx
   `return 201` and to `hubcast emulator`; and the floor of libcurl, the HTTP library hubcast is built
   on: peers/c/curl_floor (the same request through libcurl's multi interface and nothing else), one
   process per core: requests/s over their common window and CPU µs per request of their loops.
2. Unthrottled, same items (--items) for each: `hubcast run`, the Go sender (peers/go) and the Python
   sender (peers/python_peer.py) drain a preloaded dev broker into nginx: sends/s, ratio to wrk, CPU
   µs per send, peak RSS.
3. Over HTTPS: the same programs into nginx with a certificate from a throwaway CA they trust:
   sends/s, CPU µs per send, TLS connections opened (each one handshake) and how many resumed a session.
4. Against a quota (--quotas): the same three into nginx `limit_req` answering 429 with
   `Retry-After: 1`, --quota-seconds worth of items each: goodput ÷ quota, % of requests throttled,
   time to deliver all. No rate is configured in any program (a cold start).
5. Sporadic throttling: 600 items into a sink that refuses one request in seven whatever the rate,
   and --quota-seconds of the last quota's items into that quota with 5% refused on top: time to
   deliver all, goodput ÷ quota.
6. End-to-end latency: a producer publishing each of --latency-rates (50 and 5,000) items/s for
   --latency-seconds into the dev broker (--latency-broker tansu: Tansu), `hubcast run` sending to `hubcast emulator`; the exact
   figure from the emulator's delivery log (accepted at − the produce call, both to the microsecond),
   steady state only (after the first 5 s), beside p50/p99 per category from hubcast's own metrics
   lines (endToEndMs, whole milliseconds: Kafka timestamps have no finer grain). Then Kafka alone: the
   same schedule through a fresh broker of the same kind to a consumer that does nothing
   (lib/kafka_floor.py), the part of the figure that is the broker's on this machine.
7. Memory: hubcast's peak RSS at each of --memory-items.
9. Priority and fairness, side by side with --baseline (a build from before, if given): a backlog of
   --priority-backlog bulk Sports items, `hubcast run` started on it, then one breaking World item a
   second for --priority-seconds, into nginx `return 201` and into the 200/s quota with --max-rate 200:
   each breaking item's end-to-end latency (its write to kcat → nginx's log of its send) and the
   backlog's drain rate. Then fairness: --fair-flood Sports items of normal priority (a tenth of them
   against the 200/s quota) and the five other categories trickling 10 items/s each: their latency
   while the flood drains.
8. Scale-out (--group-quota, --group-items): several `hubcast run` in one consumer group against one
   nginx quota, items produced without keys (kcat: partitions unevenly loaded), no tuning flags:
   1, 2 and 3 instances started together; 3 with the one holding the most items stopped by SIGTERM
   halfway (seconds until the others reach 0.9× the quota, the quota's share over the 10 s after);
   2 with a third added halfway (throttled around the join). Combined goodput ÷ quota, over the run
   and its last half, % throttled, each instance's share of the sends, items sent twice. --group-latency-ms has a delaying upstream answer each send the quota
   lets through that much later (a real hub's round trip); --group-cases picks the runs.

Sends/s and every quota figure are what the sink saw, from nginx's access log ($msec $status), the
same clock for all three programs. RSS and CPU come from wait4 on the measured process alone, by a small
process that starts it (lib/peak_rss.py: started from this script, a program's peak RSS would include the script's).
HUBCAST_BIN points at a hubcast built elsewhere; GO_SENDER_BIN at the Go sender (default
benchmarks/.peers-build/gosender, built by `make bench-tools`), CURL_FLOOR_BIN at the libcurl floor
(default benchmarks/.peers-build/curl_floor, likewise).
"""
import argparse, collections, json, os, platform, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATEGORIES = ["World", "Politics", "Business", "Technology", "Science", "Sports"]
HUB = "bench"
# The statuses of a send the hub accepted, in the sink's log.
ACCEPTED = (200, 201)
SECTIONS = ["ceiling", "unthrottled", "tls", "quota", "sporadic", "latency", "memory", "group", "priority"]
PROGRAMS = ["hubcast", "go", "python"]
WARM_UP_SECONDS = 5
ID_IN_PAYLOAD = re.compile(r"Latency item (lat-\d+)")

# The goals.
GOAL_QUOTA_GOODPUT, GOAL_QUOTA_SETTLED, GOAL_QUOTA_THROTTLED_PCT = 0.9, 0.95, 2.0
GOAL_SPORADIC_SECONDS, GOAL_MIXED_GOODPUT = 20.0, 0.85
# Unthrottled over plain HTTP: against the Go sender, libcurl's floor (peers/c/curl_floor.c) and wrk.
GOAL_VS_GO_RATE, GOAL_VS_GO_CPU, GOAL_VS_FLOOR_CPU, GOAL_VS_WRK = 1.2, 0.85, 1.3, 0.6
# Peak RSS: at most the Go sender's in the same run (else this), flat within ±10% from the fewest
# items to the most.
GOAL_E2E_P50_MS, GOAL_E2E_P99_MS, GOAL_RSS_MIB, GOAL_RSS_FLAT = 2.0, 5.0, 64.0, 0.10
# End to end at the high rate (items/s): p99 in ms.
GOAL_E2E_HIGH_RATE, GOAL_E2E_HIGH_P99_MS = 5000, 20.0
GOAL_GROUP_GOODPUT, GOAL_GROUP_SETTLED, GOAL_GROUP_THROTTLED_PCT = 0.85, 0.9, 2.0
GOAL_GROUP_LEAVE_SECONDS, GOAL_GROUP_JOIN_THROTTLED_PCT = 5.0, 2.0
GOAL_BREAKING_P99_MS, GOAL_BREAKING_QUOTA_P99_MS, GOAL_DRAIN_KEPT, GOAL_FAIR_P99_MS = 20.0, 1000.0, 0.95, 50.0


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


def quota_burst(quota):
    """limit_req's burst: 50 ms worth of the quota. nginx's leaky bucket has millisecond resolution, so
    with no burst two sends arriving in the same millisecond are refused even far below the quota; with
    `burst=B nodelay` at most quota·T + B sends pass in T seconds (1.003× the quota over 15 s)."""
    return max(1, quota // 20)


class DelayServer:
    """HTTP/1.1 on loopback answering every request 201 after `latency_ms` (asyncio, in a process of its own),
    behind nginx's quota: a hub's round trip."""

    SCRIPT = r"""
import asyncio, sys
delay = int(sys.argv[2]) / 1000
async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if length:
                await reader.readexactly(length)
            await asyncio.sleep(delay)
            writer.write(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    writer.close()
async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", int(sys.argv[1]), backlog=1024)
    async with server:
        await server.serve_forever()
asyncio.run(main())
"""

    def __init__(self, latency_ms):
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, "-c", self.SCRIPT, str(self.port), str(latency_ms)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port, "the delaying upstream")

    def stop(self):
        self.proc.terminate()


class Nginx:
    """nginx on loopback: `return 201` on a silent port (wrk) and a logging port, and one logging
    `limit_req` port per quota. Every logging port writes `$msec $status` to the one access log."""

    def __init__(self, work, quotas, extra_quotas=(), delayed_quota=None, latency_ms=0):
        self.work, self.quiet, self.logged = work, free_port(), free_port()
        self.quota_ports = {q: free_port() for q in [*quotas, *extra_quotas]}
        # A real hub answers after 20-100 ms, not loopback's fraction of one: the same quota, with each
        # send it lets through answered `latency_ms` later by a delaying upstream (`self.delayed_port`).
        self.delayed_port = free_port() if delayed_quota and latency_ms else None
        self.delay = DelayServer(latency_ms) if self.delayed_port else None
        # Sporadic throttling: one request in seven refused whatever the rate, with no quota; and
        # 5% refused on top of the first quota (refused before limit_req, so they spend none of it).
        self.sporadic_port, self.mixed_port, self.mixed_quota = free_port(), free_port(), quotas[-1]
        # HTTPS as against the real hub: a certificate from a throwaway CA (`self.ca`), sessions
        # cached, HTTP/2 offered (the hub offers it; each client takes it or HTTP/1.1 as it chooses);
        # the log says which connection served each request, whether it resumed a session, and the protocol.
        self.tls_port = free_port()
        self.ca, cert, key = make_certificates(work)
        self.log = os.path.join(work, "access.log")
        conf = os.path.join(work, "nginx.conf")
        logging = f"access_log {self.log} t buffer=256k flush=1s;"
        limited = "".join(f"""
  limit_req_zone $quota_key zone=q{q}:1m rate={q}r/s;
  server {{ listen 127.0.0.1:{port}; {logging} add_header Retry-After $retry_after always;
    location / {{ limit_req zone=q{q} burst={quota_burst(q)} nodelay; limit_req_status 429; limit_req_log_level info; try_files /.none @accepted; }}
    location @accepted {{ return 201; }} }}""" for q, port in self.quota_ports.items())
        if self.delayed_port:
            q = delayed_quota
            limited += f"""
  upstream delay {{ server 127.0.0.1:{self.delay.port}; keepalive 512; }}
  server {{ listen 127.0.0.1:{self.delayed_port}; {logging} add_header Retry-After $retry_after always;
    location / {{ limit_req zone=q{q} burst={quota_burst(q)} nodelay; limit_req_status 429; limit_req_log_level info; try_files /.none @accepted; }}
    location @accepted {{ proxy_pass http://delay; proxy_http_version 1.1; proxy_set_header Connection ""; }} }}"""
        with open(conf, "w") as f:
            # `return` runs in the rewrite phase, before limit_req's preaccess phase, so the limited
            # servers answer 201 from a named location reached by try_files (after limit_req).
            f.write(f"""daemon off; master_process on; worker_processes 1; pid {work}/nginx.pid; error_log {work}/error.log warn;
events {{ worker_connections 4096; }}
http {{ client_body_temp_path {work}/body; keepalive_requests 10000000; root {work}/www;
  log_format t '$msec $status $http_servicebusnotification_tags';
  map $server_port $quota_key {{ default hub; }}
  map $status $retry_after {{ 429 1; default ""; }}
  server {{ listen 127.0.0.1:{self.quiet}; access_log off; location / {{ return 201; }} }}
  server {{ listen 127.0.0.1:{self.logged}; {logging} location / {{ return 201; }} }}{limited}
  log_format tls '$msec $status $connection $ssl_session_reused $server_protocol';
  server {{ listen 127.0.0.1:{self.tls_port} ssl http2; ssl_certificate {cert}; ssl_certificate_key {key};
    ssl_session_cache shared:TLS:1m; access_log {self.log} tls buffer=256k flush=1s; location / {{ return 201; }} }}
  split_clients "${{request_id}}" $one_in_seven {{ 14.29% throttle; * pass; }}
  split_clients "${{request_id}}" $one_in_twenty {{ 5% throttle; * pass; }}
  server {{ listen 127.0.0.1:{self.sporadic_port}; {logging} add_header Retry-After $retry_after always;
    location / {{ if ($one_in_seven = throttle) {{ return 429; }} return 201; }} }}
  limit_req_zone $quota_key zone=mixed:1m rate={self.mixed_quota}r/s;
  server {{ listen 127.0.0.1:{self.mixed_port}; {logging} add_header Retry-After $retry_after always;
    location / {{ if ($one_in_twenty = throttle) {{ return 429; }} limit_req zone=mixed burst={quota_burst(self.mixed_quota)} nodelay;
      limit_req_status 429; limit_req_log_level info; try_files /.none @accepted; }}
    location @accepted {{ return 201; }} }} }}
""")
        # nginx's workers run as nobody: they must reach www/ for try_files' stat to find nothing quietly.
        os.chmod(work, 0o711)
        os.makedirs(os.path.join(work, "www"), exist_ok=True)
        self.proc = subprocess.Popen(["nginx", "-p", work, "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.quiet, "nginx")

    def url(self, port):
        return send_url(port)

    def start_log(self):
        # nginx appends (O_APPEND), so truncating starts a fresh log; the last run's buffer was flushed.
        open(self.log, "w").close()

    def entries(self):
        """[(seconds, status)] logged since start_log."""
        return [(t, status) for t, status, _ in self.tagged_entries()]

    def tagged_entries(self):
        """[(seconds, status, the send's ServiceBusNotification-Tags or None)] logged since start_log."""
        time.sleep(1.5)  # the log buffer flushes every second
        out = []
        for line in open(self.log):
            parts = line.rstrip("\n").split(" ")
            if len(parts) < 3:
                continue
            # The HTTPS server's lines end in the session's reuse flag ("r" or ".") and the protocol;
            # a tag expression may hold spaces.
            tls = len(parts) == 5 and parts[3] in ("r", ".") and parts[4].startswith("HTTP/")
            tags = None if tls or parts[2] == "-" else " ".join(parts[2:])
            out.append((float(parts[0]), int(parts[1]), tags))
        return out

    def tls_connections(self):
        """(connections, of which resumed a session, the protocols spoken) in the HTTPS log since
        start_log; call after entries."""
        first, protocols = {}, set()
        for line in open(self.log):
            parts = line.split()
            if len(parts) == 5:
                first.setdefault(parts[2], parts[3])
                protocols.add(parts[4])
        return len(first), sum(1 for reused in first.values() if reused == "r"), " ".join(sorted(protocols))

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        if self.delay:
            self.delay.stop()


def make_certificates(work):
    """A throwaway CA and a server certificate it signed for 127.0.0.1: (CA file, cert, key)."""
    ca_key, ca, key, csr, cert = (os.path.join(work, n) for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    ext = os.path.join(work, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
                    "-subj", "/CN=hubcast bench CA"], **quiet)
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"], **quiet)
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
                    "-days", "2", "-extfile", ext], **quiet)
    os.chmod(key, 0o644)  # nginx's master reads it as root; the workers never do
    return ca, cert, key


def curl_floor(binary, url, connections, requests, work, ca=None):
    """libcurl alone, one process per core sharing `connections`: requests/s over the processes' common
    window, CPU µs per request of their loops (not their start-up). None, with a warning, if it failed:
    it is a reference, not a result to lose the run for. `ca`: the CA file to trust over HTTPS."""
    cores = os.cpu_count() or 1
    share = max(1, requests // cores)
    env = {**os.environ, "HUBCAST_SAS": "none", **({"CURL_FLOOR_CA_FILE": ca} if ca else {})}
    results = [None] * cores

    def one(i):
        path = os.path.join(work, f"curl-floor-{i}.out")
        try:
            code, timed_out, _, _ = measured([binary, url, str(share), str(max(1, connections // cores))], env, path, timeout=600)
            results[i] = json.loads(open(path).read()) if code == 0 and not timed_out else f"exit {code}, timed out {timed_out}"
        except (OSError, ValueError) as error:
            results[i] = repr(error)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(cores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if not all(isinstance(r, dict) for r in results):
        print(f"warning: the libcurl floor failed: {results}", file=sys.stderr)
        return None
    total = sum(r["requests"] for r in results)
    window = max(r["end"] for r in results) - min(r["start"] for r in results)
    return {"processes": cores, "requests": total, "non201": sum(r["non201"] for r in results),
            "requestsPerSec": round(total / max(window, 1e-6), 1),
            "cpuMicrosecondsPerRequest": round(sum(r["cpuSeconds"] for r in results) / total * 1e6, 1)}


def wrk(url, connections, seconds, sas):
    out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", os.path.join(ROOT, "benchmarks/lib/template-send.lua"), url],
                         capture_output=True, text=True, env={**os.environ, "HUBCAST_SAS": sas}).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"requestsPerSec": rate, "non2xx": int(errors.group(1)) if errors else 0}


class Emulator:
    def __init__(self, binary, work, extra=()):
        self.out_path = os.path.join(work, "emulator.out")
        self.proc = subprocess.Popen([binary, "emulator", "--hub", HUB, "--log-level", "warning", *extra],
                                     stdout=open(self.out_path, "w"), stderr=open(os.path.join(work, "emulator.err"), "w"))
        for _ in range(600):
            text = open(self.out_path).read()
            if text.strip():
                self.connection = text.splitlines()[0].strip()
                self.port = int(re.search(r"sb://127\.0\.0\.1:(\d+)/", self.connection).group(1))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise SystemExit("emulator did not start: " + open(os.path.join(work, "emulator.err")).read()[-500:])

    def deliveries(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/_emulator/deliveries", timeout=60) as r:
            return json.loads(r.read())["deliveries"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def sas_for(connection):
    return subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks/lib/sas.py"), HUB], input=connection,
                          capture_output=True, text=True, check=True).stdout.strip()


class Broker:
    """A dev broker (6 partitions per topic), optionally preloaded with `items` news items across the six categories."""

    def __init__(self, binary, work, items=0):
        self.binary = binary
        self.proc = subprocess.Popen([binary, "dev-broker", "--partitions", "6", "--log-level", "warning"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.bootstrap = self.proc.stdout.readline().strip()
        if not self.bootstrap:
            raise SystemExit("dev broker did not start")
        if not items:
            return
        path = os.path.join(work, f"items-{items}.jsonl")
        if not os.path.exists(path):
            with open(path, "w") as f:
                for n in range(items):
                    f.write(json.dumps({"id": f"bench-{n}", "headline": f"Earthquake of magnitude 6.1 strikes off the coast {n}",
                                        "category": CATEGORIES[n % 6]}) + "\n")
        self.publish(path)

    def publish(self, path):
        """`hubcast produce` of a JSON-lines file of news items."""
        subprocess.run([self.binary, "produce", "--brokers", self.bootstrap, "--file", path, "--log-level", "warning"],
                       check=True, stdout=subprocess.DEVNULL)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def measured(argv, env, stdout_path, timeout=None):
    """Runs a process to its end (SIGKILL after `timeout` s); returns (exit status, timed out, peak RSS MiB,
    CPU seconds) of it alone. Started through lib/peak_rss.py, so that this script's own memory does not
    count as the program's (see there)."""
    figures = stdout_path + ".rusage"
    # Runs reuse their file names: a figure left by an earlier run must never pass for this one's.
    try:
        os.unlink(figures)
    except FileNotFoundError:
        pass
    with open(stdout_path, "w") as out:
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "benchmarks/lib/peak_rss.py"), figures] + argv,
                                stdout=out, stderr=open(stdout_path + ".err", "w"), env=env)
        fired = threading.Event()

        def kill():
            fired.set()
            proc.terminate()  # peak_rss.py kills the program and still writes its figures
        killer = threading.Timer(timeout, kill) if timeout else None
        if killer:
            killer.start()
        proc.wait()
        if killer:
            killer.cancel()
    if not os.path.exists(figures):
        with open(stdout_path + ".err") as err:
            raise SystemExit(f"no figures from {argv[0]}: " + err.read()[-500:])
    with open(figures) as f:
        usage = json.load(f)
    return usage["exit"], fired.is_set(), round(usage["maxRssKiB"] / 1024, 1), usage["cpuSeconds"]


def send_url(port, tls=False):
    """A template send's URL on a loopback server (nginx, the emulator)."""
    return f"{'https' if tls else 'http'}://127.0.0.1:{port}/{HUB}/messages/?api-version=2020-06"


def connection_string(port, tls=False):
    return f"Endpoint=sb://127.0.0.1:{port}/;SharedAccessKeyName=bench;SharedAccessKey=bench-key" + ("" if tls else ";UseDevelopmentEmulator=true")


class Programs:
    """The argv of each measured program for a bootstrap and a sink port."""

    def __init__(self, hubcast, go, python, connections, work, baseline=None):
        self.hubcast, self.go, self.python, self.connections, self.work = hubcast, go, python, connections, work
        self.baseline = baseline

    def argv(self, program, bootstrap, port, ca=None):
        url, cs = send_url(port, tls=bool(ca)), connection_string(port, tls=bool(ca))
        if program.startswith("hubcast"):
            # hubcast-noledger: the same without the delivered-sends ledger, to measure what it costs.
            ledger = ["--ledger-topic", "none"] if program == "hubcast-noledger" else []
            # hubcast-baseline: the build given with --baseline, side by side with this one.
            binary = self.baseline if program == "hubcast-baseline" else self.hubcast
            return [binary, "run", *ledger, "--brokers", bootstrap, "--hub", HUB, "--skip-hub-check", "--concurrency", str(self.connections),
                    "--exit-when-idle", "2", "--metrics-interval", "1", "--dlq", f"file:{self.work}/dlq.jsonl", "--log-level", "warning",
                    *(["--ca-file", ca] if ca else [])]
        if program == "go":
            return [self.go, "--brokers", bootstrap, "--url", url, "--connection-string", cs, "--concurrency", str(self.connections)]
        return [self.python, os.path.join(ROOT, "benchmarks/peers/python_peer.py"), "--brokers", bootstrap, "--url", url,
                "--connection-string", cs, "--concurrency", str(self.connections)]

    def env(self, program, port, ca=None):
        if program.startswith("hubcast"):
            return {**os.environ, "HUBCAST_CONNECTION_STRING": connection_string(port, tls=bool(ca))}
        # Go's crypto/x509 and Python's ssl read the trusted CAs from SSL_CERT_FILE.
        return {**os.environ, **({"SSL_CERT_FILE": ca} if ca else {})}


def sink_run(programs, program, items, nginx, port, timeout=None, ca=None):
    """Runs one program against a broker preloaded with `items` and one of nginx's logging ports.
    Returns the program's summary (last stdout line as JSON, if any), the sink's log, and wait4's figures."""
    broker = Broker(programs.hubcast, programs.work, items)
    try:
        nginx.start_log()
        out = os.path.join(programs.work, f"{program}.out")
        # The broker's CPU too: on 2 cores it competes with the program (the ledger's records,
        # the consumer's fetches), where a real cluster runs on machines of its own.
        broker_cpu = process_cpu_seconds(broker.proc.pid)
        code, timed_out, rss, cpu = measured(programs.argv(program, broker.bootstrap, port, ca), programs.env(program, port, ca), out, timeout)
        broker_cpu = process_cpu_seconds(broker.proc.pid) - broker_cpu
        log = nginx.entries()
    finally:
        broker.stop()
    return last_line(out), log, {"exit": code, "timedOut": timed_out, "peakRssMiB": rss, "cpuSeconds": round(cpu, 3),
                                 "brokerCpuSeconds": round(broker_cpu, 3)}


def process_cpu_seconds(pid):
    """User and system CPU a running process has used so far, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def last_line(path):
    """A program's last stdout line as JSON (its summary, or hubcast's final metrics line); {} if none."""
    lines = open(path).read().splitlines()
    try:
        return json.loads(lines[-1]) if lines else {}
    except ValueError:
        return {}


def per_second(log):
    """[[accepted, throttled]] in each whole second from the first request: where a run lost its pace."""
    if not log:
        return []
    start = min(t for t, _ in log)
    seconds = [[0, 0] for _ in range(int(max(t for t, _ in log) - start) + 1)]
    for t, status in log:
        if status in ACCEPTED:
            seconds[int(t - start)][0] += 1
        elif status == 429:
            seconds[int(t - start)][1] += 1
    return seconds


def accepted_pace(log):
    """From the sink's log: the accepted stamps (sorted), the window from the first request to the
    last accepted one, accepted per second over it and over its second half (the pace once the
    cold start is behind it), and the count of each status."""
    statuses = collections.Counter(s for _, s in log)
    accepted = sorted(t for t, s in log if s in ACCEPTED)
    start = min(t for t, _ in log) if log else 0.0
    window = (accepted[-1] - start) if len(accepted) > 1 else 0.0
    goodput = len(accepted) / window if window > 0 else 0.0
    half = start + window / 2
    settled = sum(1 for t in accepted if t >= half) / (window / 2) if window > 0 else 0.0
    return accepted, window, goodput, settled, statuses


def unthrottled(programs, program, items, nginx, wrk_nginx, tls=False):
    port, ca = (nginx.tls_port, nginx.ca) if tls else (nginx.logged, None)
    summary, log, proc = sink_run(programs, program, items, nginx, port, ca=ca)
    sent = summary.get("sent", 0)
    if proc["exit"] != 0 or sent != items:
        raise SystemExit(f"{program} exited {proc['exit']} having sent {sent} of {items}")
    stamps = [t for t, _ in log]
    rate = len(stamps) / max(max(stamps) - min(stamps), 0.001) if len(stamps) > 1 else 0.0
    row = {"program": program, "items": items, "sent": sent, "sinkRequests": len(stamps), "sendsPerSec": round(rate, 1),
           "ratioToWrk": round(rate / wrk_nginx, 3) if wrk_nginx else None,
           "cpuMicrosecondsPerSend": round(proc["cpuSeconds"] / sent * 1e6, 1), "peakRssMiB": proc["peakRssMiB"], "cpuSeconds": proc["cpuSeconds"],
           "brokerCpuMicrosecondsPerSend": round(proc["brokerCpuSeconds"] / sent * 1e6, 1)}
    if tls:
        row["tlsConnections"], row["tlsResumed"], row["protocol"] = nginx.tls_connections()
    if program.startswith("hubcast"):
        row["sasTokensMinted"] = summary.get("sasTokensMinted")
    return row


def quota_run(programs, program, quota, items, nginx, timeout, port=None):
    summary, log, proc = sink_run(programs, program, items, nginx, port or nginx.quota_ports[quota], timeout)
    accepted, window, goodput, settled, statuses = accepted_pace(log)
    row = {"program": program, "quota": quota, "burst": quota_burst(quota), "items": items, "accepted": len(accepted),
           "settledToQuota": round(settled / quota, 3) if quota else None,
           "requests": len(log), "throttled": statuses.get(429, 0), "otherStatuses": {str(k): v for k, v in statuses.items() if k not in (200, 201, 429)},
           "goodputPerSec": round(goodput, 1), "goodputToQuota": round(goodput / quota, 3),
           "throttledPct": round(100 * statuses.get(429, 0) / max(1, len(log)), 2),
           "secondsToDeliverAll": round(window, 2) if len(accepted) >= items else None, "idealSeconds": round(items / quota, 2),
           "timedOut": proc["timedOut"], "exit": proc["exit"], "cpuSeconds": proc["cpuSeconds"], "peakRssMiB": proc["peakRssMiB"]}
    if program == "hubcast" and summary:
        row["deadLettered"] = summary.get("deadLettered")
    return row


class Tansu:
    """Tansu (`make test` installs it into .build-kafka/): a Kafka-protocol broker that coordinates
    consumer groups as a real cluster does, where the dev broker stops every member for seconds at
    each join and leave. Everything that talks to it loads the newer librdkafka next to it."""
    DIR = os.path.join(ROOT, ".build-kafka")

    @classmethod
    def available(cls):
        return os.access(os.path.join(cls.DIR, "bin/tansu"), os.X_OK)

    @classmethod
    def chosen(cls, broker):
        """Whether a section's --*-broker choice (auto, tansu or dev) runs it on Tansu."""
        return broker == "tansu" or (broker == "auto" and cls.available())

    def __init__(self, work):
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        self.bootstrap = f"127.0.0.1:{port}"
        self.env = {"LD_LIBRARY_PATH": os.path.join(self.DIR, "lib")}
        tansu = os.path.join(self.DIR, "bin/tansu")
        self.proc = subprocess.Popen([tansu, "broker", "--listener-url", url, "--advertised-listener-url", url,
                                      "--storage-engine", "memory://tansu/"], stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(work, "tansu.err"), "w"))
        wait_for_port(port, "tansu")
        for topic, partitions in [*(("news." + c.lower(), 6) for c in CATEGORIES), ("news.deadletter", 1), ("hubcast.quota", 1)]:
            subprocess.run([tansu, "topic", "create", topic, "--broker", url, "--partitions", str(partitions)],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def produce_unkeyed(broker, items, work):
    """`items` news items across the six category topics, without keys (as kcat sends them by
    default): librdkafka's sticky partitioner loads the partitions unevenly, as real topics are."""
    per_topic = collections.defaultdict(list)
    for n in range(items):
        category = CATEGORIES[n % 6]
        per_topic[category].append(json.dumps({"id": f"group-{n}", "headline": f"Flood warning issued for the valley {n}",
                                               "category": category}))
    for category, lines in per_topic.items():
        path = os.path.join(work, f"unkeyed-{category}.jsonl")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run(["kcat", "-P", "-b", broker.bootstrap, "-t", "news." + category.lower(), "-l", path], check=True,
                       env={**os.environ, **getattr(broker, "env", {})})


def group_run(programs, nginx, port, quota, items, instances, event=None, tansu=False):
    """`instances` hubcast runs in one group against the quota at `port`. event: "stop" sends SIGTERM
    halfway to the instance with the most items left to read; "join" starts one more halfway. On Tansu
    with the cooperative-sticky assignor (as on a real cluster) or on the dev broker."""
    broker = Tansu(programs.work) if tansu else Broker(programs.hubcast, programs.work)
    procs, outs = [], []
    try:
        produce_unkeyed(broker, items, programs.work)
        nginx.start_log()

        def start(i):
            out = os.path.join(programs.work, f"group-{i}.out")
            argv = programs.argv("hubcast", broker.bootstrap, port)
            # A member waits for its first assignment while the group rebalances (seconds on the dev
            # broker): an idle exit sooner would leave before it got any partition. Where one is
            # stopped halfway, the others wait past the stop: with items unevenly spread over the
            # partitions (no keys), a member whose partitions ran dry left before it, and the
            # stopped member's partitions found nobody to take them (22,839 of 60,000 sent).
            idle = 10 if event != "stop" else int(items / quota / 2) + 10
            argv[argv.index("--exit-when-idle") + 1] = str(idle)
            if tansu:
                argv += ["--kafka-property", "partition.assignment.strategy=cooperative-sticky"]
            env = {**programs.env("hubcast", port), **getattr(broker, "env", {})}
            procs.append(subprocess.Popen(argv, stdout=open(out, "w"), stderr=open(out + ".err", "w"), env=env))
            outs.append(out)
        for i in range(instances):
            start(i)
        t0 = time.time()
        at = None
        if event:
            time.sleep(items / quota / 2)
            at = time.time()
            if event == "stop":
                # The one with the most items still to read, so that the others have its partitions'
                # backlog to take over (items without keys spread unevenly: the first instance had
                # often read all of its partitions by halfway, and stopping it handed nothing over).
                lags = [last_line(out).get("lag", 0) for out in outs]
                stopped = max(range(instances), key=lambda i: lags[i])
                procs[stopped].send_signal(signal.SIGTERM)
                # Until it exits, the stopped instance's own last sends count at the sink too.
                stopped_exit = {}
                waiter = threading.Thread(target=lambda: (procs[stopped].wait(), stopped_exit.setdefault("at", time.time())), daemon=True)
                waiter.start()
            else:
                start(instances)
        deadline = t0 + max(120.0, 8 * items / quota)
        for proc in procs:
            try:
                proc.wait(timeout=max(1.0, deadline - time.time()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log = nginx.entries()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        broker.stop()
    accepted, window, goodput, settled, statuses = accepted_pace(log)
    sent = [last_line(out).get("sent", 0) for out in outs]
    row = {"instances": instances, "event": event, "broker": "tansu" if tansu else "dev", "quota": quota, "items": items,
           "accepted": len(accepted), "requests": len(log),
           "goodputToQuota": round(goodput / quota, 3), "settledToQuota": round(settled / quota, 3),
           "throttledPct": round(100 * statuses.get(429, 0) / max(1, len(log)), 2),
           "shares": [round(n / max(1, sum(sent)), 2) for n in sent], "sentTwice": max(0, sum(sent) - items),
           "exits": [p.returncode for p in procs], "perSecond": per_second(log)}
    if at is not None:
        if event == "stop":
            def at_quota(earliest, steps):
                """Seconds from the stop to the end of the first whole second (in quarter-second steps,
                `steps` of them, starting at or after `earliest`) in which the sink accepted 0.9× the quota."""
                for k in range(steps):
                    lo = at + k * 0.25
                    if lo >= earliest and sum(1 for t in accepted if lo <= t < lo + 1) >= 0.9 * quota:
                        return round(lo + 1 - at, 2)
                return None
            row["secondsToQuotaAfterStop"] = at_quota(at, 30)
            # The same for the others alone: windows that start once the stopped instance has exited
            # (a rebalance may leave them idle after its drain carried the first second).
            exited = stopped_exit.get("at")
            row["stoppedExitedAfter"] = round(exited - at, 2) if exited else None
            row["stopped"], row["lagsAtStop"] = stopped, lags
            row["secondsToQuotaByOthers"] = at_quota(exited, 60) if exited else None
            # A second at 0.9x is not the end of it: the stopped one's partitions reach the others
            # only when the group has rebalanced, and until then the others may have nothing left.
            # What the 10 s after the stop carried, and the whole seconds in it below half the quota.
            after = [sum(1 for t in accepted if at + k <= t < at + k + 1) for k in range(10)]
            row["quotaOver10sAfterStop"] = round(sum(after) / (10 * quota), 3)
            row["secondsBelowHalfAfterStop"] = sum(1 for n in after if n < 0.5 * quota)
        else:
            around = [(t, st) for t, st in log if at - 5 <= t < at + 5]
            row["throttledPctAroundJoin"] = round(100 * sum(1 for _, st in around if st == 429) / max(1, len(around)), 2)
    return row


def wait_until_sending(out, proc, seconds=60):
    """Until hubcast's metrics line says it sent something (it has its partitions and the backlog goes)."""
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None:
        for line in open(out).read().splitlines():
            try:
                if json.loads(line).get("sent", 0) > 0:
                    return True
            except ValueError:
                pass
        time.sleep(0.1)
    return False


def backlog_run(binary, python, nginx, port, work, backlog, trickle, seconds, max_rate=None, backlog_priority="bulk"):
    """A backlog of `backlog` Sports items on the dev broker, `hubcast run` started on it, then the
    `trickle` categories each get `rate` items a second for `seconds` while it drains (each addressed
    to a user of its own, so nginx's log names it): each trickled item's end-to-end latency (its Kafka
    timestamp → nginx's log of its send) and the backlog's drain rate.
    trickle: {category: (items per second, priority or None)}."""
    broker = Broker(binary, work)
    hubcast = None
    try:
        path = os.path.join(work, f"backlog-{backlog}-{backlog_priority}.jsonl")
        with open(path, "w") as f:
            for n in range(backlog):
                item = {"id": f"backlog-{n}", "headline": f"Overnight results, fixture {n}", "category": "Sports"}
                if backlog_priority:
                    item["priority"] = backlog_priority
                f.write(json.dumps(item) + "\n")
        broker.publish(path)
        nginx.start_log()
        out = os.path.join(work, "backlog-run.out")
        # Idle for 10 s: one trickled item a second must not find it gone.
        argv = [binary, "run", "--brokers", broker.bootstrap, "--hub", HUB, "--skip-hub-check", "--exit-when-idle", "10",
                "--metrics-interval", "1", "--dlq", f"file:{work}/backlog-dlq.jsonl", "--log-level", "warning",
                *(["--max-rate", str(max_rate)] if max_rate else [])]
        hubcast = subprocess.Popen(argv, stdout=open(out, "w"), stderr=open(out + ".err", "w"),
                                   env={**os.environ, "HUBCAST_CONNECTION_STRING": connection_string(port)})
        if not wait_until_sending(out, hubcast):
            raise SystemExit("hubcast sent nothing: " + open(out + ".err").read()[-500:])
        items = []
        for category, (rate, priority) in trickle.items():
            for k in range(int(seconds * rate)):
                user = f"{category[:3].lower()}-{k}"
                item = {"id": user, "headline": f"Live: {category} update {k}", "category": category, "users": [user]}
                if priority:
                    item["priority"] = priority
                items.append([k / rate, "news." + category.lower(), user, item])
        produced = subprocess.run([python, os.path.join(ROOT, "benchmarks/lib/schedule_producer.py")],
                                  input=json.dumps({"brokers": broker.bootstrap, "items": items}),
                                  capture_output=True, text=True, timeout=seconds + 120)
        if produced.returncode != 0:
            raise SystemExit("producer failed: " + produced.stderr[-500:])
        sent_at = {u: ms / 1000 for u, ms in json.loads(produced.stdout)["timestamps"].items()}
        try:
            hubcast.wait(timeout=max(120.0, 4 * backlog / (max_rate or 2000)))
        except subprocess.TimeoutExpired:
            hubcast.kill()
            hubcast.wait()
        log = nginx.tagged_entries()
    finally:
        if hubcast and hubcast.poll() is None:
            hubcast.kill()
        broker.stop()
    accepted = {}
    for t, status, tags in log:
        if status in ACCEPTED and tags and tags.startswith("username:"):
            accepted.setdefault(tags[len("username:"):], t)
    backlog_done = sorted(t for t, status, tags in log if status in ACCEPTED and tags == "Sports")
    drain_end = backlog_done[-1] if backlog_done else None
    rows = {}
    for category, (rate, priority) in trickle.items():
        users = [u for u in sent_at if u.startswith(category[:3].lower() + "-")]
        every = [(accepted[u] - sent_at[u]) * 1000 for u in users if u in accepted]
        during = [(accepted[u] - sent_at[u]) * 1000 for u in users if u in accepted and drain_end is not None and sent_at[u] <= drain_end]
        rows[category] = {"priority": priority or "normal", "items": len(users), "delivered": sum(1 for u in users if u in accepted),
                          "duringBacklog": len(during),
                          "p50Ms": round(percentile(every, 0.5), 1) if every else None,
                          "p99Ms": round(percentile(every, 0.99), 1) if every else None,
                          "maxMs": round(max(every), 1) if every else None,
                          "duringBacklogP99Ms": round(percentile(during, 0.99), 1) if during else None}
    span = (backlog_done[-1] - backlog_done[0]) if len(backlog_done) > 1 else 0
    return {"backlog": backlog, "backlogDelivered": len(backlog_done), "maxRate": max_rate,
            "backlogDrainPerSec": round(len(backlog_done) / span, 1) if span > 0 else None,
            "backlogDrainSeconds": round(span, 2), "trickle": rows, "exit": hubcast.returncode if hubcast else None}


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else None


def latency_run(binary, python, rate, seconds, connections, work, tansu=False):
    """hubcast run → hubcast emulator while a producer publishes `rate` items/s for `seconds`, through
    Tansu or the dev broker (whose log slows it down past ~4,000 items/s)."""
    # What is measured is hubcast's path, not the emulator's fan-out: at high rates one device per
    # category (600 devices at 5,000 items/s are 500,000 renderings a second on the same 2 cores).
    devices = "600" if rate <= 100 else "6"
    emulator = Emulator(binary, work, ["--devices", devices, "--sample-payloads", "1", "--keep-deliveries", "1000000"])
    broker = Tansu(work) if tansu else Broker(binary, work)
    hubcast = None
    try:
        env = {**os.environ, "HUBCAST_CONNECTION_STRING": emulator.connection, **getattr(broker, "env", {})}
        hubcast = subprocess.Popen([binary, "run", "--brokers", broker.bootstrap, "--hub", HUB, "--concurrency", str(connections),
                                    "--exit-when-idle", "10", "--metrics-interval", "1", "--dlq", f"file:{work}/latency-dlq.jsonl",
                                    "--log-level", "warning"], stdout=subprocess.PIPE, stderr=open(os.path.join(work, "latency.err"), "w"),
                                   env=env, text=True)
        lines, first_line = [], threading.Event()

        def read():
            for line in hubcast.stdout:
                try:
                    lines.append((time.time(), json.loads(line)))
                    first_line.set()
                except ValueError:
                    pass
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        if not first_line.wait(120):
            raise SystemExit("hubcast run printed no metrics line in 120 s")
        plan = latency_plan(rate, seconds)
        produced = subprocess.run([python, os.path.join(ROOT, "benchmarks/lib/schedule_producer.py")],
                                  input=json.dumps({"brokers": broker.bootstrap, "items": plan}),
                                  capture_output=True, text=True, timeout=seconds + 120)
        if produced.returncode != 0:
            raise SystemExit("producer failed: " + produced.stderr[-500:])
        producer = json.loads(produced.stdout)
        hubcast.wait(timeout=120)
        reader.join(10)
        deliveries = emulator.deliveries()
        with open(os.path.join(work, f"latency-{rate:g}.out"), "w") as out:
            out.writelines(f"{t:.3f} {json.dumps(m)}\n" for t, m in lines)
    finally:
        if hubcast and hubcast.poll() is None:
            hubcast.kill()
            hubcast.wait()
        broker.stop()
        emulator.stop()

    start, end = producer["startMs"] / 1000, producer["startMs"] / 1000 + seconds
    steady_from = start + WARM_UP_SECONDS
    # A line at arrival time T covers about (T − 1 s, T]; keep those wholly inside the steady part.
    steady = [m for t, m in lines if not m.get("final") and t - 1 >= steady_from and t - 1 <= end]
    per_category, all_p50, all_p99 = {}, [], []
    for c in CATEGORIES:
        p50s = [m["endToEndMs"][c]["p50"] for m in steady if c in m.get("endToEndMs", {})]
        p99s = [m["endToEndMs"][c]["p99"] for m in steady if c in m.get("endToEndMs", {})]
        if p50s:
            per_category[c] = {"p50": round(statistics.median(p50s), 2), "p99": max(p99s), "intervals": len(p50s)}
            all_p50 += p50s
            all_p99 += p99s
    # The exact figure: the emulator's accept time − the moment of the produce call (microseconds,
    # where the Kafka timestamp is whole milliseconds), items produced after the warm-up.
    exact = []
    produced_at = producer.get("producedAt") or {k: v / 1000 for k, v in producer["timestamps"].items()}
    for d in deliveries:
        for payload in d["payloads"]:
            m = ID_IN_PAYLOAD.search(payload)
            if m and m.group(1) in produced_at:
                ts = produced_at[m.group(1)]
                if ts >= steady_from:
                    exact.append((d["at"] - ts) * 1000)
    final = next((m for _, m in reversed(lines) if m.get("final")), {})
    return {"rate": rate, "seconds": seconds, "broker": "tansu" if tansu else "dev", "warmUpSeconds": WARM_UP_SECONDS,
            "produced": producer["produced"],
            "sent": final.get("sent"), "steadyIntervals": len(steady),
            "metricsP50Ms": round(statistics.median(all_p50), 2) if all_p50 else None, "metricsP99Ms": max(all_p99) if all_p99 else None,
            "perCategory": per_category,
            "emulatorP50Ms": round(percentile(exact, 0.5), 2) if exact else None, "emulatorP99Ms": round(percentile(exact, 0.99), 2) if exact else None,
            "emulatorMaxMs": round(max(exact), 2) if exact else None,
            "emulatorItems": len(exact), "sendLatencyMs": final.get("latencyMs")}


def latency_plan(rate, seconds):
    """The latency runs' schedule for lib/schedule_producer.py: items spread evenly over the categories."""
    plan = []
    for n in range(int(rate * seconds)):
        category, item_id = CATEGORIES[n % 6], f"lat-{n}"
        plan.append([n / rate, "news." + category.lower(), item_id,
                     {"id": item_id, "headline": f"Latency item {item_id} strikes off the coast", "category": category}])
    return plan


def kafka_floor_run(binary, python, rate, seconds, work, tansu=False):
    """Kafka alone: the latency run's schedule through a fresh broker of the same kind to a consumer that
    does nothing (lib/kafka_floor.py): the part of the end-to-end figure that is the broker's, on this machine."""
    broker = Tansu(work) if tansu else Broker(binary, work)
    try:
        done = subprocess.run([python, os.path.join(ROOT, "benchmarks/lib/kafka_floor.py")],
                              input=json.dumps({"brokers": broker.bootstrap, "topics": ["news." + c.lower() for c in CATEGORIES],
                                                "items": latency_plan(rate, seconds)}),
                              capture_output=True, text=True, timeout=seconds + 240)
    finally:
        broker.stop()
    if done.returncode != 0:
        raise SystemExit("the Kafka-alone run failed: " + done.stderr[-500:])
    floor = json.loads(done.stdout)
    steady_from = floor["startMs"] / 1000 + WARM_UP_SECONDS
    after = [ms for k, ms in floor["arrivedAfterMs"].items() if floor["producedAt"][k] >= steady_from]
    return {"produced": floor["produced"], "received": floor["received"], "items": len(after),
            "p50Ms": round(percentile(after, 0.5), 2) if after else None, "p99Ms": round(percentile(after, 0.99), 2) if after else None,
            "maxMs": round(max(after), 2) if after else None}


def latency_runs(result):
    """The latency runs of a result: a list now, one run in results written before."""
    lat = result.get("latency")
    return lat if isinstance(lat, list) else [lat] if lat else []


def peer_python():
    venv = os.path.join(ROOT, "benchmarks/.venv")
    python = os.path.join(venv, "bin/python")
    if not os.path.exists(python):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "confluent-kafka==2.16.1", "aiohttp==3.14.5"], check=True)
    return python


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


def goals(result):
    """[(goal, measured text, PASS/MISS/–)]."""
    out = []
    verdict = lambda ok: "–" if ok is None else ("PASS" if ok else "MISS")
    for q in result.get("quota", {}).get("hubcast", []):
        settled = q.get("settledToQuota") or 0
        ok = (q["goodputToQuota"] >= GOAL_QUOTA_GOODPUT and settled >= GOAL_QUOTA_SETTLED
              and q["throttledPct"] <= GOAL_QUOTA_THROTTLED_PCT and not q["timedOut"])
        out.append((f"quota {q['quota']:,}/s: ≥ {GOAL_QUOTA_GOODPUT}× (second half ≥ {GOAL_QUOTA_SETTLED}×), ≤ {GOAL_QUOTA_THROTTLED_PCT:g}% throttled",
                    f"{q['goodputToQuota']:.2f}× ({settled:.2f}×), {q['throttledPct']:.1f}%" + (" (timed out)" if q["timedOut"] else ""), verdict(ok)))
    for r in result.get("sporadic", {}).get("hubcast", []):
        if r["quota"] is None:
            done = r["secondsToDeliverAll"]
            out.append((f"one in seven throttled: {r['items']} items all accepted within {GOAL_SPORADIC_SECONDS:g} s",
                        "not all" if done is None else f"{done:.1f} s", verdict(done is not None and done <= GOAL_SPORADIC_SECONDS)))
        else:
            out.append((f"{r['kind']}: goodput ≥ {GOAL_MIXED_GOODPUT}× quota", f"{r['goodputToQuota']:.2f}×",
                        verdict(r["goodputToQuota"] >= GOAL_MIXED_GOODPUT and not r["timedOut"])))
    tls = {r["program"]: r for r in result.get("tls", [])}
    if "hubcast" in tls:
        t = tls["hubcast"]
        limit = result.get("connections", 64)
        out.append((f"HTTPS: TLS connections (handshakes) ≤ the concurrency limit ({limit})", f"{t['tlsConnections']}",
                    verdict(t["tlsConnections"] <= limit)))
        # The sink offers HTTP/2 as the hub does; a client that takes a stream reset after its
        # answer for a failure sends the item again.
        out.append(("HTTPS: each item sent once (requests at the sink = items)", f"{t['sinkRequests']:,} for {t['items']:,}",
                    verdict(t["sinkRequests"] == t["items"])))
        if "go" in tls:
            g = tls["go"]
            out.append(("HTTPS: sends/s ≥ Go's, CPU per send ≤ Go's",
                        f"{t['sendsPerSec'] / g['sendsPerSec']:.2f}×, {t['cpuMicrosecondsPerSend'] / g['cpuMicrosecondsPerSend']:.2f}×",
                        verdict(t["sendsPerSec"] >= g["sendsPerSec"] and t["cpuMicrosecondsPerSend"] <= g["cpuMicrosecondsPerSend"])))
    rows = {r["program"]: r for r in result.get("unthrottled", [])}
    h, g = rows.get("hubcast"), rows.get("go")
    if h and g:
        rate = h["sendsPerSec"] / g["sendsPerSec"]
        cpu = h["cpuMicrosecondsPerSend"] / g["cpuMicrosecondsPerSend"]
        out.append((f"sends/s ≥ {GOAL_VS_GO_RATE}× Go", f"{rate:.2f}×", verdict(rate >= GOAL_VS_GO_RATE)))
        out.append((f"CPU per send ≤ {GOAL_VS_GO_CPU}× Go", f"{cpu:.2f}×", verdict(cpu <= GOAL_VS_GO_CPU)))
    floor = (result.get("ceiling") or {}).get("curlFloor")
    if h and floor:
        cpu = h["cpuMicrosecondsPerSend"] / floor["cpuMicrosecondsPerRequest"]
        out.append((f"CPU per send ≤ {GOAL_VS_FLOOR_CPU}× libcurl alone ({floor['cpuMicrosecondsPerRequest']:.1f} µs)",
                     f"{cpu:.2f}×", verdict(cpu <= GOAL_VS_FLOOR_CPU)))
    if h and h.get("ratioToWrk") is not None:
        out.append((f"sends/s ≥ {GOAL_VS_WRK}× wrk", f"{h['ratioToWrk']:.2f}×", verdict(h["ratioToWrk"] >= GOAL_VS_WRK)))
    for lat in latency_runs(result):
        # The emulator's exact figure (0.01 ms), where hubcast's own histograms step by whole ms.
        p50, p99 = lat["emulatorP50Ms"], lat["emulatorP99Ms"]
        # Beside it, the same schedule through Kafka alone: a goal below that is the broker's to miss.
        k = lat.get("kafkaAlone")
        if lat["rate"] >= GOAL_E2E_HIGH_RATE:
            ok = None if p99 is None else p99 <= GOAL_E2E_HIGH_P99_MS
            out.append((f"end-to-end at {lat['rate']:,.0f}/s p99 ≤ {GOAL_E2E_HIGH_P99_MS:g} ms",
                        f"{p99} ms" + (f" (Kafka alone {k['p99Ms']} ms)" if k else ""), verdict(ok)))
        else:
            ok = None if p50 is None else p50 <= GOAL_E2E_P50_MS and p99 <= GOAL_E2E_P99_MS
            out.append((f"end-to-end at {lat['rate']:g}/s p50 ≤ {GOAL_E2E_P50_MS:g} ms, p99 ≤ {GOAL_E2E_P99_MS:g} ms",
                        f"{p50} ms, {p99} ms" + (f" (Kafka alone {k['p50Ms']}, {k['p99Ms']} ms)" if k else ""), verdict(ok)))
    group = result.get("group", [])
    alone = next((r for r in group if r["instances"] == 1 and not r["event"]), None)
    for r in group:
        if r["event"] is None and r["instances"] > 1:
            ok = (r["goodputToQuota"] >= GOAL_GROUP_GOODPUT and r["settledToQuota"] >= GOAL_GROUP_SETTLED
                  and r["throttledPct"] <= GOAL_GROUP_THROTTLED_PCT and (alone is None or r["goodputToQuota"] >= alone["goodputToQuota"]))
            out.append((f"{r['instances']} instances: ≥ {GOAL_GROUP_GOODPUT}× ({GOAL_GROUP_SETTLED}× last half), ≤ {GOAL_GROUP_THROTTLED_PCT:g}%, ≥ one alone",
                        f"{r['goodputToQuota']:.2f}× ({r['settledToQuota']:.2f}×), {r['throttledPct']:.1f}%"
                        + (f" vs {alone['goodputToQuota']:.2f}×" if alone else ""), verdict(ok)))
        elif r["event"] == "stop":
            # The others alone (results from before this figure existed: every instance's sends).
            s = r.get("secondsToQuotaByOthers", r.get("secondsToQuotaAfterStop"))
            sent = r["accepted"] - (r.get("sentTwice") or 0)  # items, each once
            out.append((f"one of {r['instances']} stopped: the others at 0.9× the quota within {GOAL_GROUP_LEAVE_SECONDS:g} s",
                        ("never" if s is None else f"{s:.2f} s")
                        + (f"; {sent:,} of {r['items']:,} sent" if sent < r["items"] else ""),
                        verdict(s is not None and s <= GOAL_GROUP_LEAVE_SECONDS and sent >= r["items"])))
        elif r["event"] == "join":
            j = r.get("throttledPctAroundJoin")
            out.append((f"one joins {r['instances']}: ≤ {GOAL_GROUP_JOIN_THROTTLED_PCT:g}% throttled over the 10 s around it", f"{j:.2f}%",
                        verdict(j is not None and j <= GOAL_GROUP_JOIN_THROTTLED_PCT)))
    for build in result.get("priority", {}).get("builds", [])[:1]:
        for run in build["runs"]:
            if run["kind"] == "fairness":
                during = [r["duringBacklogP99Ms"] for r in run["trickle"].values() if r["duringBacklogP99Ms"] is not None]
                worst = max(during) if during else None
                where = f"at {run['maxRate']:g}/s" if run["maxRate"] else "unthrottled"
                # No item produced while the flood drained: nothing was measured, so no verdict.
                out.append((f"fairness, {where}: five categories' p99 ≤ {GOAL_FAIR_P99_MS:g} ms while one drains {run['backlog']:,}",
                            "none produced during the flood" if worst is None else f"{worst:.1f} ms",
                            verdict(None if worst is None else worst <= GOAL_FAIR_P99_MS
                                    and all(r["delivered"] == r["items"] for r in run["trickle"].values()))))
                continue
            b = run["trickle"]["World"]
            goal = GOAL_BREAKING_QUOTA_P99_MS if run["maxRate"] else GOAL_BREAKING_P99_MS
            where = f"at {run['maxRate']:g}/s" if run["maxRate"] else "unthrottled"
            out.append((f"breaking behind {run['backlog']:,} bulk, {where}: p99 ≤ {goal:g} ms, all delivered",
                        f"{b['p99Ms']} ms, {b['delivered']}/{b['items']} and {run['backlogDelivered']:,}/{run['backlog']:,}",
                        verdict(b["p99Ms"] is not None and b["p99Ms"] <= goal and b["delivered"] == b["items"] and run["backlogDelivered"] == run["backlog"])))
        base = result["priority"]["builds"][1] if len(result["priority"]["builds"]) > 1 else None
        if base:
            new_rate = next(r["backlogDrainPerSec"] for r in build["runs"] if r["kind"] == "breaking" and not r["maxRate"])
            old_rate = next(r["backlogDrainPerSec"] for r in base["runs"] if r["kind"] == "breaking" and not r["maxRate"])
            kept = new_rate / old_rate if old_rate else None
            out.append((f"backlog drain rate unthrottled ≥ {GOAL_DRAIN_KEPT}× the build before", "–" if kept is None else f"{kept:.2f}×",
                        verdict(None if kept is None else kept >= GOAL_DRAIN_KEPT)))
    rss = [r["peakRssMiB"] for r in result.get("memory", [])] + ([h["peakRssMiB"]] if h else [])
    if rss and g:
        out.append(("peak RSS ≤ the Go sender's", f"{max(rss)} MiB vs {g['peakRssMiB']} MiB",
                    verdict(max(rss) <= g["peakRssMiB"])))
    elif rss:
        out.append((f"peak RSS ≤ {GOAL_RSS_MIB:g} MiB", f"{max(rss)} MiB", verdict(max(rss) <= GOAL_RSS_MIB)))
    memory = sorted(result.get("memory", []), key=lambda r: r["items"])
    if len(memory) > 1:
        growth = memory[-1]["peakRssMiB"] / memory[0]["peakRssMiB"] - 1
        out.append((f"RSS flat (±{GOAL_RSS_FLAT:.0%}) from {memory[0]['items']:,} to {memory[-1]['items']:,} items",
                    f"{growth:+.1%}", verdict(abs(growth) <= GOAL_RSS_FLAT)))
    return out


def print_priority(result):
    builds = result.get("priority", {}).get("builds", [])
    if not builds:
        return
    print("\nBreaking news behind a backlog, and fairness (end-to-end: item written → its send logged by nginx)")
    print(f"{'build':<10}{'run':<34}{'trickled':<24}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'delivered':>11}{'backlog/s':>11}")
    for build in builds:
        for run in build["runs"]:
            where = f", {run['maxRate']:g}/s" if run["maxRate"] else ", unthrottled"
            what = (f"{run['backlog']:,} bulk" if run["kind"] == "breaking" else f"flood {run['backlog']:,}") + where
            for category, r in run["trickle"].items():
                print(f"{build['name']:<10}{what:<34}{category + ' ' + r['priority']:<24}{r['p50Ms'] or '-':>9}{r['p99Ms'] or '-':>9}"
                      f"{r['maxMs'] or '-':>9}{str(r['delivered']) + '/' + str(r['items']):>11}{run['backlogDrainPerSec'] or '-':>11}")


def print_tls(result):
    if not result.get("tls"):
        return
    print(f"\nOver HTTPS (nginx, a throwaway CA trusted by each program), {result['tls'][0]['items']:,} items each")
    print(f"{'':<9}{'sends/s':>10}{'CPU µs/send':>13}{'peak RSS MiB':>14}{'connections':>13}{'resumed':>9}  protocol")
    for r in result["tls"]:
        print(f"{r['program']:<9}{r['sendsPerSec']:>10,.0f}{r['cpuMicrosecondsPerSend']:>13.1f}{r['peakRssMiB']:>14}{r['tlsConnections']:>13}{r['tlsResumed']:>9}"
              f"  {r.get('protocol', '')}")
    f = result.get("tlsFloor")
    if f:
        print(f"Floor over HTTPS (libcurl alone, HTTP/1.1, {f['processes']} processes): {f['requestsPerSec']:,.0f} requests/s,"
              f" {f['cpuMicrosecondsPerRequest']:.1f} µs a request ({f['non201']} not 201)")


def print_sporadic(result):
    if not result.get("sporadic"):
        return
    print("\nSporadic throttling (429 + Retry-After: 1 whatever the rate; nginx split_clients)")
    print(f"{'':<9}{'hub':<22}{'items':>7}{'accepted':>10}{'requests':>10}{'throttled':>11}{'deliver all s':>15}{'÷ quota':>9}")
    for program, rows in result["sporadic"].items():
        for r in rows:
            done = "-" if r["secondsToDeliverAll"] is None else f"{r['secondsToDeliverAll']:.1f}"
            ratio = "-" if r["goodputToQuota"] is None else f"{r['goodputToQuota']:.2f}×"
            print(f"{program:<9}{r['kind']:<22}{r['items']:>7,}{r['accepted']:>10,}{r['requests']:>10,}{r['throttledPct']:>10.1f}%{done:>15}{ratio:>9}")


def print_tables(result):
    c = result.get("ceiling")
    if c:
        print(f"\nCeiling (wrk, 1 thread, {result['connections']} connections, {result.get('wrkSeconds', '?')} s): nginx return 201 {c['nginx']['requestsPerSec']:,.0f}/s;"
              f" hubcast emulator {c['emulator']['requestsPerSec']:,.0f}/s")
        if c.get("curlFloor"):
            f = c["curlFloor"]
            print(f"Floor (libcurl alone, peers/c/curl_floor, {f['processes']} processes): {f['requestsPerSec']:,.0f} requests/s into nginx,"
                  f" {f['cpuMicrosecondsPerRequest']:.1f} µs CPU per request" + (f", {f['non201']} not 201" if f.get("non201") else ""))
    if result.get("unthrottled"):
        print(f"\nUnthrottled, {result['unthrottled'][0]['items']:,} items each, into nginx return 201")
        print(f"{'':<9}{'sends/s':>10}{'÷ wrk':>8}{'CPU µs/send':>13}{'broker µs/send':>16}{'peak RSS MiB':>14}")
        for r in result["unthrottled"]:
            ratio = f"{r['ratioToWrk']:.3f}" if r["ratioToWrk"] is not None else "–"
            broker = f"{r['brokerCpuMicrosecondsPerSend']:.1f}" if r.get("brokerCpuMicrosecondsPerSend") is not None else "–"
            print(f"{r['program']:<9}{r['sendsPerSec']:>10,.0f}{ratio:>8}{r['cpuMicrosecondsPerSend']:>13.1f}{broker:>16}{r['peakRssMiB']:>14}")
    if result.get("quota"):
        print(f"\nAgainst a quota (nginx limit_req, burst = 50 ms of the quota, nodelay; 429 + Retry-After: 1), {result.get('quotaSeconds', '?')} s of the quota in items")
        print(f"{'':<9}{'quota/s':>8}{'items':>8}{'goodput/s':>11}{'÷ quota':>9}{'2nd half':>9}{'throttled':>11}{'deliver all s':>15}{'ideal s':>9}")
        for program in PROGRAMS:
            for q in result["quota"].get(program, []):
                done = f"{q['secondsToDeliverAll']:.1f}" if q["secondsToDeliverAll"] is not None else "–"
                note = "" if q["secondsToDeliverAll"] is not None else f"  {'killed' if q['timedOut'] else 'ended'} with {q['accepted']:,} accepted"
                half = q.get("settledToQuota")
                print(f"{program:<9}{q['quota']:>8,}{q['items']:>8,}{q['goodputPerSec']:>11,.0f}{q['goodputToQuota']:>9.2f}"
                      f"{'–' if half is None else format(half, '.2f'):>9}"
                      f"{q['throttledPct']:>10.1f}%{done:>15}{q['idealSeconds']:>9.1f}{note}")
    print_tls(result)
    print_priority(result)
    print_sporadic(result)
    for lat in latency_runs(result):
        broker = "Tansu" if lat.get("broker") == "tansu" else "dev broker"
        print(f"\nEnd to end at {lat['rate']:g} items/s for {lat['seconds']:g} s ({broker} → hubcast run → hubcast emulator), after the first {WARM_UP_SECONDS} s:")
        print(f"  hubcast's metrics (median of 1 s intervals' p50, max of their p99): p50 {lat['metricsP50Ms']} ms, p99 {lat['metricsP99Ms']} ms"
              f" over {lat['steadyIntervals']} intervals")
        print("  per category: " + ", ".join(f"{k} {v['p50']}/{v['p99']}" for k, v in lat["perCategory"].items()))
        print(f"  emulator's log (accepted − produced, {lat['emulatorItems']} items): p50 {lat['emulatorP50Ms']} ms, p99 {lat['emulatorP99Ms']} ms"
              + (f", max {lat['emulatorMaxMs']} ms" if lat.get("emulatorMaxMs") is not None else ""))
        if lat.get("kafkaAlone"):
            k = lat["kafkaAlone"]
            print(f"  Kafka alone (the same schedule, a fresh broker of the same kind, a consumer that does nothing; {k['received']:,} of {k['produced']:,} received):"
                  f" p50 {k['p50Ms']} ms, p99 {k['p99Ms']} ms, max {k['maxMs']} ms")
    if result.get("memory"):
        print("\nMemory (hubcast peak RSS): " + ", ".join(f"{m['items']:,} → {m['peakRssMiB']} MiB" for m in result["memory"]))
    if result.get("group"):
        g0 = result["group"][0]
        on = "Tansu, cooperative-sticky" if g0.get("broker") == "tansu" else "the dev broker"
        answer = f", answered {g0['latencyMs']} ms after the quota let it through" if g0.get("latencyMs") else ""
        print(f"\nScale-out: instances in one group on {on}, one quota of {g0['quota']:,}/s (nginx limit_req{answer}), {g0['items']:,} items without keys")
        print(f"{'instances':<22}{'÷ quota':>9}{'last half':>10}{'throttled':>11}{'sent twice':>12}  shares / event")
        for r in result["group"]:
            label = f"{r['instances']}" + {"stop": ", one stopped", "join": " + one joining"}.get(r["event"], "")
            extra = ""
            if r["event"] == "stop":
                extra = (f"; 0.9× quota {r.get('secondsToQuotaAfterStop')} s after the stop, by the others alone"
                         f" {r.get('secondsToQuotaByOthers', '–')} s (the stopped one exited after {r.get('stoppedExitedAfter', '–')} s);"
                         f" over the 10 s after it {r.get('quotaOver10sAfterStop', '–')}× the quota,"
                         f" {r.get('secondsBelowHalfAfterStop', '–')} s of them below half")
            elif r["event"] == "join":
                extra = f"; {r.get('throttledPctAroundJoin')}% throttled ±5 s around the join"
            print(f"{label:<22}{r['goodputToQuota']:>9.2f}{r['settledToQuota']:>10.2f}{r['throttledPct']:>10.1f}%{r['sentTwice']:>12,}  "
                  f"{' / '.join(f'{x:.2f}' for x in r['shares'])}{extra}")
    print(f"\nGoals, hubcast:")
    for goal, measured, verdict in result["goals"]:
        print(f"  {verdict:<5} {goal:<58} {measured}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100000, help="items in each unthrottled run")
    parser.add_argument("--memory-items", default="10000,1000000", help="hubcast RSS runs: item counts, comma-separated")
    parser.add_argument("--quotas", default="200,2000", help="nginx limit_req quotas in sends/s, comma-separated")
    parser.add_argument("--quota-seconds", type=float, default=15, help="items per quota run = quota × this")
    parser.add_argument("--quota-timeout", type=float, default=8, help="a quota run is killed after this × its ideal time (at least 60 s)")
    parser.add_argument("--group-quota", type=int, default=1000, help="the scale-out section's nginx quota in sends/s")
    parser.add_argument("--group-items", type=int, default=60000, help="items in each scale-out run")
    parser.add_argument("--group-broker", choices=["auto", "tansu", "dev"], default="auto",
                        help="the scale-out section's broker: Tansu (real group coordination; auto: if make test installed it) or the dev broker")
    parser.add_argument("--group-latency-ms", type=int, default=0,
                        help="the scale-out section's hub answers each send its quota lets through this many ms later"
                             " (a real hub's round trip is 20-100 ms; 0: at once, as nginx alone)")
    parser.add_argument("--group-cases", default="1,2,3,3:stop,2:join",
                        help="the scale-out section's runs: instances, or instances:stop / instances:join, comma-separated")
    parser.add_argument("--priority-backlog", type=int, default=20000, help="bulk items queued ahead of the breaking ones")
    parser.add_argument("--priority-seconds", type=float, default=30, help="seconds of one breaking item a second")
    parser.add_argument("--fair-flood", type=int, default=50000, help="items flooding one category in the fairness run")
    parser.add_argument("--baseline", default=os.environ.get("HUBCAST_BASELINE_BIN"),
                        help="a hubcast built before (env HUBCAST_BASELINE_BIN): the priority section runs it side by side")
    parser.add_argument("--latency-rates", default="50,5000", help="items/s of each end-to-end latency run, comma-separated")
    parser.add_argument("--latency-broker", choices=["auto", "tansu", "dev"], default="dev",
                        help="the latency section's broker: Tansu (auto: if make test installed it) or the dev broker,"
                             " whose growing log slows it down past ~4,000 items/s")
    parser.add_argument("--latency-seconds", type=float, default=20, help="length of the latency run's production")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections = hubcast --concurrency = peers' pool size")
    parser.add_argument("--seconds", type=int, default=10, help="length of each wrk run")
    parser.add_argument("--only", default=",".join(SECTIONS), help="sections to run: " + ",".join(SECTIONS))
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="programs in the unthrottled and quota sections (also hubcast-noledger: hubcast with --ledger-topic none; hubcast-baseline: the --baseline build); a program may be named twice to alternate runs")
    parser.add_argument("--output", default=os.path.join(ROOT, "benchmarks/results/latest.json"))
    parser.add_argument("--micro-json", help="only merge this micro-benchmark export into --output and print it")
    parser.add_argument("--keep-work", action="store_true", help="keep the scratch folder (each program's output, nginx's log) and print its path")
    parser.add_argument("--show", metavar="JSON", help="only print the tables of an earlier run's results")
    args = parser.parse_args()
    if args.micro_json:
        return merge_micro(args.micro_json, args.output)
    if args.show:
        return print_tables(json.load(open(args.show)))
    sections = [s for s in args.only.split(",") if s]
    chosen = [p for p in args.programs.split(",") if p]
    binary = os.environ.get("HUBCAST_BIN") or os.path.join(
        subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True).stdout.strip(), "hubcast")
    go = os.environ.get("GO_SENDER_BIN") or os.path.join(ROOT, "benchmarks/.peers-build/gosender")
    floor_bin = os.environ.get("CURL_FLOOR_BIN") or os.path.join(ROOT, "benchmarks/.peers-build/curl_floor")
    for path, what in [(binary, "hubcast (HUBCAST_BIN)"), (go, "the Go sender (make bench-tools, or GO_SENDER_BIN)")]:
        if not os.access(path, os.X_OK) and (path == binary or "go" in chosen):
            raise SystemExit(f"not found: {what} at {path}")
    help_text = subprocess.run([binary, "run", "--help"], capture_output=True, text=True).stdout
    quotas = [int(q) for q in args.quotas.split(",") if q]
    work = tempfile.mkdtemp(prefix="hubcast-bench-")
    extra = [args.group_quota] if "group" in sections and args.group_quota not in quotas else []
    if "priority" in sections and 200 not in quotas + extra:
        extra.append(200)
    latency = args.group_latency_ms if "group" in sections else 0
    nginx = Nginx(work, quotas, extra, delayed_quota=args.group_quota, latency_ms=latency)
    started = time.time()
    result = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "hubcast": binary,
              # Never passed: the quota runs are a cold start with no configured rate.
              "hubcastHasMaxRate": "--max-rate" in help_text,
              "machine": {"cores": os.cpu_count(), "platform": platform.platform(), "loadAverage": os.getloadavg(),
                          "memoryGiB": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)},
              "connections": args.connections, "wrkSeconds": args.seconds, "quotaSeconds": args.quota_seconds}
    try:
        python = peer_python() if "python" in chosen or "latency" in sections or "priority" in sections else None
        programs = Programs(binary, go, python, args.connections, work, args.baseline)
        wrk_nginx = None
        if "ceiling" in sections:
            print(f"ceiling: wrk, 1 thread, {args.connections} connections, {args.seconds} s each", file=sys.stderr)
            emulator = Emulator(binary, work)
            try:
                result["ceiling"] = {
                    "nginx": wrk(nginx.url(nginx.quiet), args.connections, args.seconds, "none"),
                    "emulator": wrk(send_url(emulator.port), args.connections, args.seconds,
                                    sas_for(emulator.connection))}
            finally:
                emulator.stop()
            wrk_nginx = result["ceiling"]["nginx"]["requestsPerSec"]
            if os.access(floor_bin, os.X_OK):
                print(f"ceiling: libcurl alone, {args.items:,} requests", file=sys.stderr)
                floor = curl_floor(floor_bin, nginx.url(nginx.quiet), args.connections, args.items, work)
                if floor:
                    result["ceiling"]["curlFloor"] = floor
            else:
                print(f"ceiling: no libcurl floor (build it with make bench-tools, or set CURL_FLOOR_BIN): {floor_bin}", file=sys.stderr)
        if "unthrottled" in sections:
            result["unthrottled"] = []
            for program in chosen:
                print(f"unthrottled: {program}, {args.items:,} items", file=sys.stderr)
                result["unthrottled"].append(unthrottled(programs, program, args.items, nginx, wrk_nginx))
        if "tls" in sections:
            result["tls"] = []
            for program in chosen:
                print(f"tls: {program}, {args.items:,} items over HTTPS", file=sys.stderr)
                result["tls"].append(unthrottled(programs, program, args.items, nginx, None, tls=True))
            if os.access(floor_bin, os.X_OK):
                print(f"tls: libcurl alone, {args.items:,} requests over HTTPS", file=sys.stderr)
                floor = curl_floor(floor_bin, send_url(nginx.tls_port, tls=True), args.connections, args.items, work, ca=nginx.ca)
                if floor:
                    result["tlsFloor"] = floor
        if "quota" in sections:
            result["quota"] = {p: [] for p in chosen}
            result["quotaSink"] = {str(q): {"rate": q, "burst": quota_burst(q), "nodelay": True, "retryAfter": 1} for q in quotas}
            for q in quotas:
                items = int(q * args.quota_seconds)
                for program in chosen:
                    print(f"quota {q:,}/s: {program}, {items:,} items", file=sys.stderr)
                    result["quota"][program].append(quota_run(programs, program, q, items, nginx, max(60.0, args.quota_timeout * items / q)))
        if "sporadic" in sections:
            # The one-in-seven hub has no quota: "goodput ÷ quota" there is left out (quota 1).
            result["sporadic"] = {p: [] for p in chosen}
            for program in chosen:
                print(f"sporadic: {program}, 600 items, one in seven throttled", file=sys.stderr)
                row = quota_run(programs, program, 1, 600, nginx, 120.0, port=nginx.sporadic_port)
                row.update(kind="one in seven", quota=None, goodputToQuota=None)
                result["sporadic"][program].append(row)
                q = nginx.mixed_quota
                items = int(q * args.quota_seconds)
                print(f"sporadic: {program}, quota {q:,}/s + 5% throttled, {items:,} items", file=sys.stderr)
                row = quota_run(programs, program, q, items, nginx, max(60.0, args.quota_timeout * items / q), port=nginx.mixed_port)
                row.update(kind=f"quota {q:,}/s + 5%")
                result["sporadic"][program].append(row)
        if "latency" in sections:
            result["latency"] = []
            tansu = Tansu.chosen(args.latency_broker)
            for rate in [float(x) for x in args.latency_rates.split(",") if x]:
                print(f"latency: {rate:g} items/s for {args.latency_seconds:g} s", file=sys.stderr)
                run = latency_run(binary, python, rate, args.latency_seconds, args.connections, work, tansu)
                print(f"latency: Kafka alone, {rate:g} items/s", file=sys.stderr)
                run["kafkaAlone"] = kafka_floor_run(binary, python, rate, args.latency_seconds, work, tansu)
                result["latency"].append(run)
        if "memory" in sections:
            result["memory"] = []
            for n in [int(x) for x in args.memory_items.split(",") if x]:
                reuse = next((r for r in result.get("unthrottled", []) if r["program"] == "hubcast" and r["items"] == n), None)
                if not reuse:
                    print(f"memory: hubcast, {n:,} items", file=sys.stderr)
                row = reuse or unthrottled(programs, "hubcast", n, nginx, wrk_nginx)
                result["memory"].append({"items": n, "peakRssMiB": row["peakRssMiB"], "sendsPerSec": row["sendsPerSec"],
                                         "cpuMicrosecondsPerSend": row["cpuMicrosecondsPerSend"]})
        if "group" in sections:
            result["group"] = []
            q, n = args.group_quota, args.group_items
            tansu = Tansu.chosen(args.group_broker)
            port = nginx.delayed_port or nginx.quota_ports[q]
            for case in args.group_cases.split(","):
                instances, _, event = case.partition(":")
                instances, event = int(instances), event or None
                print(f"group: {instances} instance(s){', event ' + event if event else ''}, quota {q:,}/s, {n:,} items"
                      f" on {'Tansu' if tansu else 'the dev broker'}, hub answering after {latency} ms", file=sys.stderr)
                row = group_run(programs, nginx, port, q, n, instances, event, tansu)
                row["latencyMs"] = latency
                result["group"].append(row)
        if "priority" in sections:
            builds = [("this", binary)] + ([("before", args.baseline)] if args.baseline else [])
            result["priority"] = {"builds": []}
            for name, build in builds:
                runs = []
                for rate in [None, 200]:
                    print(f"priority ({name}): {args.priority_backlog:,} bulk, breaking 1/s for {args.priority_seconds:g} s, "
                          f"{'unthrottled' if rate is None else f'quota {rate}/s with --max-rate'}", file=sys.stderr)
                    run = backlog_run(build, python, nginx, nginx.logged if rate is None else nginx.quota_ports[rate], work, args.priority_backlog,
                                      {"World": (1, "breaking")}, args.priority_seconds, max_rate=rate)
                    runs.append({"kind": "breaking", **run})
                # Unthrottled, and at the quota, where the flood takes the 150/s the five leave it.
                for flood, rate in [(args.fair_flood, None), (args.fair_flood // 10, 200)]:
                    print(f"fairness ({name}): {flood:,} Sports, five categories at 10/s, "
                          f"{'unthrottled' if rate is None else f'quota {rate}/s with --max-rate'}", file=sys.stderr)
                    run = backlog_run(build, python, nginx, nginx.logged if rate is None else nginx.quota_ports[rate], work, flood,
                                      {c: (10, None) for c in CATEGORIES if c != "Sports"}, 10, max_rate=rate, backlog_priority=None)
                    runs.append({"kind": "fairness", **run})
                result["priority"]["builds"].append({"name": name, "binary": build, "runs": runs})
    finally:
        nginx.stop()
        if args.keep_work:
            print(f"scratch folder kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    result["seconds"] = round(time.time() - started, 1)
    result["goals"] = goals(result)
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    if os.path.exists(args.output):
        # The micro-benchmarks are merged in by `make bench-micro`, which `make bench` runs next.
        previous = json.load(open(args.output))
        if "micro" in previous:
            result["micro"] = previous["micro"]
    with open(args.output, "w") as f:
        json.dump(result, f, indent=2)
    print_tables(result)
    print(f"\n{result['seconds']:.0f} s; wrote {os.path.relpath(args.output, ROOT)}")


if __name__ == "__main__":
    sys.exit(main())
