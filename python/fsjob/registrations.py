"""Who serves a queue: the worker registrations of ``workers/`` (WORKER-1)
read as the reference's ``liveWorkers`` reads them, for advice only (a
one-shot consumer serves a queue without registering; claims decide).

A registration counts as live when it is a valid record, its mode is not
"stopping", and its owner is not proven dead: a same-host owner by the
process table (ID-6), a foreign one by a heartbeat no older than its lease
plus GUARDIAN_LIMIT and LEASE_SKEW (the grace LEASE-3 gives a claim).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List

from .clock import now_ms
from .constants import GUARDIAN_LIMIT, LEASE_SKEW
from .errors import FsjobError
from .identity import judge_local, same_host
from .names import WORKER_ID, RecordName
from .records import read_record
from .safefs import list_dir

if TYPE_CHECKING:
    from .queue import Queue


def live_workers(queue: "Queue") -> List[Dict[str, Any]]:
    """The worker records of the registrations that look live (see the module's comment)."""
    live: List[Dict[str, Any]] = []
    try:
        names = list_dir(queue.path("workers"))
    except FsjobError:
        return live
    for name in names:
        if not name.endswith(".json") or WORKER_ID.match(name[:-5]) is None:
            continue
        try:
            record = read_record(queue.path("workers", name), "worker", RecordName("worker", worker_id=name[:-5]), queue.uid, allow_missing=True)
        except FsjobError:
            continue
        if record is None or not record.ok or record.value["mode"] == "stopping":
            continue
        owner = record.value["owner"]
        if same_host(owner["boot_id"], owner["pid_ns"]):
            if judge_local(owner["pid"], owner["start"]) == "dead":
                continue
        elif now_ms() - int(record.value["heartbeat_ms"]) > int(record.value["lease_ms"]) + GUARDIAN_LIMIT + LEASE_SKEW:
            continue
        live.append(record.value)
    return live
