"""The jobs of a queue as ``fsjob status`` lists them (the reference's
listJobs): each job's status (STATUS-1), when its last attempt started and
finished and how long it ran, its priority and labels; filtered by status,
outcome and labels, sorted by age, priority or duration."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Set, Tuple

from .clock import now_ms
from .errors import FsjobError
from .gates import placed_view
from .names import GATED_SUFFIX, is_job_id, job_id_of_dir_name
from .safefs import list_dir
from .waiting import matches

if TYPE_CHECKING:
    from .queue import Queue

def job_line(queue: "Queue", job_id: str) -> Dict[str, Any]:
    """One job: job_id, status, gen, attempts, the spec's max_attempts, lane, created_ms, argv, handler, priority and
    labels (None when it cannot be read), the receipt's outcome and exit_code, the worker_id of an open claim,
    started_ms, finished_ms, duration_ms (and note, not_before_ms when they apply)."""
    state = queue.status(job_id)
    line: Dict[str, Any] = {"job_id": state.job_id, "status": state.status, "gen": state.gen, "attempts": state.attempts}
    # A held or blocked job's spec is in jobs/<id>.gated/ (GATE-1): its priority and labels too.
    view = placed_view(queue.root, job_id, queue.uid)
    spec = view.spec_value() if view.exists else None
    for name in ("max_attempts", "lane", "created_ms", "argv", "handler", "priority", "labels"):
        line[name] = None if spec is None else spec.get(name)
    claim = view.claim(view.listing.top) if view.exists and view.listing.open else None
    line["worker_id"] = claim.value.get("worker_id") if claim is not None and claim.ok else None
    line["outcome"] = line["exit_code"] = None
    started: Optional[int] = None
    finished: Optional[int] = None
    if state.receipt is not None:
        line["outcome"] = state.receipt.outcome
        line["exit_code"] = state.receipt.exit_code
        started, finished = state.receipt.started_ms, state.receipt.finished_ms
    elif state.status == "running":
        record = view.exec_record(state.gen)
        started = record.value.get("recorded_ms") if record is not None and record.ok else None
    end = finished if finished is not None else (now_ms() if state.status == "running" else None)
    line["started_ms"] = started
    line["finished_ms"] = finished
    line["duration_ms"] = None if started is None or end is None else max(0, end - started)
    if state.note:
        line["note"] = state.note
    if state.not_before_ms is not None:
        line["not_before_ms"] = state.not_before_ms
    return line


def job_lines(queue: "Queue") -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """Every job's line, newest first, and apart the jobs the filesystem refused to read (an IO error: a directory of
    mode 0000 gives EACCES), each as ``{id, path, errno, reason}``: one bad job never hides the rest of a queue (I7),
    as the reference's listJobs lists them under ``unreadable``."""
    lines: List[Dict[str, Any]] = []
    unreadable: List[Dict[str, Any]] = []
    for job_id in sorted(queue.job_ids(), reverse=True):
        try:
            lines.append(job_line(queue, job_id))
        except FsjobError as error:
            if error.code != "IO":
                raise
            unreadable.append({"id": job_id, "path": error.path or queue.path("jobs", job_id), "errno": error.errno, "reason": error.message})
    return lines, unreadable


def gated_counts(queue: "Queue") -> Dict[str, int]:
    """How many jobs wait at a gate no worker opens by itself: ``held`` (HOLD-1: until fsjob release) and ``blocked``
    (AFTER-1: a dependency still unfinished, or behind a held one), as the reference's gatedCounts. ``work --drain``
    reports them when it exits, so that a drained queue with jobs left is not taken for an empty one. Only a gated
    directory (jobs/<id>.gated, GATE-1) can be either, so only those are looked at; one whose gate opened meanwhile,
    or that cannot be read (status lists those apart), is not counted: a report, never a decision."""
    counts = {"held": 0, "blocked": 0}
    for name in list_dir(queue.path("jobs")):
        job_id = name[: -len(GATED_SUFFIX)] if name.endswith(GATED_SUFFIX) else None
        if job_id is None or not is_job_id(job_id):
            continue
        try:
            status = queue.status(job_id).status
        except FsjobError:
            continue
        if status in counts:
            counts[status] += 1
    return counts


