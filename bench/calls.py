"""Times commands as a shell script calls them, side by side (bench/lib/enqueue.ts).

    python3 bench/calls.py N STDERR_FILE '[["label", "argv0", "arg", ...], ...]'

Runs the commands round-robin, N rounds after one unmeasured round, each
call a fork and exec with stdout to /dev/null and stderr appended to
STDERR_FILE, and prints one JSON object: for each label, the wall
milliseconds of each call (fork to reaped) and its user + system CPU
milliseconds from wait4's rusage (microseconds, every thread of the
process; a loaded machine moves CPU time much less than wall time). No
harness runs in a measured process, and this one is not node, so it takes
nothing from the machine's node start-up. A call that exits non-zero fails
the run (exit 3, naming it). Python's standard library only.
"""

import json
import os
import sys
import time


def call(argv, stderr_fd):
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(stderr_fd, 2)
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = (time.perf_counter() - started) * 1000
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        sys.stderr.write(f"calls.py: {' '.join(argv)} failed (wait status {status})\n")
        sys.exit(3)
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def main():
    rounds = int(sys.argv[1])
    stderr_fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    commands = json.loads(sys.argv[3])
    figures = {label: {"wall_ms": [], "cpu_ms": []} for label, *_ in commands}
    for label, *argv in commands:
        call(argv, stderr_fd)
    for _ in range(rounds):
        for label, *argv in commands:
            wall, cpu = call(argv, stderr_fd)
            figures[label]["wall_ms"].append(round(wall, 3))
            figures[label]["cpu_ms"].append(round(cpu, 3))
    json.dump(figures, sys.stdout)
    sys.stdout.write("\n")


main()
