"""Peer: python3-dirq's QueueSimple (Directory::Queue) as a payload queue.

It publishes an element by writing a temp file and link()ing it, and locks an
element by link() too, like fsjob, but never calls fsync: it is not durable
(a crash can lose or tear elements). Shown for reference, not at equal
durability. Speaks the READY/GO protocol of bench/lib/proc.ts.

Usage: dirq_bench.py producer <dir> <n> | consumer <dir> <n>
"""
import json
import select
import sys
import time

from dirq.QueueSimple import QueueSimple


def wall_us():
    return time.time_ns() / 1000.0


def handshake():
    print("READY", flush=True)
    line = sys.stdin.readline().strip()
    return line == "GO"


def producer(path, n):
    q = QueueSimple(path)
    if not handshake():
        return
    t0 = wall_us()
    for i in range(n):
        q.add(json.dumps({"created_us": wall_us(), "seq": i, "pad": "x" * 480}))
    print(json.dumps({"t0_us": t0, "t1_us": wall_us(), "n": n}), flush=True)


def consumer(path, n):
    """Consume until the parent says STOP (it counts the D lines of all consumers)."""
    q = QueueSimple(path)
    if not handshake():
        return
    done = 0
    last = 0.0
    latencies = []
    while True:
        got = False
        for name in q:
            if not q.lock(name):
                continue
            data = json.loads(q.get(name))
            q.remove(name)
            last = wall_us()
            latencies.append(last - data["created_us"])
            done += 1
            got = True
            sys.stdout.write("D\n")
            sys.stdout.flush()
        if not got:
            ready, _, _ = select.select([sys.stdin], [], [], 0.001)
            if ready:
                break  # STOP, or the parent went away
    print(json.dumps({"done": done, "last_us": last, "latencies_us": latencies}), flush=True)


if __name__ == "__main__":
    mode, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "producer":
        producer(path, n)
    else:
        consumer(path, n)
