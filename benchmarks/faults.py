#!/usr/bin/env python3
"""hubcast under faults, on loopback: `make faults` runs it; prints a table, writes benchmarks/results/faults.json.

Each scenario gets a fresh dev broker (6 partitions per topic) and a fresh `hubcast emulator` (600 simulated
devices), produces its items, runs a release `hubcast run` (with `--dlq file:PATH`, metrics every second),
breaks something, and ends with a recovery run when the scenario stopped the first one (scenario 15 runs on
Tansu instead of the dev broker: `deploy/tansu.sh` installs it into .build-kafka/). Then it counts:

  produced      items written to the topics (valid + hostile)
  delivered     distinct valid items the emulator accepted a send for (GET /_emulator/deliveries; the id is
                carried in the headline and read back from the rendered payload)
  duplicates    items the emulator accepted more than one send for
  dead-lettered records in the --dlq files (one JSON line each)
  lost          valid items with neither an accepted send nor a dead-letter record after the final run
  exit          exit code(s) of every hubcast run, in order (negative: killed by that signal)
  time          wall time of the scenario

A scenario is PASS when every expectation listed for it holds, MISS otherwise; the script exits 1 if any
scenario lost an item or missed a hard expectation (exit code, crash, hostile item swallowed).
Usage: benchmarks/faults.py [--only 1,3,9] [--keep] [--output PATH]
  HUBCAST_BIN picks the binary (default .build-faults/release/hubcast); HUBCAST_BUILT_FROM says what it was
  built from, for faults.json (default: `git describe --dirty` of this tree when HUBCAST_BIN is not set).
  HUBCAST_* settings in the environment reach every `hubcast run` (e.g. HUBCAST_REQUEST_TIMEOUT=5).
"""
import argparse, calendar, collections, ctypes, json, os, random, re, shutil, signal, socket, subprocess, sys, tempfile, threading, time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATEGORIES = ["World", "Politics", "Business", "Technology", "Science", "Sports"]
HUB = "faults"
PARTITIONS = 6
CONCURRENCY = 64
# hubcast's records-behind bound per hub (PipelineConfiguration.recordsBehind): accepted sends that
# may end while their ledger record is being stored.
RECORDS_BEHIND = 4 * CONCURRENCY
ID_IN_PAYLOAD = re.compile(r"Fault item ([A-Za-z0-9_.-]+)")
PROCS = []  # every subprocess started, killed at exit whatever happens


def log(text):
    print(text, file=sys.stderr, flush=True)


def spawn(argv, **kwargs):
    proc = subprocess.Popen(argv, **kwargs)
    PROCS.append(proc)
    return proc


def kill_all():
    for proc in PROCS:
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGCONT)  # a stopped process still dies of SIGKILL, but be tidy
                proc.kill()
                proc.wait(timeout=10)
            except Exception:
                pass


