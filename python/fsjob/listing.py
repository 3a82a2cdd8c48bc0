"""The jobs of a queue as ``fsjob status`` lists them (the reference's
listJobs): each job's status (STATUS-1), when its last attempt started and
finished and how long it ran, its priority and labels; filtered by status,
outcome and labels, sorted by age, priority or duration."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Set

from .clock import now_ms
from .gates import placed_view
from .waiting import matches

if TYPE_CHECKING:
    from .queue import Queue

def job_line(queue: "Queue", job_id: str) -> Dict[str, Any]:
    """One job: job_id, status, gen, attempts, priority, labels, started_ms, finished_ms, duration_ms (and outcome, exit_code, note, not_before_ms when they apply)."""
    state = queue.status(job_id)
    line: Dict[str, Any] = {"job_id": state.job_id, "status": state.status, "gen": state.gen, "attempts": state.attempts}
    # A held or blocked job's spec is in jobs/<id>.gated/ (GATE-1): its priority and labels too.
    view = placed_view(queue.root, job_id, queue.uid)
    spec = view.spec_value() if view.exists else None
    line["priority"] = None if spec is None else spec.get("priority")
    line["labels"] = None if spec is None else spec.get("labels")
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


def job_lines(queue: "Queue") -> List[Dict[str, Any]]:
    """Every job's line, newest first."""
    return [job_line(queue, job_id) for job_id in sorted(queue.job_ids(), reverse=True)]


def select_lines(lines: List[Dict[str, Any]], wanted: Optional[Set[str]] = None, labels: Optional[Mapping[str, str]] = None, sort: str = "age") -> List[Dict[str, Any]]:
    """The lines that match (a status or outcome in ``wanted``, every one of ``labels``), in the order of ``sort``:
    age newest first; priority the claim order (highest first, then oldest), finished jobs after it, newest first;
    duration longest first, never started last. The reference takes the claim order from ready/, so an unfinished job
    whose entry a crash lost (READY-4) comes with the finished ones there until a consumer rebuilds the entry."""
    if wanted:
        lines = [line for line in lines if line["status"] in wanted or line.get("outcome") in wanted]
    if labels:
        lines = [line for line in lines if line["labels"] is not None and matches({"labels": line["labels"]}, None, labels)]
    lines = sorted(lines, key=lambda line: line["job_id"], reverse=True)
    if sort == "priority":
        waiting = [line for line in lines if line["status"] != "finished"]
        waiting.reverse()  # oldest first among equals: the sort below is stable
        waiting.sort(key=lambda line: -(line["priority"] or 0))
        lines = waiting + [line for line in lines if line["status"] == "finished"]
    elif sort == "duration":
        lines.sort(key=lambda line: -(line["duration_ms"] if line["duration_ms"] is not None else -1))
    return lines
