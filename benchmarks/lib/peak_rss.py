"""Runs a program and writes its own peak RSS and CPU time (from wait4) to a file, as one JSON line.

bench.py starts every program it measures through this small process. Linux counts the resident
memory of the process that starts a program into that program's peak (ru_maxrss, carried over
through fork or vfork and exec), so measured from bench.py itself, which holds the runs' logs, a
program's peak was never below bench.py's own: 233 MiB for every run after the 5,000 items/s
latency run. Started from here, the floor is this interpreter's ~14 MiB.

Usage: peak_rss.py OUT PROGRAM [ARG...]. The program inherits stdin, stdout and stderr; SIGTERM to
this process kills the program (SIGKILL) and the figures are still written. Exits with the
program's status (128 + the signal when one ended it).
"""
import json
import os
import signal
import subprocess
import sys

child = None
stop = False


def on_term(*_):
    global stop
    stop = True
    if child is not None:
        try:
            # Not Popen.kill: it would first reap a child that just exited, and the wait4 below
            # would then find none (and write nothing). Unreaped, the pid cannot be reused.
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main():
    global child
    if len(sys.argv) < 3:
        print("usage: peak_rss.py OUT PROGRAM [ARG...]", file=sys.stderr)
        return 2
    out, argv = sys.argv[1], sys.argv[2:]
    # Before the program starts: a SIGTERM in between would leave it running with nobody to wait.
    signal.signal(signal.SIGTERM, on_term)
    # Kept referenced: a dropped Popen reaps an exited child when collected, and wait4 finds none.
    proc = subprocess.Popen(argv)
    child = proc.pid
    if stop:
        on_term()
    _, status, usage = os.wait4(child, 0)
    code = os.waitstatus_to_exitcode(status)
    with open(out, "w") as f:
        json.dump({"exit": code, "maxRssKiB": usage.ru_maxrss, "cpuSeconds": usage.ru_utime + usage.ru_stime}, f)
        f.write("\n")
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
