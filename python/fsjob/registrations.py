"""Who serves a queue: the worker registrations of ``workers/`` (WORKER-1)
read as the reference's ``liveWorkers`` reads them, for advice only (a
one-shot consumer serves a queue without registering; claims decide).

A registration counts as live when it is a valid record, its mode is not
"stopping", and its owner is not proven dead: a same-host owner by the
process table (ID-6), a foreign one by a heartbeat no older than its lease
plus GUARDIAN_LIMIT and LEASE_SKEW (the grace LEASE-3 gives a claim).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional

from .errors import FsjobError
from .findings import finding_json
from .judge import judge_once
from .names import WORKER_ID, RecordName
from .records import read_record
from .safefs import list_dir

if TYPE_CHECKING:
    from .queue import Queue


class WorkerView(NamedTuple):
    """A registration with its owner judged, as the reference's WorkerView (fsjob status --json's workers)."""

    worker_id: str
    #: The registration, or None when it is invalid (see findings).
    record: Optional[Dict[str, Any]]
    #: judge.judge_once: ID-6 on this host (basis "process"); a foreign owner (basis "lease") is "alive" while its heartbeat is within its lease and the grace, else "unknown".
    verdict: str
    basis: str
    reason: str
    findings: List[Dict[str, Any]]

    @property
    def live(self) -> bool:
        """Counts as serving the queue (see the module's comment)."""
        return self.record is not None and self.record["mode"] != "stopping" and (self.verdict == "alive" or (self.verdict == "unknown" and self.basis == "process"))


def worker_views(queue: "Queue") -> List[WorkerView]:
    """Every registration in workers/ with its owner judged (WORKER-1; registrations are informational)."""
    views: List[WorkerView] = []
    try:
        names = list_dir(queue.path("workers"))
    except FsjobError:
        return views
    for name in sorted(names):
        worker_id = name[:-5]
        if not name.endswith(".json") or WORKER_ID.match(worker_id) is None:
            continue
        try:
            record = read_record(queue.path("workers", name), "worker", RecordName("worker", worker_id=worker_id), queue.uid, allow_missing=True)
        except FsjobError as error:
            views.append(WorkerView(worker_id, None, "unknown", "record", f"the registration cannot be read: {error.message}", []))
            continue
        if record is None:
            continue  # removed while listed
        if not record.ok:
            views.append(WorkerView(worker_id, None, "unknown", "record", "the registration is invalid", [finding_json(finding) for finding in record.findings]))
            continue
        verdict, basis, reason = judge_once(record.value["owner"], int(record.value["heartbeat_ms"]), int(record.value["lease_ms"]))
        views.append(WorkerView(worker_id, record.value, verdict, basis, reason, []))
    return views


def live_workers(queue: "Queue") -> List[Dict[str, Any]]:
    """The worker records of the registrations that look live (see the module's comment)."""
    return [view.record for view in worker_views(queue) if view.live and view.record is not None]