def terminate(proc):
    """SIGTERM, then SIGKILL after 10 s, unless it has exited."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def topic(category):
    return "news." + category.lower()


def item(scenario, n, **extra):
    category = CATEGORIES[n % len(CATEGORIES)]
    ident = f"s{scenario}-{n}"
    return {"id": ident, "headline": f"Fault item {ident} breaking news", "category": category, **extra}


# --- librdkafka through ctypes: committed offsets of a group, without joining it -------------------------

class TopicPartition(ctypes.Structure):
    _fields_ = [("topic", ctypes.c_char_p), ("partition", ctypes.c_int32), ("offset", ctypes.c_int64),
                ("metadata", ctypes.c_void_p), ("metadata_size", ctypes.c_size_t), ("opaque", ctypes.c_void_p),
                ("err", ctypes.c_int), ("_private", ctypes.c_void_p)]


class TopicPartitionList(ctypes.Structure):
    _fields_ = [("cnt", ctypes.c_int), ("size", ctypes.c_int), ("elems", ctypes.POINTER(TopicPartition))]


def rdkafka():
    lib = ctypes.CDLL("librdkafka.so.1")
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_conf_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_topic_partition_list_new.restype = ctypes.POINTER(TopicPartitionList)
    lib.rd_kafka_topic_partition_list_add.restype = ctypes.c_void_p
    lib.rd_kafka_topic_partition_list_add.argtypes = [ctypes.POINTER(TopicPartitionList), ctypes.c_char_p, ctypes.c_int32]
    lib.rd_kafka_committed.argtypes = [ctypes.c_void_p, ctypes.POINTER(TopicPartitionList), ctypes.c_int]
    lib.rd_kafka_topic_partition_list_destroy.argtypes = [ctypes.POINTER(TopicPartitionList)]
    lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
    return lib


def committed_offsets(bootstrap, group):
    """{(topic, partition): committed offset} of `group` (0 where nothing is committed), or None on error."""
    lib = rdkafka()
    conf = lib.rd_kafka_conf_new()
    err = ctypes.create_string_buffer(512)
    for key, value in [("bootstrap.servers", bootstrap), ("group.id", group), ("log_level", "3")]:
        lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), err, 512)
    rk = lib.rd_kafka_new(1, conf, err, 512)
    if not rk:
        return None
    parts = lib.rd_kafka_topic_partition_list_new(len(CATEGORIES) * PARTITIONS)
    for c in CATEGORIES:
        for p in range(PARTITIONS):
            lib.rd_kafka_topic_partition_list_add(parts, topic(c).encode(), p)
    try:
        if lib.rd_kafka_committed(rk, parts, 10000) != 0:
            return None
        out = {}
        for i in range(parts.contents.cnt):
            e = parts.contents.elems[i]
            out[(e.topic.decode(), e.partition)] = max(e.offset, 0)
        return out
    finally:
        lib.rd_kafka_topic_partition_list_destroy(parts)
        lib.rd_kafka_destroy(rk)


# --- the pieces: broker, emulator, hubcast run ------------------------------------------------------------

class Broker:
    def __init__(self, binary):
        self.binary = binary
        self.proc = spawn([binary, "dev-broker", "--partitions", str(PARTITIONS), "--log-level", "warning"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.bootstrap = self.proc.stdout.readline().strip()
        if not self.bootstrap:
            raise RuntimeError("dev broker did not start")

    # What every hubcast process talking to this broker needs in its environment.
    env = {}

    def produce(self, items, work, name):
        path = os.path.join(work, f"{name}.jsonl")
        with open(path, "w") as f:
            for it in items:
                f.write(json.dumps(it) + "\n")
        out = subprocess.run([self.binary, "produce", "--brokers", self.bootstrap, "--file", path, "--log-level", "warning"],
                             capture_output=True, text=True, env={**os.environ, **self.env})
        if out.returncode != 0:
            raise RuntimeError(f"hubcast produce exited {out.returncode}: {out.stdout.strip()} {out.stderr.strip()[-500:]}")
        return out

    def stop(self):
        terminate(self.proc)


KAFKA_DIR = os.environ.get("HUBCAST_KAFKA_DIR") or os.path.join(ROOT, ".build-kafka")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


class TansuBroker(Broker):
    """Tansu (a Kafka-protocol broker with real group coordination, installed by deploy/tansu.sh into
    .build-kafka/) in memory on a free loopback port, as Tests/TestSupport/TansuBroker.swift starts it.
    Debian's librdkafka cannot talk to it: every hubcast process gets `env` (the newer librdkafka)."""

    def __init__(self, binary, work, partitions):
        self.binary, self.executable = binary, os.path.join(KAFKA_DIR, "bin/tansu")
        lib = os.path.join(KAFKA_DIR, "lib")
        if not (os.access(self.executable, os.X_OK) and os.path.exists(os.path.join(lib, "librdkafka.so.1"))):
            out = subprocess.run(["bash", os.path.join(ROOT, "deploy/tansu.sh")], capture_output=True, text=True, timeout=600)
            if out.returncode != 0 or not os.access(self.executable, os.X_OK):
                raise RuntimeError(f"deploy/tansu.sh exited {out.returncode}: {out.stdout[-500:]} {out.stderr[-1000:]}")
        self.env = {"LD_LIBRARY_PATH": lib + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")}
        last = ""
        for attempt in range(3):  # the free port may be taken between the probe and Tansu's bind
            port = free_port()
            url = f"tcp://127.0.0.1:{port}"
            err_path = os.path.join(work, f"tansu-{attempt}.log")
            self.proc = spawn([self.executable, "broker", "--listener-url", url, "--advertised-listener-url", url,
                               "--storage-engine", "memory://tansu/"],
                              stdout=open(err_path, "w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            if wait_until(lambda: self.proc.poll() is not None or accepts(port), 20, 0.02) and self.proc.poll() is None:
                self.port, self.url, self.bootstrap = port, url, f"127.0.0.1:{port}"
                break
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            last = open(err_path, errors="replace").read()[-1000:]
        else:
            raise RuntimeError(f"tansu did not start: {last}")
        for category in CATEGORIES:
            self.create_topic(topic(category), partitions)
        self.create_topic("news.deadletter", 1)
        self.create_topic("hubcast.quota", 1)  # as the dev broker does: the runs share the hub's quota through it

    def create_topic(self, name, partitions):
        out = subprocess.run([self.executable, "topic", "create", name, "--broker", self.url, "--partitions", str(partitions)],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise RuntimeError(f"tansu topic create {name} exited {out.returncode}: {out.stdout} {out.stderr[-500:]}")

    def produce(self, items, work, name):
        out = super().produce(items, work, name)
        if f"sent {len(items)}, rejected 0, failed 0" not in out.stdout:
            raise RuntimeError(f"hubcast produce to Tansu: {out.stdout.strip()} {out.stderr.strip()[-500:]}")


class Emulator:
    def __init__(self, binary, work, latency_ms=0, devices=600, hub=HUB):
        self.out_path, self.err_path = os.path.join(work, f"emulator-{hub}.out"), os.path.join(work, f"emulator-{hub}.err")
        argv = [binary, "emulator", "--hub", hub, "--devices", str(devices), "--sample-payloads", "1",
                "--keep-deliveries", "1000000", "--log-level", "warning"]
        if latency_ms:
            argv += ["--fault", json.dumps({"latencyMs": latency_ms})]
        self.proc = spawn(argv, stdout=open(self.out_path, "w"), stderr=open(self.err_path, "w"))
        deadline = time.time() + 60
        while time.time() < deadline:
            text = open(self.out_path).read()
            if text.count("\n") >= 1:
                self.connection = text.splitlines()[0].strip()
                self.port = int(re.search(r"sb://127\.0\.0\.1:(\d+)/", self.connection).group(1))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("emulator did not start: " + open(self.err_path).read()[-500:])

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read()
            return json.loads(text) if text else None

    def fault(self, fault):
        return self.call("POST", "/_emulator/faults", fault)

    def clear_faults(self):
        self.call("DELETE", "/_emulator/faults")

    def stats(self):
        return self.call("GET", "/_emulator/stats")

    def accepted(self):
        """Counter: item id → sends the emulator accepted for it."""
        counts = collections.Counter()
        for d in self.call("GET", "/_emulator/deliveries")["deliveries"]:
            for payload in d["payloads"]:
                m = ID_IN_PAYLOAD.search(payload)
                if m:
                    counts[m.group(1)] += 1
        return counts

    def stop(self):
        self.proc.send_signal(signal.SIGSTOP)

    def cont(self):
        self.proc.send_signal(signal.SIGCONT)


class Run:
    """One `hubcast run`: metrics lines from stdout are kept with the wall-clock time they arrived."""

    def __init__(self, binary, broker, emulator, work, name, dlq, extra=(), group="faults", env=None, routes=None):
        """`routes`: a routes file naming the hubs, instead of the one emulator's hub."""
        self.name, self.t0 = name, time.time()
        self.err_path, self.out_path = os.path.join(work, f"{name}.stderr"), os.path.join(work, f"{name}.metrics.jsonl")
        hub = ["--routes", routes] if routes else ["--hub", HUB]
        argv = [binary, "run", "--brokers", broker.bootstrap, "--group", group, *hub, "--dlq", f"file:{dlq}",
                "--concurrency", str(CONCURRENCY), "--metrics-interval", "1", "--log-level", "info", *extra]
        env = {**os.environ, **({} if routes else {"HUBCAST_CONNECTION_STRING": emulator.connection}), **(env or {})}
        self.proc = spawn(argv, stdout=subprocess.PIPE, stderr=open(self.err_path, "w"), env=env, text=True)
        self.metrics, self.raw = [], []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.exit_code, self.exit_at = None, None

    def _read(self):
        with open(self.out_path, "w") as out:
            for line in self.proc.stdout:
                out.write(line)
                out.flush()
                self.raw.append(line)
                try:
                    self.metrics.append((time.time(), json.loads(line)))
                except ValueError:
                    pass

    def wait(self, timeout):
        """Waits for exit; kills it (and records a hang) after `timeout` seconds."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.hung = True
        self.exit_at = time.time()
        self.exit_code = self.proc.returncode
        self.reader.join(timeout=5)
        return self.exit_code

    hung = False

    def signal_and_time(self, sig, timeout):
        """Sends `sig`, waits for exit; returns seconds from the signal to the exit."""
        start = time.monotonic()
        self.proc.send_signal(sig)
        self.wait(timeout)
        return round(time.monotonic() - start, 2)

    def last(self):
        return self.metrics[-1][1] if self.metrics else {}

    def final(self):
        finals = [m for _, m in self.metrics if m.get("final")]
        return finals[-1] if finals else None

    def stderr_lines(self, pattern, limit=3, since=0, until=float("inf")):
        """stderr lines matching `pattern`, stamped (by their ISO time, UTC) between `since` and `until`."""
        out = []
        for l in open(self.err_path, errors="replace"):
            m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\+0000", l)
            at = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) if m else None
            if re.search(pattern, l) and (at is None or since - 1 <= at <= until + 1):
                out.append(l.rstrip())
        return out[:limit]

    def crashed(self):
        return self.exit_code is not None and self.exit_code < 0 and self.exit_code not in (-signal.SIGKILL, -signal.SIGTERM)


def wait_until(predicate, timeout, step=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def read_dlq(paths):
    records = []
    for path in paths:
        if os.path.exists(path):
            for line in open(path, errors="replace"):
                if line.strip():
                    try:
                        records.append(json.loads(line))
                    except ValueError:
                        records.append({"reason": "(unparsable dlq line)"})
    return records


class Scenario:
    def __init__(self, number, name, binary, work):
        self.number, self.name, self.binary = number, name, binary
        self.work = os.path.join(work, f"s{number}")
        os.makedirs(self.work)
        self.t0 = time.time()
        self.runs, self.dlqs, self.valid_ids, self.produced = [], [], [], 0
        self.expectations, self.notes, self.extra = [], [], {}
        self.broker = self.emulator = None
        # More hubs than the first (several-hubs scenarios): their sends count too.
        self.other_emulators = []

    def start(self, latency_ms=0, tansu_partitions=None):
        """A dev broker, or with `tansu_partitions` Tansu with that many partitions per category topic."""
        self.broker = TansuBroker(self.binary, self.work, tansu_partitions) if tansu_partitions else Broker(self.binary)
        self.emulator = Emulator(self.binary, self.work, latency_ms)

    def produce(self, items, name="items"):
        self.broker.produce(items, self.work, f"{name}-{len(self.valid_ids)}")
        self.valid_ids += [it["id"] for it in items]
        self.produced += len(items)

    def run(self, extra=(), group="faults", routes=None):
        dlq = os.path.join(self.work, f"dlq-{len(self.runs)}.jsonl")
        self.dlqs.append(dlq)
        r = Run(self.binary, self.broker, self.emulator, self.work, f"run-{len(self.runs)}", dlq, extra, group,
                self.broker.env, routes)
        self.runs.append(r)
        return r

    def expect(self, what, ok, hard=False):
        self.expectations.append({"expectation": what, "met": bool(ok), "hard": hard})

    def finish(self):
        accepted = collections.Counter()
        emulators = [self.emulator, *self.other_emulators]
        try:
            for emulator in emulators:
                emulator.cont()
                accepted.update(emulator.accepted())
        except Exception as error:
            self.notes.append(f"could not read the emulator's deliveries: {error}")
            self.expect("emulator answered at the end", False, hard=True)
        finally:
            self.broker.stop()
            for emulator in emulators:
                terminate(emulator.proc)
        records = read_dlq(self.dlqs)
        dead_ids = {r.get("itemId") for r in records if r.get("itemId")}
        valid = set(self.valid_ids)
        delivered = {i for i in valid if accepted.get(i)}
        lost = sorted(valid - delivered - dead_ids)
        duplicates = sum(1 for i in delivered if accepted[i] > 1)
        reasons = collections.Counter(r.get("reason") for r in records)
        for r in self.runs:
            if r.hung:
                self.notes.append(f"{r.name} did not exit in time and was SIGKILLed")
            if r.crashed():
                self.notes.append(f"{r.name} died of signal {-r.exit_code}: " + " | ".join(
                    open(r.err_path, errors="replace").read().strip().splitlines()[-3:]))
        self.expect("no item lost", not lost, hard=True)
        self.expect("no crash", not any(r.crashed() for r in self.runs), hard=True)
        met = all(e["met"] for e in self.expectations)
        hard_miss = any(e["hard"] and not e["met"] for e in self.expectations)
        return {"scenario": f"{self.number}. {self.name}", "produced": self.produced, "valid": len(valid),
                "delivered": len(delivered), "duplicates": duplicates, "extraSends": sum(accepted[i] - 1 for i in delivered),
                "deadLettered": len(records), "deadLetterReasons": dict(reasons), "lost": len(lost), "lostIds": lost[:20],
                "exitCodes": [r.exit_code for r in self.runs], "seconds": round(time.time() - self.t0, 1),
                "status": "PASS" if met else "MISS", "hardMiss": hard_miss, "expectations": self.expectations,
                "notes": self.notes, **self.extra}


# --- the scenarios ------------------------------------------------------------------------------------------

def delivered_count(s):
    return s.emulator.stats()["sends"]


def s1_429_storm(s):
    """50% of sends answered 429 with Retry-After: 1 for 30 s, then the fault clears."""
    s.start()
    s.emulator.fault({"status": 429, "rate": 0.5, "retryAfter": 1})
    s.produce([item(1, n) for n in range(3000)])
    r = s.run(["--exit-when-idle", "3"])
    time.sleep(30)
    during = delivered_count(s)
    s.emulator.clear_faults()
    r.wait(120)
    stats = s.emulator.stats()
    s.extra["during"] = {"acceptedInStorm": during, "statusCounts": stats["statusCounts"],
                         "minConcurrency": min((m["concurrency"] for _, m in r.metrics), default=None),
                         "throttled": r.last().get("throttled")}
    s.expect("exit 0", r.exit_code == 0, hard=True)
    s.expect("nothing dead-lettered for throttling", not read_dlq(s.dlqs))


def deliver_all_under(s, faults, items, timeout):
    """Sets the faults, produces the items, runs hubcast until the emulator accepted them all (or
    `timeout`), clears the faults and waits for the exit: (run, seconds to all or None, stats)."""
    s.start()
    for fault in faults:
        s.emulator.fault(fault)
    s.produce(items)
    r = s.run(["--exit-when-idle", "3"])
    started = time.time()
    all_in = wait_until(lambda: delivered_count(s) >= len(items), timeout)
    seconds = round(time.time() - started, 1) if all_in else None
    stats = s.emulator.stats()
    s.emulator.clear_faults()
    r.wait(60)
    s.extra["during"] = {"secondsToAll": seconds, "statusCounts": stats["statusCounts"],
                         "throttled": r.last().get("throttled"), "retried": r.last().get("retried")}
    s.expect("exit 0", r.exit_code == 0, hard=True)
    return seconds


def s10_sporadic_throttling(s):
    """One request in seven answered 429 with Retry-After: 1 whatever the rate; 600 items on six categories."""
    seconds = deliver_all_under(s, [{"status": 429, "rate": 1 / 7, "retryAfter": 1}], [item(10, n) for n in range(600)], 60)
    s.expect("all 600 accepted within 20 s of the start", seconds is not None and seconds <= 20)
    s.expect("nothing dead-lettered for throttling", not read_dlq(s.dlqs))


def s11_everything_at_once(s):
    """30% of sends answered 429 (Retry-After: 1), 20% 503 and 10% of connections dropped; 300 items."""
    faults = [{"status": 429, "rate": 0.3, "retryAfter": 1}, {"status": 503, "rate": 0.2}, {"dropConnection": 0.1}]
    seconds = deliver_all_under(s, faults, [item(11, n) for n in range(300)], 90)
    s.expect("all 300 accepted within 60 s of the start", seconds is not None and seconds <= 60)


def s2_5xx_drops(s):
    """20% of sends answered 503 and 10% of connections dropped without an answer for 15 s, then clear."""
    s.start()
    s.emulator.fault({"status": 503, "rate": 0.2})
    s.emulator.fault({"dropConnection": 0.1})
    s.produce([item(2, n) for n in range(3000)])
    r = s.run(["--exit-when-idle", "3"])
    time.sleep(15)
    s.emulator.clear_faults()
    r.wait(120)
    stats = s.emulator.stats()
    s.extra["during"] = {"statusCounts": stats["statusCounts"], "retried": r.last().get("retried"), "failed": r.last().get("failed")}
    s.expect("exit 0", r.exit_code == 0, hard=True)


def s3_hub_down(s):
    """4,000 items, 100 ms hub latency; the emulator is SIGSTOPped for 60 s mid-stream, then SIGCONT."""
    s.start(latency_ms=100)
    s.produce([item(3, n) for n in range(4000)])
    r = s.run(["--exit-when-idle", "5"])
    wait_until(lambda: delivered_count(s) >= 600, 60)
    delivered_before = delivered_count(s)
    stop_at = time.time()
    s.emulator.stop()
    time.sleep(10)
    committed_10 = committed_offsets(s.broker.bootstrap, "faults")
    time.sleep(45)
    committed_55 = committed_offsets(s.broker.bootstrap, "faults")
    time.sleep(5)
    cont_at = time.time()
    s.emulator.cont()
    r.wait(120)
    outage = [m for t, m in r.metrics if stop_at + 2 <= t <= cont_at]
    lags = [m.get("lag", 0) for m in outage]
    c10 = sum(committed_10.values()) if committed_10 else None
    c55 = sum(committed_55.values()) if committed_55 else None
    s.extra["outage"] = {"seconds": round(cont_at - stop_at, 1), "deliveredBeforeStop": delivered_before,
                         "committedAfter10s": c10, "committedAfter55s": c55, "maxLag": max(lags, default=None),
                         "minLag": min(lags, default=None), "metricsLines": len(outage),
                         "hubAvailableFalseLines": sum(1 for m in outage if m.get("hubAvailable") is False),
                         "maxInFlight": max((m.get("inFlight", 0) for m in outage), default=None),
                         "stderrLinesDuringOutage": len(r.stderr_lines(".", 10_000, stop_at, cont_at)),
                         "retried": r.last().get("retried"), "failed": r.last().get("failed")}
    s.expect("exit 0", r.exit_code == 0, hard=True)
    s.expect("nothing dead-lettered", not read_dlq(s.dlqs))
    s.expect("lag > 0 during the outage", lags and max(lags) > 0)
    s.expect(f"finished work committed during the outage (committed ≥ delivered before stop − 2×{CONCURRENCY})",
             c10 is not None and c10 >= delivered_before - 2 * CONCURRENCY)


def s4_credentials(s):
    """Every send answered 401 for 20 s (after a first 1,000 items went out), then the fault clears."""
    s.start()
    s.produce([item(4, n) for n in range(1000)])
    r = s.run(["--exit-when-idle", "5"])
    wait_until(lambda: delivered_count(s) >= 1000, 60)
    start = time.time()
    s.emulator.fault({"status": 401})
    s.produce([item(4, n) for n in range(1000, 3000)], "more")
    time.sleep(20)
    end = time.time()
    s.emulator.clear_faults()
    r.wait(120)
    during = [m for t, m in r.metrics if start + 2 <= t <= end]
    s.extra["refused"] = {"seconds": round(end - start, 1), "metricsLines": len(during),
                          "hubAvailableFalseLines": sum(1 for m in during if m.get("hubAvailable") is False),
                          "statusCounts": s.emulator.stats()["statusCounts"] if s.emulator.proc.poll() is None else None,
                          "errorLines": r.stderr_lines(r"unavailable|401|[Uu]nauthori", 3)}
    s.expect("exit 0", r.exit_code == 0, hard=True)
    s.expect("nothing dead-lettered", not read_dlq(s.dlqs))
    s.expect('"hubAvailable": false in the metrics during the refusal', s.extra["refused"]["hubAvailableFalseLines"] > 0)


def s5_sigterm_hub_up(s):
    """SIGTERM mid-stream with the hub up (50 ms latency), then a second run delivers the rest."""
    s.start(latency_ms=50)
    s.produce([item(5, n) for n in range(5000)])
    r = s.run()
    wait_until(lambda: delivered_count(s) >= 1500, 60)
    at_signal = delivered_count(s)
    took = r.signal_and_time(signal.SIGTERM, 60)
    s.extra["sigterm"] = {"secondsToExit": took, "deliveredAtSignal": at_signal, "finalLine": r.final() is not None}
    r2 = s.run(["--exit-when-idle", "3"])
    r2.wait(120)
    s.expect("first run exits 0", r.exit_code == 0, hard=True)
    s.expect("first run exits within the drain timeout (30 s)", took <= 30, hard=True)
    s.expect("final metrics line printed", r.final() is not None)
    s.expect("second run exits 0", r2.exit_code == 0, hard=True)


def s6_sigterm_hub_down(s):
    """Hub SIGSTOPped with sends in flight, SIGTERM with --drain-timeout 5; then SIGCONT and a second run."""
    s.start(latency_ms=50)
    s.produce([item(6, n) for n in range(3000)])
    r = s.run(["--drain-timeout", "5"])
    wait_until(lambda: delivered_count(s) >= 500, 60)
    s.emulator.stop()
    time.sleep(4)
    took = r.signal_and_time(signal.SIGTERM, 30)
    s.extra["sigterm"] = {"secondsToExit": took, "drainTimeout": 5, "finalLine": r.final() is not None,
                          "inFlightAtSignal": r.last().get("inFlight")}
    s.emulator.cont()
    r2 = s.run(["--exit-when-idle", "3"])
    r2.wait(120)
    s.expect("first run exits 0", r.exit_code == 0, hard=True)
    s.expect("first run exits within drain + 2 s", took <= 7, hard=True)
    s.expect("second run exits 0", r2.exit_code == 0, hard=True)


def s7_sigkill(s):
    """SIGKILL mid-stream of 50,000 items (50 ms latency), restart; duplicates bounded by the sends in
    flight and the records behind (the delivered-sends ledger holds back what was accepted and not
    committed; a send ends before its record is stored only while fewer than 4 × concurrency are)."""
    s.start(latency_ms=50)
    s.produce([item(7, n) for n in range(50_000)])
    r = s.run()
    wait_until(lambda: delivered_count(s) >= 10_000, 120)
    r.proc.send_signal(signal.SIGKILL)
    r.wait(10)
    before = s.emulator.accepted()
    committed = committed_offsets(s.broker.bootstrap, "faults")
    r2 = s.run(["--exit-when-idle", "3"])
    r2.wait(120)
    c = sum(committed.values()) if committed else None
    last = r.last()
    s.extra["kill"] = {"deliveredBeforeKill": len(before), "committedAtKill": c,
                       "finishedNotCommitted": len(before) - c if c is not None else None,
                       "inFlightLastMetrics": last.get("inFlight"), "concurrency": CONCURRENCY}
    s.expect("second run exits 0", r2.exit_code == 0, hard=True)
    s.dup_bound = s.extra["kill"]["finishedNotCommitted"]
    # The records behind are the last few milliseconds' accepted sends: about 8 at 64 / 50 ms.
    s.duplicate_limits = [("duplicates ≤ sends in flight and records behind", CONCURRENCY + RECORDS_BEHIND, True),
                          ("duplicates ≤ sends in flight and 32 records behind", CONCURRENCY + 32, False)]


def stamp(line):
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\+0000", line)
    return calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) if m else None


def unowned_seconds(first, second):
    """From the first member's first revoke to the second member's first assignment (log stamps, 1 s resolution)."""
    revoked = first.stderr_lines(r"Partitions revoked", 1)
    assigned = second.stderr_lines(r"Partitions assigned", 1)
    return stamp(assigned[0]) - stamp(revoked[0]) if revoked and assigned else None


def s8_rebalance(s):
    """Two runs in one group on 6 partitions per topic, 50 ms latency; the second joins mid-stream."""
    s.start(latency_ms=50)
    s.produce([item(8, n) for n in range(8000)])
    a = s.run(["--exit-when-idle", "5"])
    wait_until(lambda: delivered_count(s) >= 1500, 60)
    joined_at = delivered_count(s)
    b = s.run(["--exit-when-idle", "5"])
    a.wait(180)
    b.wait(180)
    s.extra["rebalance"] = {"deliveredWhenSecondJoined": joined_at,
                            "sentByFirst": (a.final() or a.last()).get("sent"), "sentBySecond": (b.final() or b.last()).get("sent"),
                            "refusedCommits": len(a.stderr_lines(r"REBALANCE_IN_PROGRESS", 10_000)) + len(b.stderr_lines(r"REBALANCE_IN_PROGRESS", 10_000)),
                            "secondsUnowned": unowned_seconds(a, b),
                            "note": "the dev broker (librdkafka's mock cluster) refuses commits during a rebalance "
                                    "(REBALANCE_IN_PROGRESS), so up to a commit interval's worth of finished work can be sent again"}
    s.expect("both runs exit 0", a.exit_code == 0 and b.exit_code == 0, hard=True)
    s.expect(f"both runs sent something", all(((x.final() or x.last()).get("sent") or 0) > 0 for x in (a, b)))


# --- fuzzed input -------------------------------------------------------------------------------------------

def hostile_messages(rng, category):
    """(kind, bytes) for messages that must be dead-lettered as invalid."""
    other = CATEGORIES[(CATEGORIES.index(category) + 1) % len(CATEGORIES)]
    deep = "(" * 32000 + category + ")" * 32000
    out = [
        ("truncated JSON", b'{"id": "h", "headline": "Quake'),
        ("not JSON", b"hello, kafka"),
        ("JSON array", b'["id", "headline"]'),
        ("JSON null", b"null"),
        ("32,000-deep tagExpression", json.dumps({"id": f"h-deep-{category}", "headline": "Deep", "category": category, "tagExpression": deep}).encode()),
        ("32,000-deep JSON arrays", b"[" * 32000 + b"]" * 32000),
        ("32,000-deep JSON objects", b'{"a":' * 10000 + b"1" + b"}" * 10000),
        ("headline of 60,000 characters", json.dumps({"id": "h-long", "headline": "x" * 60000, "category": category}).encode()),
        ("200 KB message", json.dumps({"id": "h-huge", "headline": "Huge", "category": category, "body": "y" * 200000}).encode()),
        ("id of 10,000 characters", json.dumps({"id": "i" * 10000, "headline": "Long id", "category": category}).encode()),
        ("raw control characters in a string", b'{"id":"h-ctl","headline":"a\x01\x02\x1b[31m\x00b","category":"' + category.encode() + b'"}'),
        ("NUL bytes", b"\x00" * 64),
        ("invalid UTF-8", b'{"id":"h-utf","headline":"\xff\xfe\xc3\x28","category":"' + category.encode() + b'"}'),
        ("category of another topic", json.dumps({"id": "h-cat", "headline": "Wrong topic", "category": other}).encode()),
        ("id is a number", json.dumps({"id": 42, "headline": "Number id", "category": category}).encode()),
        ("empty users", json.dumps({"id": "h-users", "headline": "No users", "category": category, "users": []}).encode()),
        ("tagExpression and users", json.dumps({"id": "h-both", "headline": "Both", "category": category, "tagExpression": category, "users": ["a"]}).encode()),
        ("unbalanced tagExpression", json.dumps({"id": "h-unbal", "headline": "Unbalanced", "category": category, "tagExpression": "((World && Sports"}).encode()),
        ("tagExpression of 50 tags with &&", json.dumps({"id": "h-tags", "headline": "Tags", "category": category,
                                                        "tagExpression": " && ".join(f"t{i}" for i in range(50))}).encode()),
        ("property value not a string", json.dumps({"id": "h-prop", "headline": "Prop", "category": category, "properties": {"a": {"b": 1}}}).encode()),
        ("bad expiresAt", json.dumps({"id": "h-exp", "headline": "Exp", "category": category, "expiresAt": "tomorrow"}).encode()),
        ("headline is a huge number", b'{"id":"h-num","headline":1e999999,"category":"' + category.encode() + b'"}'),
    ]
    out += [(f"random bytes {i}", bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 4096)))) for i in range(4)]
    return out


def odd_valid(n, category):
    """Odd but valid items (the schema accepts them): expected to be delivered."""
    ident = f"s9-odd-{category}-{n}"
    head = f"Fault item {ident} "
    return [
        {"id": ident + "a", "headline": head.replace(ident, ident + "a") + "\u0645\u0631\u062d\u0628\u0627 \U0001F30D e\u0301 \u200b\u202e", "category": category},
        {"id": ident + "b", "headline": head.replace(ident, ident + "b") + "tab\tand \u0007 bell", "category": category},
        {"id": ident + "c", "headline": head.replace(ident, ident + "c") + "long body", "category": category, "body": "z" * 30000, "x": [[[[{"y": 1}]]]]},
    ]


def s9_fuzz(s):
    """Hostile messages and valid items interleaved on every partition, straight to the topics with kcat."""
    s.start()
    rng = random.Random(14)
    valid_ids, hostile = [], {}
    n = 0
    for category in CATEGORIES:
        hostile_list = hostile_messages(rng, category)
        for p in range(PARTITIONS):
            # each partition: a few hostile messages, each followed by valid items behind it
            picks = hostile_list[p::PARTITIONS] + ([hostile_list[4]] if p != 4 else [])  # the deep expression everywhere
            messages = []
            for kind, value in picks:
                messages.append((kind, value, False))
                for _ in range(5):
                    it = item(9, n)
                    it["category"] = category
                    messages.append(("valid", json.dumps(it).encode(), True))
                    valid_ids.append(it["id"])
                    n += 1
            if p == 0:
                for odd in odd_valid(n, category):
                    messages.append(("odd but valid", json.dumps(odd).encode(), True))
                    valid_ids.append(odd["id"])
            files = []
            for i, (kind, value, ok) in enumerate(messages):
                path = os.path.join(s.work, f"m-{category}-{p}-{i}.bin")
                with open(path, "wb") as f:
                    f.write(value)
                files.append(path)
                if not ok:
                    hostile[(topic(category), p, i)] = kind
            out = subprocess.run(["kcat", "-P", "-b", s.broker.bootstrap, "-t", topic(category), "-p", str(p),
                                  "-X", "message.max.bytes=1000000", *files], capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"kcat -P exited {out.returncode}: {out.stderr[-500:]}")
            # the offsets are the order of the files; check with the sizes read back
            back = subprocess.run(["kcat", "-C", "-b", s.broker.bootstrap, "-t", topic(category), "-p", str(p), "-o", "beginning",
                                   "-e", "-q", "-f", "%o %S\n"], capture_output=True, text=True)
            sizes = [int(l.split()[1]) for l in back.stdout.splitlines() if l.strip()]
            if sizes != [len(v) for _, v, _ in messages]:
                raise RuntimeError(f"{topic(category)}[{p}] read back {len(sizes)} messages, sizes differ from what was produced")
    s.valid_ids, s.produced = valid_ids, len(valid_ids) + len(hostile)
    runs = []
    for attempt in range(3):  # a crash would loop on the same offset: try a restart twice to show it
        r = s.run(["--exit-when-idle", "3"])
        r.wait(120)
        runs.append(r)
        if r.exit_code == 0:
            break
    records = read_dlq(s.dlqs)
    by_source = {(r["source"]["topic"], r["source"]["partition"], r["source"]["offset"]): r for r in records if isinstance(r.get("source"), dict)}
    swallowed = sorted({kind for key, kind in hostile.items() if key not in by_source})
    not_invalid = sorted({f"{kind}: {by_source[key].get('reason')}" for key, kind in hostile.items()
                          if key in by_source and by_source[key].get("reason") != "invalid"})
    s.extra["fuzz"] = {"hostile": len(hostile), "valid": len(valid_ids), "hostileKinds": len(set(hostile.values())),
                       "hostileNotDeadLettered": swallowed, "hostileDeadLetteredNotAsInvalid": not_invalid,
                       "validDeadLettered": sorted({r.get("itemId") for r in records if r.get("itemId") in set(valid_ids)})[:20]}
    s.expect("exit 0 (no crash)", runs[-1].exit_code == 0 and len(runs) == 1, hard=True)
    s.expect("every hostile message dead-lettered", not swallowed, hard=True)
    s.expect("every hostile message dead-lettered as invalid", not not_invalid)
    s.expect("no valid item dead-lettered", not s.extra["fuzz"]["validDeadLettered"])


def sas_token(connection, resource):
    """A SAS token for `resource`, as the client makes one (for the one registration this script writes)."""
    import base64, hashlib, hmac, urllib.parse
    parts = dict(p.split("=", 1) for p in connection.strip(";").split(";"))
    expiry = int(time.time()) + 3600
    target = urllib.parse.quote(resource, safe="").lower()
    signature = base64.b64encode(hmac.new(parts["SharedAccessKey"].encode(), f"{target}\n{expiry}".encode(), hashlib.sha256).digest())
    return (f"SharedAccessSignature sr={target}&sig={urllib.parse.quote(signature, safe='')}"
            f"&se={expiry}&skn={parts['SharedAccessKeyName']}")


def s12_canary(s):
    """Three `run --canary-every 1` in one group for 60 s beside 600 news items, a test device on the canary
    tag; then the key refused (401) for a few seconds, with `hubcast canary --once` asked meanwhile."""
    s.start()
    resource = f"http://127.0.0.1:{s.emulator.port}/{HUB}"
    body = json.dumps({"installationId": "canary-phone", "platform": "apns", "pushChannel": "abc", "tags": ["hubcast-canary"],
                       "templates": {"t": {"body": '{"aps":{"alert":"$(messageParam)"}}'}}}).encode()
    req = urllib.request.Request(f"{resource}/installations/canary-phone?api-version=2020-06", data=body, method="PUT",
                                 headers={"Content-Type": "application/json", "Authorization": sas_token(s.emulator.connection, resource)})
    urllib.request.urlopen(req, timeout=30).read()
    s.produce([item(12, n) for n in range(600)])
    runs = [s.run(["--canary-every", "1"]) for _ in range(3)]

    def canaries():
        return [m["canary"] for r in runs for _, m in list(r.metrics) if "canary" in m]

    wait_until(lambda: sum(1 for r in runs if r.stderr_lines("Partitions assigned", limit=1)) == 3, 60)
    start_ms, steady_from = int(time.time() * 1000), len(canaries())
    time.sleep(60)
    steady = [c for c in canaries()[steady_from:] if c["atMs"] >= start_ms]
    requesters = collections.Counter(c["id"].rsplit("-", 1)[0] for c in steady)
    e2e = sorted(c.get("endToEndMs", 0) for c in steady if c["outcome"] == "verified")

    s.emulator.fault({"status": 401})
    refused_at = time.time()
    failed = wait_until(lambda: any(c["outcome"] == "failed" and c.get("reason") == "unauthorized" and c["atMs"] >= refused_at * 1000
                                    for c in canaries()), 30)
    first_failure_s = round(time.time() - refused_at, 1) if failed else None
    gate = subprocess.run([s.binary, "canary", "--once", "--brokers", s.broker.bootstrap, "--timeout", "2", "--log-level", "warning"],
                          capture_output=True, text=True, timeout=60)
    s.emulator.clear_faults()
    cleared_at = time.time()
    back = wait_until(lambda: any(c["outcome"] == "verified" and c["atMs"] >= cleared_at * 1000 for c in canaries()), 30)
    for r in runs:
        r.signal_and_time(signal.SIGTERM, 60)
    s.extra["canary"] = {
        "inSixtySeconds": len(steady), "verified": sum(1 for c in steady if c["outcome"] == "verified"),
        "requesters": len(requesters), "reportedTwice": len(steady) - len({c["id"] for c in steady}),
        "e2eMsP50": e2e[len(e2e) // 2] if e2e else None, "e2eMsMax": e2e[-1] if e2e else None,
        "firstFailureAfterRefusalS": first_failure_s, "gateExitWhileRefused": gate.returncode,
        "verifiedAgainAfterClearing": back,
    }
    s.expect("59-61 canaries in 60 s at --canary-every 1, all verified", 59 <= len(steady) <= 61 and all(c["outcome"] == "verified" for c in steady))
    s.expect("one instance asked for them, each reported once", len(requesters) == 1 and s.extra["canary"]["reportedTwice"] == 0)
    s.expect("key refused: a canary failed as unauthorized within 2 intervals", first_failure_s is not None and first_failure_s <= 2.5)
    s.expect("canary --once exits 1 while the key is refused", gate.returncode == 1)
    s.expect("verified again once the key is accepted", back)
    s.expect("every run exits 0", all(r.exit_code == 0 for r in runs), hard=True)


def s13_503_outage(s):
    """The hub answers 503 to everything for 40 s, then recovers; 600 items: a 5xx is the hub's, so all are
    delivered and none dead-lettered."""
    s.start()
    s.emulator.fault({"status": 503})
    s.produce([item(13, n) for n in range(600)])
    r = s.run(["--exit-when-idle", "3"])
    time.sleep(40)
    during = delivered_count(s)
    s.emulator.clear_faults()
    cleared = time.time()
    all_in = wait_until(lambda: delivered_count(s) >= 600, 120)
    r.wait(60)
    s.extra["outage"] = {"deliveredDuring": during, "secondsToAllAfterRecovery": round(time.time() - cleared, 1) if all_in else None,
                         "hubAvailableFalseLines": sum(1 for _, m in r.metrics if m.get("hubAvailable") is False),
                         "statusCounts": s.emulator.stats()["statusCounts"]}
    s.expect("exit 0", r.exit_code == 0, hard=True)
    s.expect("nothing dead-lettered for a 5xx outage", not read_dlq(s.dlqs))
    s.expect("all 600 delivered after the hub recovered", all_in)


def s14_drops_for_30s(s):
    """10% of connections dropped without an answer for 30 s while 3,000 items arrive (100 a second): a
    dropped connection is retried, not taken for an outage."""
    s.start()
    s.emulator.fault({"dropConnection": 0.1})
    s.produce([item(14, n) for n in range(100)], name="first")
    r = s.run(["--exit-when-idle", "5"])
    started = time.time()
    for batch in range(1, 30):
        time.sleep(max(0.0, started + batch - time.time()))
        s.produce([item(14, n) for n in range(batch * 100, (batch + 1) * 100)], name=f"batch{batch}")
    all_in = wait_until(lambda: delivered_count(s) >= 3000, 60)
    stats = s.emulator.stats()
    s.emulator.clear_faults()
    r.wait(60)
    state_lines = r.stderr_lines("The hub is unavailable|The hub is available again", 10_000)
    s.extra["during"] = {"secondsToAll": round(time.time() - started, 1) if all_in else None,
                         "statusCounts": stats["statusCounts"], "retried": r.last().get("retried"),
                         "hubStateLogLines": len(state_lines),
                         "hubAvailableFalseLines": sum(1 for _, m in r.metrics if m.get("hubAvailable") is False)}
    s.expect("exit 0", r.exit_code == 0, hard=True)
    s.expect("all 3,000 delivered", all_in)
    s.expect("the hub never reported unavailable", s.extra["during"]["hubAvailableFalseLines"] == 0)
    s.expect("at most 30 hub-state log lines", len(state_lines) <= 30)
    s.expect("connections were dropped (retried > 0)", (r.last().get("retried") or 0) > 0)


def s16_two_hubs_one_refusing(s):
    """Two hubs (two emulators): Sports goes to the second, which answers 401 to every send for 60 s;
    30,000 items. The first hub's 25,000 go at the rate they go with both hubs up (a control run first,
    same items, no fault); the second's 5,000 follow once it takes the key again; nothing dead-lettered."""
    s.start()
    sports = Emulator(s.binary, s.work, hub="sportshub")
    s.other_emulators.append(sports)
    routes = os.path.join(s.work, "routes.yaml")
    with open(os.path.join(s.work, "main.conn"), "w") as f:
        f.write(s.emulator.connection)
    with open(os.path.join(s.work, "sports.conn"), "w") as f:
        f.write(sports.connection)
    with open(routes, "w") as f:
        f.write(f"hubs:\n  main: {{hub: {HUB}, connection-string-file: main.conn}}\n"
                "  sports: {hub: sportshub, connection-string-file: sports.conn}\n"
                "categories:\n  Sports: sports\ndefault: main\n")
    per_hub = lambda n: (n * 5 // 6, n // 6)  # items n % 6 == 5 are Sports

    def main_rate(count):
        """Runs until the first hub accepted `count` more: its sends a second, from the first to the last.
        One group for both runs: the second starts where the control run committed."""
        r = s.run(["--exit-when-idle", "3"], routes=routes)
        start = delivered_count(s)
        wait_until(lambda: delivered_count(s) > start, 60, 0.01)
        t0 = time.time()
        done = wait_until(lambda: delivered_count(s) >= start + count, 120, 0.01)
        return r, (round(count / max(time.time() - t0, 1e-3), 1) if done else None)

    # Control: both hubs up.
    s.produce([item(16, n) for n in range(30_000)], "control")
    control, control_rate = main_rate(per_hub(30_000)[0])
    control.wait(120)
    # The fault: the sports hub refuses every send; new items, a new group.
    sports.fault({"status": 401})
    s.produce([item(16, n) for n in range(30_000, 60_000)], "fault")
    r, fault_rate = main_rate(per_hub(30_000)[0])
    main_done_at = time.time()
    sports_during = sports.stats()["statusCounts"].get("201", 0)
    time.sleep(max(0.0, 60 - (main_done_at - r.t0)))
    sports_accepted_while_refusing = sports.stats()["statusCounts"].get("201", 0)
    sports.clear_faults()
    cleared = time.time()
    sports_all = wait_until(lambda: sports.stats()["statusCounts"].get("201", 0) >= 2 * per_hub(30_000)[1], 120)
    r.wait(60)
    held = [m for _, m in r.metrics if (m.get("hubs") or {}).get("sports", {}).get("available") is False]
    s.extra["refused"] = {"mainSendsPerSecBothUp": control_rate, "mainSendsPerSecOtherRefusing": fault_rate,
                          "ratio": round(fault_rate / control_rate, 2) if control_rate and fault_rate else None,
                          "sportsAcceptedWhileRefusing": sports_accepted_while_refusing - per_hub(30_000)[1],
                          "secondsToSportsAfterRecovery": round(time.time() - cleared, 1) if sports_all else None,
                          "linesWithSportsHeld": len(held), "sportsDuringMain": sports_during - per_hub(30_000)[1]}
    s.expect("exit 0", r.exit_code == 0 and control.exit_code == 0, hard=True)
    s.expect("nothing dead-lettered", not read_dlq(s.dlqs), hard=True)
    s.expect("the refusing hub accepted nothing while it refused", s.extra["refused"]["sportsAcceptedWhileRefusing"] == 0)
    s.expect("the other hub sent at ≥ 0.9× its rate with both hubs up",
             s.extra["refused"]["ratio"] is not None and s.extra["refused"]["ratio"] >= 0.9)
    s.expect("the refusing hub's items followed once it took the key", sports_all)
    s.expect("the metrics line said the sports hub was held", len(held) > 0)


PARTITION_NAME = re.compile(r"news\.[a-z]+\[\d+\]")


def owned_twice(runs, min_seconds=2):
    """Partitions two runs owned at once for at least `min_seconds`, from their "Partitions assigned" and
    "Partitions revoked" lines (1 s stamps; a revoke is logged before its drain, so a shorter overlap is noise)."""
    spans = collections.defaultdict(list)
    for r in runs:
        owned = {}
        for line in open(r.err_path, errors="replace"):
            at = stamp(line)
            if at is None or not ("Partitions assigned" in line or "Partitions revoked" in line):
                continue
            for p in PARTITION_NAME.findall(line):
                if "Partitions assigned" in line:
                    owned.setdefault(p, at)
                elif p in owned:
                    spans[p].append((r.name, owned.pop(p), at))
        for p, since in owned.items():
            spans[p].append((r.name, since, r.exit_at or time.time()))
    out = []
    for p, ss in sorted(spans.items()):
        for i, (a, a0, a1) in enumerate(ss):
            for b, b0, b1 in ss[i + 1:]:
                both = min(a1, b1) - max(a0, b0)
                if a != b and both >= min_seconds:
                    out.append(f"{p} by {a} and {b} for {both:.0f} s from {time.strftime('%H:%M:%S', time.gmtime(max(a0, b0)))}")
    return out


def repeated_sends(s, timeline, started):
    """For items the emulator accepted more than once: {"items", "byCategory", "secondSendAt" (seconds after
    `started`, counted per second), "sample"}; `timeline` is [(time, accepted sends so far)]."""
    sends = collections.defaultdict(list)
    for index, d in enumerate(s.emulator.call("GET", "/_emulator/deliveries")["deliveries"]):
        for payload in d["payloads"]:
            m = ID_IN_PAYLOAD.search(payload)
            if m:
                sends[m.group(1)].append(index)
    twice = {i: ix for i, ix in sends.items() if len(ix) > 1}

    def at(index):
        return next((round(t - started) for t, n in timeline if n > index), None)

    seconds = collections.Counter(at(ix[1]) for ix in twice.values())
    return {"items": len(twice),
            "byCategory": dict(collections.Counter(CATEGORIES[int(i.rsplit("-", 1)[1]) % len(CATEGORIES)] for i in twice)),
            "secondSendAt": {f"{k} s": v for k, v in sorted(seconds.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))},
            "sample": sorted(twice)[:10]}


CHURN = ["join", "join", "leave", "join", "leave", "leave"]  # one every 10 s after A and B: 3, 4, 3, 4, 3, 2 running
CHURN_ITEMS = 50_000
# as deploy/ sets it: spreads the 12 partitions over all the members (librdkafka's default, range, splits each
# 2-partition topic on its own, so two members at most would get any)
CHURN_ASSIGNOR = "cooperative-sticky"


def s15_rebalance_churn(s):
    """Rebalance churn on a real coordinator: `hubcast run`s in one group on Tansu (6 topics × 2 partitions,
    cooperative-sticky), hub latency 200 ms, 50,000 items. A and B start; every 10 s for a minute one more
    joins or the oldest leaves (SIGTERM), up to four at once; those left run until every item is delivered,
    then SIGTERM."""
    s.start(latency_ms=200, tansu_partitions=2)
    for batch in range(5):
        s.produce([item(15, n) for n in range(batch * 10_000, (batch + 1) * 10_000)], name=f"batch{batch}")
    # as Tests/IntegrationTests/MultiInstanceTests.swift runs them against Tansu
    extra = ["--commit-interval-ms", "1000", "--retry-base-ms", "10", "--retry-max-ms", "200",
             "--kafka-property", f"partition.assignment.strategy={CHURN_ASSIGNOR}"]
    group = "faults-churn"
    started = time.time()
    timeline, sampling = [], threading.Event()  # (time, sends accepted so far), to date the repeated sends

    def sample():
        while not sampling.is_set():
            try:
                timeline.append((time.time(), delivered_count(s)))
            except Exception:
                pass
            sampling.wait(0.5)

    threading.Thread(target=sample, daemon=True).start()
    running = [s.run(extra, group), s.run(extra, group)]
    born, gone, stop_seconds, events, stoppers = {r.name: 0.0 for r in running}, {}, {}, [], []

    def stop(r):
        stop_seconds[r.name] = r.signal_and_time(signal.SIGTERM, 60)
        gone[r.name] = round(time.time() - started, 1)

    def stop_in_background(r):
        t = threading.Thread(target=stop, args=(r,), daemon=True)
        t.start()
        stoppers.append(t)

    for step, what in enumerate(CHURN, 1):
        time.sleep(max(0.0, started + 10 * step - time.time()))
        if what == "join":
            r = s.run(extra, group)
            running.append(r)
            born[r.name] = round(time.time() - started, 1)
        else:
            r = running.pop(0)  # the oldest; its SIGTERM and drain run beside the schedule
            stop_in_background(r)
        events.append(f"{round(time.time() - started)}s {what} {r.name} ({len(running)} running, {delivered_count(s):,} sent)")
        log(f"  {events[-1]}")
    churn_end = time.time()
    delivered_at_churn_end = delivered_count(s)
    for t in stoppers:
        t.join(90)

    valid = set(s.valid_ids)

    all_in, deadline = False, churn_end + 300
    while time.time() < deadline:
        if any(r.proc.poll() is not None for r in running):
            s.notes.append("a run ended by itself before every item was delivered: " +
                           ", ".join(f"{r.name} exit {r.proc.poll()}" for r in running if r.proc.poll() is not None))
            break
        if delivered_count(s) >= CHURN_ITEMS and valid <= set(s.emulator.accepted()):
            all_in = True
            break
        time.sleep(2)
    seconds_to_all = round(time.time() - started, 1) if all_in else None
    stoppers = []
    for r in running:
        stop_in_background(r)
    for t in stoppers:
        t.join(90)
    sampling.set()

    joins, leaves = CHURN.count("join"), CHURN.count("leave")
    left = [r for r in s.runs if r.name not in {x.name for x in running}]
    s.extra["churn"] = {
        "assignor": CHURN_ASSIGNOR, "joins": joins, "leaves": leaves, "secondsToAll": seconds_to_all, "deliveredAtChurnEnd": delivered_at_churn_end,
        "leaveExitSeconds": [stop_seconds.get(r.name) for r in left],
        "finalStopExitSeconds": [stop_seconds.get(r.name) for r in running],
        "instances": [f"{r.name}: exit {r.exit_code}, sent {(r.final() or r.last()).get('sent')}, "
                      f"{born[r.name]}-{gone.get(r.name)} s" for r in s.runs],
        "partitionsAssignedLines": sum(len(r.stderr_lines(r"partitions=\[(news\.|\]).*Partitions assigned", 10_000)) for r in s.runs),
        "commitFailedLines": sum(len(r.stderr_lines(r"Commit failed", 10_000)) for r in s.runs),
        "revokeCommitFailedLines": sum(len(r.stderr_lines(r"Commit on revoke failed", 10_000)) for r in s.runs),
        # re-read after a rebalance and skipped by the run's own dedupe window (its `duplicates` metric): sends the
        # hub would have had twice, had another member taken those partitions
        "reReadSkippedByDedupe": sum((r.final() or r.last()).get("duplicates") or 0 for r in s.runs),
        "rebalanceFailedLines": sum(len(r.stderr_lines(r"Rebalance failed", 10_000)) for r in s.runs),
        "ownedTwice": owned_twice(s.runs),
        "schedule": events,
    }
    try:
        s.extra["churn"]["sentTwice"] = repeated_sends(s, timeline, started)
    except Exception as error:
        s.notes.append(f"could not read the emulator's deliveries in order: {error}")
    s.expect("every run exits 0 on SIGTERM", all(r.exit_code == 0 for r in s.runs), hard=True)
    s.expect("each leaving run exits within its drain timeout (30 s)",
             all(stop_seconds.get(r.name) is not None and stop_seconds[r.name] <= 30 for r in left), hard=True)
    s.expect(f"all {CHURN_ITEMS:,} delivered within 5 minutes of the churn's end", all_in)
    s.duplicate_limits = [(f"duplicates ≤ {CONCURRENCY} in flight × {joins + leaves} joins and leaves",
                           CONCURRENCY * (joins + leaves), False)]


SCENARIOS = [
    (1, "429 storm", s1_429_storm),
    (2, "5xx and dropped connections", s2_5xx_drops),
    (3, "hub down 60 s", s3_hub_down),
    (4, "credentials refused", s4_credentials),
    (5, "SIGTERM, hub up", s5_sigterm_hub_up),
    (6, "SIGTERM, hub down", s6_sigterm_hub_down),
    (7, "SIGKILL and restart", s7_sigkill),
    (8, "rebalance", s8_rebalance),
    (9, "fuzzed input", s9_fuzz),
    (10, "sporadic throttling", s10_sporadic_throttling),
    (11, "429, 503 and drops at once", s11_everything_at_once),
    (12, "canary", s12_canary),
    (13, "503 to everything for 40 s", s13_503_outage),
    (14, "dropped connections for 30 s", s14_drops_for_30s),
    (15, "rebalance churn on Tansu", s15_rebalance_churn),
    (16, "two hubs, one refusing credentials for 60 s", s16_two_hubs_one_refusing),
]


def run_scenario(number, name, body, binary, work):
    log(f"scenario {number}: {name}")
    s = Scenario(number, name, binary, work)
    try:
        body(s)
    except Exception as error:  # the scenario could not be carried out: a hard miss, counted after what happened
        s.notes.append(f"scenario aborted: {type(error).__name__}: {error}")
        s.expect("scenario ran to its end", False, hard=True)
    finally:
        for r in s.runs:
            if r.proc.poll() is None:
                r.proc.kill()
                r.wait(10)
    if s.broker is None or s.emulator is None:
        kill_all()
        return {"scenario": f"{number}. {name}", "status": "MISS", "hardMiss": True, "notes": s.notes, "expectations": s.expectations,
                "produced": 0, "delivered": 0, "duplicates": 0, "deadLettered": 0, "lost": 0, "exitCodes": [], "seconds": 0}
    result = s.finish()
    if hasattr(s, "dup_bound"):
        bound = s.dup_bound
        result["expectations"].append({"expectation": f"duplicates ≤ finished-but-uncommitted at the kill ({bound})",
                                       "met": bound is not None and result["duplicates"] <= bound, "hard": True})
    for what, bound, hard in getattr(s, "duplicate_limits", []):
        result["expectations"].append({"expectation": f"{what} ({bound})", "met": result["duplicates"] <= bound, "hard": hard})
    if hasattr(s, "dup_bound") or hasattr(s, "duplicate_limits"):
        result["status"] = "PASS" if all(e["met"] for e in result["expectations"]) else "MISS"
        result["hardMiss"] = any(e["hard"] and not e["met"] for e in result["expectations"])
    for e in result["expectations"]:
        if not e["met"]:
            log(f"  MISS{' (hard)' if e['hard'] else ''}: {e['expectation']}")
    return result


def detail(r):
    for key in ("during", "outage", "refused", "sigterm", "kill", "rebalance", "fuzz", "canary", "churn"):
        if key in r:
            d = {k: v for k, v in r[key].items() if k not in ("note", "errorLines")}
            return ", ".join(f"{k}={v}" for k, v in d.items() if v not in (None, [], {}))
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="scenario numbers, comma-separated")
    parser.add_argument("--output", default=os.path.join(ROOT, "benchmarks/results/faults.json"))
    parser.add_argument("--keep", action="store_true", help="keep the work directory (stderr of every run, DLQ files)")
    args = parser.parse_args()
    binary = os.environ.get("HUBCAST_BIN") or os.path.join(ROOT, ".build-faults/release/hubcast")
    if not os.access(binary, os.X_OK):
        raise SystemExit(f"no hubcast binary at {binary} (build it: swift build -c release --product hubcast --scratch-path .build-faults)")
    only = {int(x) for x in args.only.split(",")} if args.only else None
    work = tempfile.mkdtemp(prefix="hubcast-faults-")
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: (kill_all(), sys.exit(130)))
    results, started = [], time.time()
    try:
        for number, name, body in SCENARIOS:
            if only and number not in only:
                continue
            results.append(run_scenario(number, name, body, binary, work))
    finally:
        kill_all()
        if args.keep:
            log(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    header = f"{'scenario':<32}{'produced':>9}{'delivered':>10}{'dup':>6}{'DLQ':>6}{'lost':>6}  {'exit':<12}{'time s':>7}  result"
    print(header)
    print("-" * len(header))
    for r in results:
        exits = ",".join(str(c) for c in r["exitCodes"])
        print(f"{r['scenario']:<32}{r['produced']:>9,}{r['delivered']:>10,}{r['duplicates']:>6}{r['deadLettered']:>6}{r['lost']:>6}  "
              f"{exits:<12}{r['seconds']:>7}  {r['status']}")
    print()
    for r in results:
        line = detail(r)
        if line:
            print(f"{r['scenario']}: {line}")
        for e in r["expectations"]:
            if not e["met"]:
                print(f"  MISS{' (hard)' if e['hard'] else ''}: {e['expectation']}")
        for n in r["notes"]:
            print(f"  note: {n}")
    built_from = os.environ.get("HUBCAST_BUILT_FROM") or (None if os.environ.get("HUBCAST_BIN") else subprocess.run(
        ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True).stdout.strip())
    result = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "binary": binary, "builtFrom": built_from,
              "seconds": round(time.time() - started, 1), "machine": {"cores": os.cpu_count()}, "scenarios": results}
    if not only:
        os.makedirs(os.path.dirname(args.output), exist_ok=True)
        with open(args.output, "w") as f:
            json.dump(result, f, indent=2, ensure_ascii=False)
        print(f"\nwrote {os.path.relpath(args.output, ROOT)} ({result['seconds']} s)")
    return 1 if any(r["hardMiss"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
