#!/usr/bin/env python3
"""hubcast backend under load: registrations/s and secure-payload fetches/s, p50/p99, bcrypt's share,
SQLite vs PostgreSQL. Everything on 127.0.0.1; writes results/backend.json.

Each run starts a dev broker, the emulator (as the hub), a PostgreSQL server when needed, and a
release `hubcast backend`; `--workers` threads (one keep-alive connection each) then drive
  registrations: POST /api/register?handle= then PUT /api/register/{id} (two authenticated calls),
  fetches:       GET /api/notifications/{id} of payloads stored beforehand.
bcrypt's share: the same run with users hashed at cost 4 (bcrypt ~1 ms) and at --cost (default 12);
share = 1 - (time per call at cost 4 / time per call at --cost), both with the credential cache off;
a third run per store has the cache on (the default): one bcrypt per user, then keyed-hash lookups.
"""
import argparse, base64, http.client, json, os, shutil, subprocess, sys, tempfile, threading, time, uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def binary():
    if os.environ.get("HUBCAST_BIN"):
        return os.environ["HUBCAST_BIN"]
    path = subprocess.check_output(["swift", "build", "-c", "release", "--show-bin-path"], cwd=ROOT, text=True).strip()
    return os.path.join(path, "hubcast")


def start(cmd, **kw):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, **kw)
    line = p.stdout.readline().strip()
    if not line:
        raise SystemExit(f"{cmd[1]} printed nothing")
    return p, line


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Postgres:
    def __init__(self, tmp):
        bindir = sorted(d for d in os.listdir("/usr/lib/postgresql") if d.isdigit())[-1]
        self.bin = f"/usr/lib/postgresql/{bindir}/bin"
        self.data = os.path.join(tmp, "pg")
        os.mkdir(self.data)
        self.asroot = os.getuid() == 0
        if self.asroot:
            shutil.chown(self.data, "postgres", "postgres")
            os.chmod(tmp, 0o755)
        self.port = free_port()
        self.run([f"{self.bin}/initdb", "-D", self.data, "-U", "hubcast", "--auth=trust", "--no-sync"])
        self.proc = subprocess.Popen(self.wrap([f"{self.bin}/postgres", "-D", self.data, "-p", str(self.port), "-k", self.data,
                                                "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"]),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(600):
            if subprocess.run([f"{self.bin}/pg_isready", "-h", "127.0.0.1", "-p", str(self.port)], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        self.run([f"{self.bin}/createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "hubcast", "hubcast"])
        self.url = f"postgres://hubcast@127.0.0.1:{self.port}/hubcast?sslmode=disable"

    def wrap(self, cmd):
        return ["runuser", "-u", "postgres", "--"] + cmd if self.asroot else cmd

    def run(self, cmd):
        subprocess.run(self.wrap(cmd), check=True, capture_output=True)

    def stop(self):
        subprocess.run(self.wrap([f"{self.bin}/pg_ctl", "stop", "-D", self.data, "-m", "fast", "-w"]), capture_output=True)
        self.proc.wait()


def load(base, duration, workers, make_request):
    """Runs `make_request(worker, i)` -> (method, path, body) in `workers` threads for `duration` seconds."""
    host, port = base.split("//")[1].split(":")
    latencies, errors = [], [0]
    lock = threading.Lock()
    deadline = time.monotonic() + duration

    def worker(w):
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        mine, i = [], 0
        while time.monotonic() < deadline:
            for method, path, body, headers in make_request(w, i):
                t0 = time.perf_counter()
                conn.request(method, path, body=body, headers=headers)
                r = conn.getresponse()
                data = r.read()
                mine.append(time.perf_counter() - t0)
                if r.status != 200:
                    with lock:
                        errors[0] += 1
                make_request.last[w] = data
            i += 1
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
    t0 = time.monotonic()
    for t in threads: t.start()
    for t in threads: t.join()
    elapsed = time.monotonic() - t0
    latencies.sort()
    pct = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else 0
    return {"calls": len(latencies), "perSec": len(latencies) / elapsed, "p50ms": pct(0.5), "p99ms": pct(0.99), "errors": errors[0]}


def run_one(hubcast, store, cost, duration, workers, cache):
    tmp = tempfile.mkdtemp(prefix="hubcast-bench-backend-")
    procs, pg = [], None
    try:
        broker, bootstrap = start([hubcast, "dev-broker", "--partitions", "1", "--log-level", "warning"])
        procs.append(broker)
        emulator, conn = start([hubcast, "emulator", "--hub", "hubcast", "--log-level", "warning", "--keep-deliveries", "1000"])
        procs.append(emulator)
        with open(os.path.join(tmp, "conn"), "w") as f:
            f.write(conn)
        users = os.path.join(tmp, "users")
        names = [f"user{w}" for w in range(workers)]
        for name in names + ["sender"]:
            subprocess.run([hubcast, "backend", "add-user", "--users-file", users, "--name", name, "--cost", str(cost)]
                           + (["--role", "sender"] if name == "sender" else []), input="pw-" + name + "\n", text=True, check=True,
                           capture_output=True)
        location = os.path.join(tmp, "backend.sqlite")
        if store == "postgres":
            pg = Postgres(tmp)
            location = pg.url
        backend, base = start([hubcast, "backend", "--port", "0", "--brokers", bootstrap, "--hub", "hubcast", "--connection-string-file",
                               os.path.join(tmp, "conn"), "--users-file", users, "--store", location, "--no-consumer",
                               "--log-level", "warning", "--max-failed-logins", "10000",
                               "--credential-cache-seconds", "300" if cache else "0"])
        procs.append(backend)
        auth = {n: "Basic " + base64.b64encode(f"{n}:pw-{n}".encode()).decode() for n in names + ["sender"]}

        # Registrations: a fresh handle per iteration, POST then PUT.
        def registration(w, i):
            handle = uuid.uuid4().hex + uuid.uuid4().hex
            yield "POST", f"/api/register?handle={handle}", None, {"Authorization": auth[names[w]]}
            reg_id = json.loads(registration.last[w])
            body = json.dumps({"Platform": "apns", "Handle": handle, "Tags": ["World"]})
            yield "PUT", f"/api/register/{reg_id}", body, {"Authorization": auth[names[w]], "Content-Type": "application/json"}
        registration.last = {}
        reg = load(base, duration, workers, registration)

        # Secure payloads, one per user, published by the sender beforehand (not measured).
        host, port = base.split("//")[1].split(":")
        ids = {}
        c = http.client.HTTPConnection(host, int(port))
        for n in names:
            c.request("POST", f"/api/notifications?to_tag={n}&secure=true", body=json.dumps({"message": f"secret for {n}"}),
                      headers={"Authorization": auth["sender"], "Content-Type": "application/json"})
            ids[n] = json.loads(c.getresponse().read())["id"]

        def fetch(w, i):
            yield "GET", f"/api/notifications/{ids[names[w]]}", None, {"Authorization": auth[names[w]]}
        fetch.last = {}
        fet = load(base, duration, workers, fetch)
        return {"store": store, "cost": cost, "cache": cache, "registrations": reg, "fetches": fet}
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait()
        if pg:
            pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--cost", type=int, default=12)
    ap.add_argument("--stores", default="sqlite,postgres")
    args = ap.parse_args()
    hubcast = binary()
    results = []
    for store in args.stores.split(","):
        for cost, cache in ((4, False), (args.cost, False), (args.cost, True)):
            r = run_one(hubcast, store, cost, args.seconds, args.workers, cache)
            results.append(r)
            print(f"{store:9} cost {cost:2} {'cached' if cache else 'bcrypt'}: registrations {r['registrations']['perSec']:8.1f} calls/s p99 {r['registrations']['p99ms']:7.1f} ms"
                  f" | fetches {r['fetches']['perSec']:8.1f}/s p50 {r['fetches']['p50ms']:6.1f} ms p99 {r['fetches']['p99ms']:7.1f} ms"
                  f" | errors {r['registrations']['errors'] + r['fetches']['errors']}", flush=True)
    for store in args.stores.split(","):
        low = next(r for r in results if r["store"] == store and r["cost"] == 4)
        high = next(r for r in results if r["store"] == store and r["cost"] == args.cost and not r["cache"])
        for kind in ("registrations", "fetches"):
            share = 1 - (1 / low[kind]["perSec"]) / (1 / high[kind]["perSec"]) if high[kind]["perSec"] else 0
            print(f"{store:9} {kind:13}: bcrypt cost {args.cost} takes {share * 100:5.1f}% of each call's time")
    out = os.path.join(ROOT, "benchmarks", "results", "backend.json")
    with open(out, "w") as f:
        json.dump({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "workers": args.workers, "seconds": args.seconds,
                   "results": results}, f, indent=1)
    print("wrote", out)


if __name__ == "__main__":
    main()
