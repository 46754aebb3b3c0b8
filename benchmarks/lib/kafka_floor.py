#!/usr/bin/env python3
"""Kafka alone: the end-to-end floor of the latency runs of benchmarks/bench.py.

The same schedule as a latency run, through a fresh broker of the same kind, to a consumer that
does nothing but note when each item arrived: what hubcast's end-to-end figure cannot go below on
such a broker and this machine (the broker's own path, its fetch deadline, its CPU). The consumer
fetches as hubcast does (`fetch.wait.max.ms` 3, auto-commit off), joins a group of its own before
the schedule starts, and reads until every item came (or nothing came for QUIET_SECONDS).

Reads one JSON object on stdin: {"brokers": "HOST:PORT", "topics": [...], "items": [[seconds, topic,
key, value], …]} (the schedule for lib/schedule_producer.py, which it runs). Prints one JSON object:
{"produced": N, "received": N, "startMs": …, "producedAt": {key: epoch seconds, …},
"arrivedAfterMs": {key: ms after its produce call, …}}.
"""
import json, os, subprocess, sys, tempfile, time

from confluent_kafka import Consumer

FETCH_WAIT_MS = 3  # hubcast's default (Sources/Kafka/KafkaConfiguration.swift)
QUIET_SECONDS = 10  # once the producer is done: it stops after this long with nothing new...
DRAIN_AT_MOST = 120  # ...or after this long in all (a broker far behind), so late items still count


def main():
    plan = json.load(sys.stdin)
    consumer = Consumer({"bootstrap.servers": plan["brokers"], "group.id": "kafka-floor", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "fetch.wait.max.ms": FETCH_WAIT_MS})
    consumer.subscribe(plan["topics"])
    deadline = time.time() + 60
    while not consumer.assignment():
        if time.time() > deadline:
            print("the floor's consumer was assigned no partition in 60 s", file=sys.stderr)
            return 1
        consumer.poll(0.1)
    arrived = {}
    with tempfile.TemporaryFile("w+") as out:
        # The producer's answer (every item's produce time) is large: to a file, not a pipe it would fill.
        producer = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "schedule_producer.py")],
                                    stdin=subprocess.PIPE, stdout=out, text=True)
        producer.stdin.write(json.dumps({"brokers": plan["brokers"], "items": plan["items"]}))
        producer.stdin.close()
        done_at = last_at = None
        total = len(plan["items"])
        while done_at is None or (len(arrived) < total and time.time() - last_at < QUIET_SECONDS
                                  and time.time() - done_at < DRAIN_AT_MOST):
            message = consumer.poll(0.05)
            if message is not None and not message.error() and message.key():
                arrived[message.key().decode()] = last_at = time.time()
            if done_at is None and producer.poll() is not None:
                done_at = time.time()
                last_at = last_at or done_at
        consumer.close()
        if producer.returncode != 0:
            print("the floor's producer failed", file=sys.stderr)
            return 1
        out.seek(0)
        produced = json.load(out)
    after = {k: round((arrived[k] - at) * 1000, 3) for k, at in produced["producedAt"].items() if k in arrived}
    print(json.dumps({"produced": produced["produced"], "received": len(after), "startMs": produced["startMs"],
                      "producedAt": produced["producedAt"], "arrivedAfterMs": after}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