def select_lines(lines: List[Dict[str, Any]], wanted: Optional[Set[str]] = None, labels: Optional[Mapping[str, str]] = None, sort: str = "age") -> List[Dict[str, Any]]:
    """The lines that match (a status or outcome in ``wanted``, every one of ``labels``), in the order of ``sort``:
    age newest first; priority the claim order (highest first, then oldest), finished jobs after it, newest first;
    duration longest first, never started last. The reference takes the claim order from ready/, so an unfinished job
    whose entry a crash lost (READY-4) comes with the finished ones there until a consumer rebuilds the entry."""
    if wanted:
        lines = [line for line in lines if line["status"] in wanted or line.get("outcome") in wanted]
    if labels:
        lines = [line for line in lines if line["labels"] is not None and matches({"labels": line["labels"]}, None, labels)]
    lines = sorted(lines, key=lambda line: str(line["job_id"]), reverse=True)
    if sort == "priority":
        waiting = [line for line in lines if line["status"] != "finished"]
        waiting.reverse()  # oldest first among equals: the sort below is stable
        waiting.sort(key=lambda line: -int(line["priority"] or 0))
        lines = waiting + [line for line in lines if line["status"] == "finished"]
    elif sort == "duration":
        lines.sort(key=lambda line: -int(line["duration_ms"] if line["duration_ms"] is not None else -1))
    return lines


#: The members of one job in ``fsjob status --json`` (schemas/output/status.schema.json), as the reference's jobSummaryJson.
_JOB_MEMBERS = ("status", "attempts", "max_attempts", "lane", "created_ms", "argv", "handler", "outcome", "exit_code", "worker_id",
                "priority", "labels", "started_ms", "finished_ms", "duration_ms")


def job_json(line: Dict[str, Any]) -> Dict[str, Any]:
    """One job line as ``fsjob status --json`` prints it (its id as ``id``)."""
    return {"id": line["job_id"], **{name: line[name] for name in _JOB_MEMBERS}}


def queue_json(queue: "Queue", every: List[Dict[str, Any]], shown: List[Dict[str, Any]], more: bool,
               unreadable: List[Dict[str, Any]]) -> Dict[str, Any]:
    """``fsjob status --json`` of a queue (schemas/output/status.schema.json), as the reference prints it: the pause, every
    job counted by status and outcome, the ready index's summary (a hint, READY-1), the jobs shown, foreign names in jobs/
    (never opened, LAYOUT-4), the worker registrations with their owners judged (WORKER-1) and the jobs that could not be
    read (``total`` and the index count them, the counts do not, as the reference's)."""
    from . import ready
    from .registrations import worker_views

    paused = queue.paused()
    ids = {line["job_id"] for line in every}.union(job["id"] for job in unreadable)
    foreign = [name for name in list_dir(queue.path("jobs"))
               if not name.startswith(".") and (job_id_of_dir_name(name) is None or not os.path.isdir(queue.path("jobs", name)))]
    statuses: Dict[str, int] = {}
    outcomes: Dict[str, int] = {}
    running: Dict[str, int] = {}
    for line in every:
        statuses[line["status"]] = statuses.get(line["status"], 0) + 1
        if line["outcome"] is not None:
            outcomes[line["outcome"]] = outcomes.get(line["outcome"], 0) + 1
        if line["worker_id"] is not None:
            running[line["worker_id"]] = running.get(line["worker_id"], 0) + 1
    index: Optional[Dict[str, int]]
    try:
        unfinished = len(ids.intersection(job_id for _, job_id in ready.entries(queue.root)))
        index = {"unfinished": unfinished, "finished": len(ids) - unfinished}
    except FsjobError:
        index = None  # a summary never fails the listing
    workers = [{"worker_id": view.worker_id, "record": view.record, "verdict": view.verdict, "stale": view.verdict == "dead",
                "reason": view.reason, "running": running.get(view.worker_id, 0), "findings": view.findings} for view in worker_views(queue)]
    return {"queue": queue.root, "paused": paused.paused, "pause": paused.record, "total": len(ids),
            "counts": {"statuses": statuses, "outcomes": outcomes}, "index": index, "jobs": [job_json(line) for line in shown],
            "more": more, "foreign": foreign, "workers": workers, "unreadable": unreadable}
