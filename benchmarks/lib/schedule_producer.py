#!/usr/bin/env python3
"""Publishes items on a schedule for the latency and priority runs of benchmarks/bench.py.

Reads one JSON object on stdin: {"brokers": "HOST:PORT", "items": [[seconds, topic, key, value], …]};
item k goes out at start + seconds, with its Kafka timestamp set to that moment (so hubcast's
end-to-end latency starts there). linger.ms 0: nothing waits in the producer. Prints one JSON object:
{"produced": N, "startMs": …, "timestamps": {key: ms, …}, "producedAt": {key: epoch seconds, …}}; the
last are the moments of the produce calls at microsecond resolution (a Kafka timestamp is whole ms).
The producer's connection to the broker is made before the schedule starts (one record to a topic
nobody reads), so the first item's latency is not the producer's start-up.
"""
import json, sys, time

from confluent_kafka import Producer


def main():
    plan = json.load(sys.stdin)
    producer = Producer({"bootstrap.servers": plan["brokers"], "linger.ms": 0, "acks": 1})
    failures, timestamps, produced_at = [], {}, {}
    producer.produce("bench.warmup", value=b"{}")
    if producer.flush(30) != 0:
        print("the producer could not reach the broker", file=sys.stderr)
        return 1
    start = time.time()
    for at, topic, key, value in sorted(plan["items"]):
        delay = start + at - time.time()
        if delay > 0:
            time.sleep(delay)
        now = time.time()
        now_ms = int(now * 1000)
        producer.produce(topic, key=key.encode(), value=json.dumps(value).encode(), timestamp=now_ms,
                         on_delivery=lambda err, _msg: err and failures.append(str(err)))
        producer.poll(0)
        timestamps[key] = now_ms
        produced_at[key] = now
    producer.flush(30)
    if failures:
        print(f"{len(failures)} messages not delivered: {failures[0]}", file=sys.stderr)
    print(json.dumps({"produced": len(timestamps) - len(failures), "startMs": int(start * 1000), "timestamps": timestamps,
                      "producedAt": produced_at}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
