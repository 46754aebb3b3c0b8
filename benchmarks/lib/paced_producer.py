#!/usr/bin/env python3
"""Publishes news items at a steady rate for the end-to-end latency run of benchmarks/bench.py.

Item n goes out at start + n/rate, round-robin over the six categories, with its Kafka timestamp set
explicitly to the moment it is produced (so hubcast's end-to-end latency starts there) and its id in
the headline (so the emulator's rendered payload names it). linger.ms 0: nothing waits in the
producer. Prints one JSON object: {"produced": N, "startMs": …, "timestamps": {id: ms, …}}.

Usage: paced_producer.py --brokers HOST:PORT [--rate 50] [--seconds 20] [--topic-prefix news.]
"""
import argparse, json, sys, time

from confluent_kafka import Producer

CATEGORIES = ["World", "Politics", "Business", "Technology", "Science", "Sports"]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", required=True)
    parser.add_argument("--rate", type=float, default=50)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--topic-prefix", default="news.")
    args = parser.parse_args()
    producer = Producer({"bootstrap.servers": args.brokers, "linger.ms": 0, "acks": 1})
    failures = []
    timestamps = {}
    start = time.time()
    for n in range(int(args.rate * args.seconds)):
        due = start + n / args.rate
        delay = due - time.time()
        if delay > 0:
            time.sleep(delay)
        category = CATEGORIES[n % len(CATEGORIES)]
        item_id = f"lat-{n}"
        now_ms = int(time.time() * 1000)
        producer.produce(args.topic_prefix + category.lower(), timestamp=now_ms,
                         value=json.dumps({"id": item_id, "headline": f"Latency item {item_id} strikes off the coast",
                                           "category": category}).encode(),
                         on_delivery=lambda err, _msg: err and failures.append(str(err)))
        producer.poll(0)
        timestamps[item_id] = now_ms
    producer.flush(30)
    if failures:
        print(f"{len(failures)} messages not delivered: {failures[0]}", file=sys.stderr)
    print(json.dumps({"produced": len(timestamps) - len(failures), "startMs": int(start * 1000), "timestamps": timestamps}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
