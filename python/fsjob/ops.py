"""The producer's view of a job after enqueue: status (STATUS-1), wait for
the receipt, its logs, and cancel (CANCEL-1, CANCEL-2). Every record is read
with the checks of REC-4."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Dict, NamedTuple, Optional, Tuple

from .clock import now_ms
from . import gates
from .constants import GEN_MAX, OUTPUT_MAX, PROTOCOL_VERSION
from .decide import decide
from .errors import FsjobError
from .generation import Generation
from .identity import self_identity
from .judge import Judge
from .jobview import JobView
from .names import RecordName
from .receipt import JobStatus, Logs, Receipt
from .records import encode_record
from .safefs import publish_link, read_bounded

if TYPE_CHECKING:
    from .queue import Queue


def _view(queue: "Queue", job_id: str) -> JobView:
    queue.job_dir(job_id)  # INVALID_ID for a name that is not a job id
    return JobView(queue.root, job_id, queue.uid).refresh()


def _receipt_of(view: JobView) -> Receipt:
    inspection = view.receipt()
    if inspection is None:
        raise FsjobError("NOT_FOUND", f"{view.dir} has no receipt", path=view.dir, job_id=view.job_id)
    if not inspection.ok:
        raise FsjobError("INVALID_RECORD", f"the job is finished but its receipt is invalid: {inspection.reason} (REC-4, SEC-10)",
                         path=view.path("receipt.json"), job_id=view.job_id, clause=inspection.findings[0].clause)
    return Receipt.of(inspection.value)


def status(queue: "Queue", job_id: str) -> JobStatus:
    """STATUS-1 from the records that exist; a one-shot judge never waits out a watch (LEASE-3)."""
    view = _view(queue, job_id)
    if view.dir_problem == "missing" and gates.place(queue.root, job_id) == "gated":
        return _gated_status(queue, job_id)
    if not view.exists:
        if view.dir_problem == "missing":
            return JobStatus(job_id, "missing", 0, 0)
        return JobStatus(job_id, "damaged", 0, 0, note=view.dir_problem or "")
    listing = view.listing
    g = listing.top
    attempts = view.attempts()
    if listing.receipt:
        inspection = view.receipt()
        receipt = Receipt.of(inspection.value) if inspection is not None and inspection.ok else None
        note = "" if receipt is not None else f"the receipt is invalid: {inspection.reason if inspection else ''}"
        return JobStatus(job_id, "finished", g, attempts, receipt, note)
    if listing.open:
        claim = view.claim(g)
        if claim is None or not claim.ok:
            return JobStatus(job_id, "damaged", g, attempts, note=f"claim.{g}.json is invalid: {claim.reason if claim else ''}")
        verdict = Judge().owner(view, g)
        running = "running" if g in listing.execs else "claimed"
        if verdict == "dead":
            return JobStatus(job_id, "orphaned", g, attempts)
        return JobStatus(job_id, running, g, attempts, note="" if verdict == "alive" else f"owner {verdict}")
    if listing.cancel_kind is not None:
        return JobStatus(job_id, "cancelling", g, attempts)
    spec = view.spec_value()
    if spec is not None and spec["queue_deadline_ms"] is not None and not listing.execs and now_ms() > spec["created_ms"] + spec["queue_deadline_ms"]:
        return JobStatus(job_id, "expired", g, attempts)
    not_before = None if spec is None else spec.get("not_before_ms")
    if not_before is not None and now_ms() < not_before:
        return JobStatus(job_id, "delayed", g, attempts, not_before_ms=not_before)  # DELAY-1 (1.1)
    if g > 0:
        end = view.end(g)
        if end is None or not end.ok:
            return JobStatus(job_id, "damaged", g, attempts, note=f"end.{g}.json is invalid: {end.reason if end else ''}")
        if now_ms() < end.value["retry_at_ms"]:
            return JobStatus(job_id, "retrying", g, attempts, retry_at_ms=end.value["retry_at_ms"])
    return JobStatus(job_id, "queued", g, attempts)


def _gated_status(queue: "Queue", job_id: str) -> JobStatus:
    """STATUS-1 for a gated job (GATE-1): cancelling, held (HOLD-1) or blocked (AFTER-1) until a consumer opens its gate."""
    directory = gates.gated_dir(queue.root, job_id)
    if any(os.path.lexists(os.path.join(directory, name)) for name in ("cancel.json", "cancel-force.json")):
        return JobStatus(job_id, "cancelling", 0, 0)
    found = gates.verdict(queue.root, queue.uid, job_id)
    if found.kind == "held":
        return JobStatus(job_id, "held", 0, 0)
    if found.kind == "blocked":
        return JobStatus(job_id, "blocked", 0, 0, note=f"waits for {found.awaiting}", awaiting=found.awaiting)
    if found.kind in ("newer", "cancel"):
        # AFTER-3: a dependency that can never be satisfied leaves it blocked until a consumer cancels it.
        return JobStatus(job_id, "blocked", 0, 0, note=found.why)
    view = JobView(queue.root, job_id, queue.uid)
    view.dir = directory
    spec = view.refresh().spec_value()
    not_before = None if spec is None else spec.get("not_before_ms")
    if not_before is not None and now_ms() < not_before:
        return JobStatus(job_id, "delayed", 0, 0, not_before_ms=not_before)
    return JobStatus(job_id, "queued", 0, 0)


def wait(queue: "Queue", job_id: str, timeout: Optional[float] = None, poll: float = 0.1) -> Receipt:
    """Wait for receipt.json and return it, read with REC-4's checks. TIMEOUT after ``timeout`` seconds; NOT_FOUND for an unknown job."""
    give_up = None if timeout is None else time.monotonic() + timeout
    job_dir = queue.job_dir(job_id)
    receipt_path = os.path.join(job_dir, "receipt.json")
    while True:
        if os.path.lexists(receipt_path):
            return _receipt_of(_view(queue, job_id))
        if not os.path.lexists(job_dir) and gates.place(queue.root, job_id) == "missing":
            raise FsjobError("NOT_FOUND", f"no job {job_id} in {queue.root}", path=job_dir, job_id=job_id)
        if give_up is not None and time.monotonic() >= give_up:
            # job_ids as wait_many's (and the reference's single wait): the jobs still unfinished, here this one.
            raise FsjobError("TIMEOUT", f"job {job_id} has no receipt after {timeout} s", path=job_dir, job_id=job_id, job_ids=[job_id])
        time.sleep(poll if give_up is None else max(0.0, min(poll, give_up - time.monotonic())))
        poll = min(poll * 1.5, 1.0)


