#!/usr/bin/env python3
"""The same job as `hubcast run`, written the way a competent Python developer would: the peer
hubcast is compared with in benchmarks/bench.py.

confluent-kafka consumer in a group (auto-commit off), batches of up to 500 messages, each item
decoded and checked, one template send per item to its category tag through one aiohttp session
(a pool of --concurrency keep-alive connections, at most --concurrency sends in flight), the SAS
token computed once, the same headers and body as hubcast, a 429 retried after its Retry-After (5xx
and connection errors up to 5 times with backoff), and the batch's offsets committed after its
sends finish. Exits once no message has arrived for --idle seconds; prints one JSON summary.

Usage: python_peer.py --brokers HOST:PORT --url http://127.0.0.1:PORT/hub/messages/?api-version=2020-06
                      --connection-string '...' [--concurrency 64] [--idle 2]
"""
import argparse, asyncio, base64, hashlib, hmac, json, sys, time, urllib.parse

import aiohttp
from confluent_kafka import Consumer, KafkaError

CATEGORIES = ["World", "Politics", "Business", "Technology", "Science", "Sports"]


def sas_token(connection_string, hub_url, ttl=1200):
    parts = dict(p.split("=", 1) for p in connection_string.split(";") if "=" in p)
    resource = hub_url.split("/messages")[0]
    uri = urllib.parse.quote(resource, safe="").lower()
    expiry = str(int(time.time()) + ttl)
    digest = hmac.new(parts["SharedAccessKey"].encode(), (uri + "\n" + expiry).encode(), hashlib.sha256).digest()
    signature = urllib.parse.quote(base64.b64encode(digest), safe="")
    return f"SharedAccessSignature sr={uri}&sig={signature}&se={expiry}&skn={parts['SharedAccessKeyName']}"


def body_for(item):
    category = item["category"]
    return json.dumps({"messageParam": f"Breaking {category} News : {item['headline']}", "headline": item["headline"],
                       "category": category, "id": item["id"]}, separators=(",", ":")).encode()


async def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--connection-string", required=True)
    parser.add_argument("--topic-prefix", default="news.")
    parser.add_argument("--group", default="python-peer")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--idle", type=float, default=2)
    args = parser.parse_args()

    consumer = Consumer({"bootstrap.servers": args.brokers, "group.id": args.group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
    consumer.subscribe([args.topic_prefix + c.lower() for c in CATEGORIES])
    authorization = sas_token(args.connection_string, args.url)
    base_headers = {"Authorization": authorization, "Content-Type": "application/json;charset=utf-8",
                    "ServiceBusNotification-Format": "template", "x-ms-version": "2020-06"}
    limit = asyncio.Semaphore(args.concurrency)
    sent = failed = invalid = throttled = 0
    latencies = []
    loop = asyncio.get_running_loop()

    async def send(session, item):
        nonlocal sent, failed, throttled
        body, headers = body_for(item), {**base_headers, "ServiceBusNotification-Tags": item["category"]}
        failures, backoff = 0, 0.1
        async with limit:
            while failures < 5:
                started = time.perf_counter()
                try:
                    async with session.post(args.url, data=body, headers=headers) as response:
                        await response.read()
                        status, wait = response.status, response.headers.get("Retry-After", "1")
                except aiohttp.ClientError:
                    status = None
                if status in (200, 201):
                    sent += 1
                    latencies.append(time.perf_counter() - started)
                    return
                if status == 429:
                    # Throttling is the hub asking to wait, not a failure: wait as long as it says, then retry.
                    throttled += 1
                    await asyncio.sleep(float(wait) if wait.isdigit() else 1.0)
                    continue
                if status is not None and status < 500:
                    break
                failures += 1
                await asyncio.sleep(backoff)
                backoff *= 2
            failed += 1

    connector = aiohttp.TCPConnector(limit=args.concurrency)
    started = time.perf_counter()
    first = last_message = done = None
    async with aiohttp.ClientSession(connector=connector) as session:
        while True:
            # consume() blocks; a thread keeps the event loop free for the sends in flight.
            messages = await loop.run_in_executor(None, lambda: consumer.consume(num_messages=500, timeout=0.1))
            now = time.perf_counter()
            if not messages:
                # Joining the group may take seconds; after the first message, --idle ends the run.
                if now - (last_message or started) >= (args.idle if last_message else 60):
                    break
                continue
            first = first or now
            last_message = now
            sends = []
            for message in messages:
                if message.error():
                    if message.error().code() != KafkaError._PARTITION_EOF:
                        print(f"consume error: {message.error()}", file=sys.stderr)
                    continue
                try:
                    item = json.loads(message.value())
                    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) and item[k] for k in ("id", "headline", "category")):
                        raise ValueError("missing id, headline or category")
                except ValueError:
                    invalid += 1
                    continue
                sends.append(send(session, item))
            await asyncio.gather(*sends)
            consumer.commit(asynchronous=False)
            done = time.perf_counter()
    consumer.close()
    elapsed = done - first if first else 0.0
    latencies.sort()
    pick = lambda q: round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000, 2) if latencies else 0.0
    print(json.dumps({"sent": sent, "failed": failed, "invalid": invalid, "throttled": throttled, "seconds": round(elapsed, 3),
                      "sendsPerSec": round(sent / elapsed, 1) if elapsed > 0 else 0.0, "p50Ms": pick(0.5), "p99Ms": pick(0.99)}))


if __name__ == "__main__":
    asyncio.run(main())
