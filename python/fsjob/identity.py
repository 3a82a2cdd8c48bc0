"""Process identity and liveness (spec/identity.md), Linux /proc.

Signals are used only to stop groups and to ask the kernel whether a process
group has members (ID-8); an owner is never judged by ``kill -0`` (ID-6),
because a reused pid answers it.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from typing import Any, Dict, NamedTuple, Optional, Tuple

Identity = Dict[str, Any]


class ProcStat(NamedTuple):
    """Fields 3 (state), 5 (process group) and 22 (start) of /proc/<pid>/stat."""

    state: str
    pgrp: int
    start: str


class _Unknown(Exception):
    """The process table could not be read (ID-6: the verdict is unknown)."""


def _read_stat(pid: int) -> Optional[ProcStat]:
    """The stat of ``pid``, None when it does not exist; raises _Unknown when /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    except ProcessLookupError:
        return None
    except OSError as error:
        if error.errno in (errno.ENOENT, errno.ESRCH):
            return None
        raise _Unknown(str(error)) from error
    # ID-2: the command name may hold anything: count fields after the LAST ")".
    close = text.rfind(")")
    fields = text[close + 1:].split()
    if close < 0 or len(fields) < 20:
        raise _Unknown(f"/proc/{pid}/stat is not in the expected form")
    try:
        return ProcStat(fields[0], int(fields[2]), fields[19])
    except ValueError as error:
        raise _Unknown(str(error)) from error


def proc_stat(pid: int) -> Optional[ProcStat]:
    """The stat of ``pid`` or None (missing); raises OSError-free: unknown reads also give None. Use :func:`judge_local` for verdicts."""
    try:
        return _read_stat(pid)
    except _Unknown:
        return None


def process_start(pid: int) -> Optional[str]:
    """ID-2: the start (field 22) of a live process, or None."""
    st = proc_stat(pid)
    if st is None or st.state in ("Z", "X"):
        return None
    return st.start


_SELF: Optional[Tuple[int, Identity]] = None


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


def self_identity() -> Identity:
    """This process's identity (REC-8, ID-1..ID-4), computed once per process."""
    global _SELF
    pid = os.getpid()
    if _SELF is not None and _SELF[0] == pid:
        return dict(_SELF[1])
    start = process_start(pid)
    if start is None:
        raise OSError(f"cannot read /proc/{pid}/stat")
    host = os.uname().nodename.encode("utf-8")[:255].decode("utf-8", "ignore") or "localhost"
    identity: Identity = {
        "host": host,
        "boot_id": _read_text("/proc/sys/kernel/random/boot_id"),
        "pid_ns": os.readlink("/proc/self/ns/pid"),
        "pid": pid,
        "start": start,
        "uid": os.geteuid(),
    }
    _SELF = (pid, identity)
    return dict(identity)


def same_host(boot_id: Any, pid_ns: Any) -> bool:
    """ID-1: same host when boot_id and pid_ns are equal to this process's."""
    me = self_identity()
    return bool(boot_id == me["boot_id"] and pid_ns == me["pid_ns"])


def judge_local(pid: int, start: str) -> str:
    """ID-6 for a same-host owner: "alive", "dead" or "unknown"."""
    try:
        st = _read_stat(pid)
    except _Unknown:
        return "unknown"
    if st is None or st.state in ("Z", "X"):
        return "dead"
    return "alive" if st.start == start else "dead"


def group_members(pgid: int) -> Tuple[int, int]:
    """(members that are not zombies, all members) of process group ``pgid``, from one scan of /proc/*/stat."""
    live = 0
    total = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return (0, 0)
    for name in names:
        if not name.isdigit():
            continue
        try:
            st = _read_stat(int(name))
        except _Unknown:
            continue
        if st is None or st.pgrp != pgid:
            continue
        total += 1
        if st.state not in ("Z", "X"):
            live += 1
    return (live, total)


def _group_gone(pgid: int) -> Optional[bool]:
    """Whether the kernel knows no member of the group (ESRCH); None when it cannot tell (EPERM)."""
    try:
        os.killpg(pgid, 0)
        return False
    except ProcessLookupError:
        return True
    except PermissionError:
        return None
    except OSError:
        return None


def group_state(pgid: int, start: str) -> str:
    """ID-8 for a same-host recorded group: "stopped" (proven), "running" or "unknown"."""
    try:
        st = _read_stat(pgid)
    except _Unknown:
        return "unknown"
    if st is not None:
        if st.start != start:
            # The kernel does not reuse a pid while a group of that number has members.
            return "stopped"
        if st.state not in ("Z", "X"):
            return "running"
    gone = _group_gone(pgid)
    if gone is True:
        return "stopped"
    if gone is None:
        return "unknown"
    # Members remain: stopped only when every one is a zombie in two scans.
    if group_members(pgid)[0] > 0:
        return "running"
    time.sleep(0.05)
    return "running" if group_members(pgid)[0] > 0 else "stopped"


def signal_group(pgid: int, start: str, sig: int) -> bool:
    """Signal a group only when its identity matches (ID-9); True when sent."""
    try:
        st = _read_stat(pgid)
    except _Unknown:
        return False
    if st is not None:
        if st.start != start:
            return False
    elif group_members(pgid)[0] == 0:
        return False
    try:
        os.killpg(pgid, sig)
        return True
    except OSError:
        return False


def stop_group(pgid: int, start: str, grace_ms: int) -> str:
    """SIGTERM, up to ``grace_ms`` for the group to stop, then SIGKILL; the final verdict of :func:`group_state`."""
    state = group_state(pgid, start)
    if state != "running":
        return state
    signal_group(pgid, start, signal.SIGTERM)
    deadline = time.monotonic() + grace_ms / 1000
    while time.monotonic() < deadline:
        time.sleep(0.05)
        state = group_state(pgid, start)
        if state != "running":
            return state
    signal_group(pgid, start, signal.SIGKILL)
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        time.sleep(0.05)
        state = group_state(pgid, start)
        if state != "running":
            return state
    return state


def signal_name(number: int) -> str:
    """The <signal.h> name of a signal number ("SIGKILL")."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"SIG{number}" if number < 100 else "SIGUNKNOWN"