def logs(queue: "Queue", job_id: str) -> Logs:
    """The kept output of the receipt's execution, or of the latest generation with output files while the job runs
    (none yet for a held or blocked job, which is in jobs/<id>.gated/, GATE-1)."""
    queue.job_dir(job_id)  # INVALID_ID for a name that is not a job id
    view = gates.placed_view(queue.root, job_id, queue.uid)
    if not view.exists:
        raise FsjobError("NOT_FOUND", f"no job {job_id} in {queue.root}", path=view.dir, job_id=job_id)
    gen = 0
    truncated: Optional[bool] = None
    if view.listing.receipt:
        receipt = _receipt_of(view)
        summary = receipt.stdout or receipt.stderr
        if summary is not None:
            gen = summary.gen
            truncated = bool((receipt.stdout and receipt.stdout.truncated) or (receipt.stderr and receipt.stderr.truncated))
    else:
        gens = sorted({int(name.split(".", 1)[1]) for name in view.listing.outputs})
        gen = gens[-1] if gens else 0
    spec = view.spec_value()
    keep = "head" if spec is None else str(spec.get("output_keep", "head"))
    if gen == 0:
        return Logs(0, b"", b"", truncated, keep)
    streams = []
    for name in ("stdout", "stderr"):
        read = read_bounded(view.path(f"{name}.{gen}"), OUTPUT_MAX, queue.uid, allow_missing=True)
        streams.append(b"" if read is None else read[0])
    return Logs(gen, streams[0], streams[1], truncated, keep)


class Cancelled(NamedTuple):
    """What a cancel request did, as the reference's CancelResult (schemas/output/cancel.schema.json)."""

    record: str
    #: False when the same request stood already.
    published: bool
    #: finished (this call published the receipt), owner (its owner acts), claimed_elsewhere, finished_elsewhere.
    next: str
    #: The receipt this call published.
    receipt: Optional[Dict[str, Any]]


def _finish_unowned(queue: "Queue", job_id: str, view: JobView) -> Tuple[str, Optional[Dict[str, Any]]]:
    """CANCEL-2: claim the next generation of a job nobody owns and decide it (a cancelled receipt, or rejected for an invalid spec)."""
    listing = view.listing
    if listing.receipt:
        return "finished_elsewhere", None
    if listing.open or listing.top >= GEN_MAX:
        return "owner", None
    gen = Generation.claim(queue.root, job_id, listing.top + 1)
    if gen is None:
        return "claimed_elsewhere", None
    decide("cancel", gen, view, Judge())
    receipt = view.refresh().receipt()
    return ("finished", receipt.value) if receipt is not None and receipt.ok else ("owner", None)


def cancel(queue: "Queue", job_id: str, force: bool = False, reason: Optional[str] = None) -> bool:
    """CANCEL-1: publish cancel.json (or cancel-force.json) by link; CANCEL-2: finish an unowned job at once."""
    return cancel_request(queue, job_id, force, reason).published


def cancel_request(queue: "Queue", job_id: str, force: bool = False, reason: Optional[str] = None) -> Cancelled:
    """cancel(), saying what happens next and the receipt it published (fsjob cancel --json)."""
    queue.require_layout()
    name = "cancel-force.json" if force else "cancel.json"
    if gates.place(queue.root, job_id) == "gated":
        # HOLD-3: in jobs/<id>.gated/; the cancel entry lets the gate open (GATE-3), then it is decided as any job.
        published = gates.publish_cancel(gates.gated_dir(queue.root, job_id), job_id, force, reason)
        found = gates.verdict(queue.root, queue.uid, job_id)
        gates.open_gate(queue.root, job_id, found.priority)
        return Cancelled(name, published, *_finish_unowned(queue, job_id, _view(queue, job_id)))
    view = _view(queue, job_id)
    if not view.exists:
        if view.dir_problem == "missing":
            raise FsjobError("NOT_FOUND", f"no job {job_id} in {queue.root}", path=view.dir, job_id=job_id)
        raise FsjobError("SYMLINK_REFUSED" if "symbolic" in (view.dir_problem or "") else "NOT_REGULAR", view.dir_problem or "", path=view.dir, job_id=job_id)
    if view.listing.receipt:
        raise FsjobError("FINISHED", f"job {job_id} is finished; a job with a receipt cannot be cancelled (CANCEL-1)", path=view.dir, job_id=job_id, clause="CANCEL-1")
    if reason is not None:
        reason = reason.encode("utf-8")[:1024].decode("utf-8", "ignore")
    value = {"fsjob": PROTOCOL_VERSION, "type": "cancel", "job_id": job_id, "force": force, "requested_ms": now_ms(), "by": self_identity(), "reason": reason}
    published = publish_link(view.dir, name, encode_record("cancel", value, RecordName("cancel", job_id=job_id, force=force)))
    return Cancelled(name, published, *_finish_unowned(queue, job_id, view.refresh()))
