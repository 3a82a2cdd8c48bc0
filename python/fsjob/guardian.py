"""The guardian (WORKER-2, LEASE-5): a process other than the owner that
stops the recorded groups the owner started when the owner dies or stops
renewing.

It runs in its own session (a signal to the owner's process group does not
reach it) and reads lines from a pipe whose write end only the owner holds:

    + PGID START DEADLINE   a group was recorded; stop it unless renewed by DEADLINE
    r PGID DEADLINE         its claim was renewed; the new deadline
    - PGID                  the group is done

A deadline is in milliseconds of the host's monotonic clock (clock.mono_ms),
which owner and guardian share: the start of the claim or of the renewal
plus ``lease_ms``. End of file means the owner is gone: every group still
listed is stopped. A passed deadline means the owner has not renewed for
``lease_ms`` (it is stopped, or stuck): that group is stopped the same way
(the deadman). Groups are signalled only while their identity matches
(ID-9), SIGTERM then SIGKILL after GUARDIAN_GRACE at most, never the job's
``kill_grace_ms`` (WORKER-2).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from .clock import mono_ms
from .constants import GUARDIAN_GRACE
from .identity import group_state, signal_group

if TYPE_CHECKING:
    from subprocess import Popen

#: How long the guardian sleeps between looks at its pipe and its deadlines.
POLL_SECONDS = 0.25


class Guardian:
    """The owner's side: starts the guardian process and tells it about groups."""

    def __init__(self) -> None:
        self._proc: Optional["Popen[bytes]"] = None
        self._write: Optional[int] = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the guardian process; OSError when it cannot be started."""
        import subprocess

        read_end, write_end = os.pipe()
        package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        code = f"import sys; sys.path.insert(0, {package_parent!r}); from fsjob.guardian import main; main()"
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-S", "-E", "-c", code, "fsjob-guardian", str(os.getpid())],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                close_fds=True, start_new_session=True,
            )
        finally:
            os.close(read_end)
        self._write = write_end

    def alive(self) -> bool:
        """Whether the guardian still runs (WORKER-2: no command starts without one)."""
        return self._proc is not None and self._write is not None and self._proc.poll() is None

    def _tell(self, line: str) -> bool:
        with self._lock:
            if self._write is None:
                return False
            try:
                os.write(self._write, line.encode("ascii"))
                return True
            except OSError:
                return False

    def track(self, pgid: int, start: str, deadline_mono: int) -> bool:
        """A group was started: stop it unless renewed by ``deadline_mono`` (LEASE-5)."""
        return self._tell(f"+ {pgid} {start} {deadline_mono}\n")

    def renewed(self, pgid: int, deadline_mono: int) -> bool:
        """The group's claim was renewed: its new deadline."""
        return self._tell(f"r {pgid} {deadline_mono}\n")

    def untrack(self, pgid: int) -> bool:
        """The group is done (proven stopped)."""
        return self._tell(f"- {pgid}\n")

    def stop(self) -> None:
        """Close the pipe: the guardian stops whatever is still listed (nothing, after a clean run) and exits."""
        with self._lock:
            if self._write is not None:
                os.close(self._write)
                self._write = None
        proc = self._proc
        if proc is not None:
            try:
                proc.wait(timeout=2)
            except Exception:  # subprocess.TimeoutExpired: it exits at its next poll anyway
                pass


def _stop_groups(groups: List[Tuple[int, str]]) -> None:
    """SIGTERM to each group whose identity matches, SIGKILL after GUARDIAN_GRACE to what is left."""
    running = [(pgid, start) for pgid, start in groups if group_state(pgid, start) == "running"]
    for pgid, start in running:
        signal_group(pgid, start, signal.SIGTERM)
    deadline = time.monotonic() + GUARDIAN_GRACE / 1000
    while running and time.monotonic() < deadline:
        time.sleep(0.1)
        running = [(pgid, start) for pgid, start in running if group_state(pgid, start) == "running"]
    for pgid, start in running:
        signal_group(pgid, start, signal.SIGKILL)


def _handle(line: str, groups: Dict[int, Tuple[str, Optional[int]]]) -> None:
    parts = line.split()
    if len(parts) < 2 or not parts[1].isdigit():
        return
    pgid = int(parts[1])
    if parts[0] == "+" and len(parts) >= 3:
        deadline = int(parts[3]) if len(parts) >= 4 and parts[3].isdigit() else None
        groups[pgid] = (parts[2], deadline)
    elif parts[0] == "r" and len(parts) >= 3 and parts[2].isdigit() and pgid in groups:
        groups[pgid] = (groups[pgid][0], int(parts[2]))
    elif parts[0] == "-":
        groups.pop(pgid, None)


def main() -> None:
    """The guardian process: read the owner's messages from stdin until end of file."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    groups: Dict[int, Tuple[str, Optional[int]]] = {}
    pending = b""
    while True:
        readable, _, _ = select.select([0], [], [], POLL_SECONDS)
        if readable:
            try:
                chunk = os.read(0, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                _handle(line.decode("ascii", "replace"), groups)
        now = mono_ms()
        due = [(pgid, start) for pgid, (start, deadline) in groups.items() if deadline is not None and deadline <= now]
        if due:
            # LEASE-5: the owner has not renewed for lease_ms: stop as if it had died.
            for pgid, _ in due:
                groups.pop(pgid, None)
            _stop_groups(due)
    if groups:
        _stop_groups([(pgid, start) for pgid, (start, _) in groups.items()])
