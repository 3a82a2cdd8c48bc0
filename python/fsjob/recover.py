"""One-shot recovery (spec/recovery-and-gc.md): RECOV-1 over every open claim
of a dead owner (a released end record, so that any consumer may run the job
again), RECOV-4, READY-4, TEMP-1 with TEMP-2, and stale worker registrations
(WORKER-1)."""

from __future__ import annotations

import errno as errno_module
import functools
import os
import stat
from typing import Any, Callable, Dict, List, Optional

from . import ready
from .clock import now_ms
from .constants import GEN_MAX, TEMP_MAX_AGE
from .decide import decide, finish_at_gen_max, orphan_stopped
from .errors import FsjobError
from .generation import Generation
from .judge import Judge
from .jobview import JobView
from .names import is_job_id
from .queue import Queue
from .registrations import worker_views
from .safefs import list_dir, lstat_or_none, remove_file, remove_tree


class RecoverReport:
    """What a recover pass did, and what it left alone (MANIFEST-4: exit 1 when it left a job it had to report)."""

    def __init__(self) -> None:
        self.recovered: List[str] = []
        self.left_alone: List[str] = []
        self.removed: List[str] = []
        # The same, as data: `fsjob recover --json` (schemas/output/recover.schema.json, the reference's form).
        self.claims_broken: List[Dict[str, Any]] = []
        self.receipts: List[Dict[str, Any]] = []
        self.requeued: List[Dict[str, Any]] = []
        self.ready_rebuilt: List[str] = []
        self.ready_removed: List[str] = []
        self.temp_removed: List[str] = []
        self.workers_removed: List[str] = []
        self.unproven: List[Dict[str, Any]] = []
        self.skipped: List[Dict[str, Any]] = []
        self.failed: List[Dict[str, Any]] = []

    def leave(self, text: str, path: str, job_id: Optional[str], reason: str, gen: Optional[int] = None, clause: str = "") -> None:
        """A job left alone: UNPROVEN (RECOV-1) when ``gen`` is given, else skipped for ``reason``."""
        self.left_alone.append(text)
        if gen is not None and job_id is not None:
            self.unproven.append({"code": "UNPROVEN", "job_id": job_id, "gen": gen, "clause": clause, "reason": reason})
        else:
            self.skipped.append({"path": path, "job_id": job_id, "reason": reason})

    def json(self, root: str) -> Dict[str, Any]:
        """schemas/output/recover.schema.json (holds are never removed here: the Python recover leaves them to their owners)."""
        return {"queue": root, "claims_broken": self.claims_broken, "receipts": self.receipts, "requeued": self.requeued,
                "ready_rebuilt": self.ready_rebuilt, "ready_removed": self.ready_removed, "temp_removed": self.temp_removed,
                "workers_removed": self.workers_removed, "holds_removed": [], "unproven": self.unproven, "skipped": self.skipped,
                "failed": self.failed}


def recover(queue: Queue, log: Callable[[str], None] = lambda text: None) -> RecoverReport:
    """RECOV-1, RECOV-4, READY-4, TEMP-1, TEMP-2 and WORKER-1 over the whole queue. Each job and each sweep on its own:
    one the filesystem refuses (ENOSPC, EROFS, EACCES) is reported failed, and the others are recovered all the same."""
    report = RecoverReport()
    queue.require_layout()
    judge = Judge()

    def rebuild() -> None:
        rebuilt = ready.rebuild(queue.root, queue.uid)
        report.ready_rebuilt, report.ready_removed = rebuilt.created, rebuilt.removed

    _each(report, queue.path("ready"), None, rebuild)
    for job_id in list_dir(queue.path("jobs")):
        if is_job_id(job_id):
            _each(report, queue.path("jobs", job_id), job_id, functools.partial(_recover_job, queue, job_id, judge, report, log))
    _each(report, queue.path("tmp"), None, lambda: _temp_gc(queue, report))
    _each(report, queue.path("workers"), None, lambda: _stale_workers(queue, report))
    for line in report.left_alone:
        log(line)
    for failed in report.failed:
        log(f"{failed['path']}: not recovered: {failed['reason']}")
    return report


def _each(report: RecoverReport, path: str, job_id: Optional[str], step: Callable[[], None]) -> None:
    """One step of recovery on its own: a refusal of the entry's own (a symlink, a foreign owner, a bad record) is
    skipped by design; an IO error is a recovery that did not happen (failed, exit 1: recover again once it is fixed)."""
    try:
        step()
    except FsjobError as error:
        where = error.path or path
        if error.code == "IO":
            report.failed.append({"path": where, "job_id": job_id, "code": error.code, "errno": error.errno, "reason": error.message})
        else:
            report.skipped.append({"path": where, "job_id": job_id, "reason": error.message})
    except OSError as error:
        name = errno_module.errorcode.get(error.errno or 0)
        report.failed.append({"path": path, "job_id": job_id, "code": "IO", "errno": name, "reason": f"{path}: {error.strerror or error}"})


def _recover_job(queue: Queue, job_id: str, judge: Judge, report: RecoverReport, log: Callable[[str], None]) -> None:
    """RECOV-1 and RECOV-4 for one job: break the open claim of a dead owner whose execution is proven stopped."""
    view = JobView(queue.root, job_id, queue.uid).refresh()
    if not view.exists:
        log(f"{view.dir}: {view.dir_problem}; left alone (SEC-10)")
        report.skipped.append({"path": view.dir, "job_id": job_id, "reason": f"{view.dir_problem} (SEC-10)"})
        return
    listing = view.listing
    if listing.receipt or not listing.open:
        return
    g = listing.top
    verdict = judge.owner(view, g)
    if verdict in ("unknown", "watching"):
        why = "cannot be judged" if verdict == "unknown" else "is under LEASE-3's watch, which a one-shot run does not wait out"
        report.leave(f"{view.dir}: the owner of claim {g} {why}; left alone (RECOV-1, LEASE-3)", view.dir, job_id, f"the owner of claim {g} {why} (LEASE-3)")
        return
    if verdict != "dead":
        return
    if g >= GEN_MAX:
        if not finish_at_gen_max(queue.root, view, g, judge, log):
            report.leave(f"{view.dir}: generation {GEN_MAX} reached; cannot recover (CLAIM-4, RECOV-4)", view.dir, job_id,
                         f"generation {GEN_MAX} reached (CLAIM-4, RECOV-4)")
        return
    if not orphan_stopped(view, g, judge, log):
        report.leave(f"{view.dir}: UNPROVEN: the execution of generation {g} may still run; left alone (RECOV-1)", view.dir, job_id,
                     f"the execution of generation {g} may still run", gen=g, clause="RECOV-1")
        return
    gen = Generation.claim(queue.root, job_id, g + 1)
    if gen is None:
        return
    decision = decide("recover", gen, view, judge, log=log)
    report.recovered.append(f"{job_id}: generation {g} recovered as {g + 1}: {decision.outcome or decision.kind}")
    report.claims_broken.append({"job_id": job_id, "gen": g, "reason": "its owner is dead and its execution stopped (RECOV-1)"})
    receipt = view.refresh().receipt() if decision.kind == "receipt" else None
    if receipt is not None and receipt.ok:
        value = receipt.value
        report.receipts.append({"job_id": job_id, "gen": g + 1, "outcome": value["outcome"], "exit_code": value["exit_code"], "reason": value["reason"]})
    elif decision.kind == "end":
        report.requeued.append({"job_id": job_id, "gen": g + 1})


def _stale(path: str, now: int) -> bool:
    st = lstat_or_none(path)
    return st is not None and not stat.S_ISLNK(st.st_mode) and now - st.st_mtime * 1000 > TEMP_MAX_AGE


def _temp_gc(queue: Queue, report: RecoverReport) -> None:
    """TEMP-1: stale temporary names anywhere; stale entries of tmp/, never one named after a published job (TEMP-2)."""
    now = now_ms()
    dirs = [queue.root] + [queue.path(name) for name in ("ready", "workers", "dedupe", "lanes", "jobs")]
    for top in ("jobs", "dedupe", "lanes"):
        for name in list_dir(queue.path(top)):
            path = queue.path(top, name)
            st = lstat_or_none(path)
            if st is not None and stat.S_ISDIR(st.st_mode) and not name.startswith("."):
                dirs.append(path)
    for directory in dirs:
        for name in list_dir(directory):
            path = os.path.join(directory, name)
            if name.startswith(".") and _stale(path, now):
                remove_tree(path)
                report.removed.append(path)
                report.temp_removed.append(path)
    for name in list_dir(queue.path("tmp")):
        path = queue.path("tmp", name)
        job = name
        if name.startswith(".gc-"):
            job = name[4:].rsplit("-", 1)[0]
        if is_job_id(job) and lstat_or_none(queue.path("jobs", job)) is not None:
            continue  # TEMP-2: maybe the published job's own directory under its old name (DUR-3)
        if _stale(path, now):
            remove_tree(path)
            report.removed.append(path)
            report.temp_removed.append(path)


def _stale_workers(queue: Queue, report: RecoverReport) -> None:
    """WORKER-1: a registration whose same-host owner is dead may be removed."""
    for view in worker_views(queue):
        if view.verdict == "dead":  # judged by the process table only (judge_once): a foreign owner is never "dead" here
            path = queue.path("workers", f"{view.worker_id}.json")
            remove_file(path)
            report.removed.append(path)
            report.workers_removed.append(view.worker_id)
