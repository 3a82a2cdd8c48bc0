"""Gated jobs (spec/gates.md): dependencies (``after``) and held jobs.

A gated job lives at ``jobs/<id>.gated``, where no 1.1 reader looks
(GATE-1), and is never claimed there (GATE-2). Its gate opens by one rename
within ``jobs/`` to ``jobs/<id>`` (GATE-3): with a cancel entry, or once
every dependency is satisfied (AFTER-1) and the job is released (HOLD-1).
"""

from __future__ import annotations

import os
import stat as _stat
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from . import ready
from .clock import now_ms
from .constants import PROTOCOL_MINOR, PROTOCOL_VERSION
from .errors import FsjobError, io_error
from .identity import self_identity
from .jobview import JobView
from .names import GATED_SUFFIX, RecordName
from .records import encode_record, read_record
from .safefs import fsync_dir, lstat_or_none, publish_link


def gated_dir(root: str, job_id: str) -> str:
    """The directory of a gated job (GATE-1)."""
    return os.path.join(root, "jobs", job_id + GATED_SUFFIX)


def place(root: str, job_id: str) -> str:
    """GATE-4: "open", "gated" or "missing", looking at jobs/<id>, then jobs/<id>.gated, then jobs/<id> again."""
    for name in (job_id, job_id + GATED_SUFFIX, job_id):
        if lstat_or_none(os.path.join(root, "jobs", name)) is not None:
            return "gated" if name.endswith(GATED_SUFFIX) else "open"
    return "missing"


def placed_view(root: str, job_id: str, uid: int) -> JobView:
    """The job's records where they are now: jobs/<id>.gated/ while it is held or blocked (GATE-1), else jobs/<id>/."""
    view = JobView(root, job_id, uid)
    if place(root, job_id) == "gated":
        view.dir = gated_dir(root, job_id)
    return view.refresh()


#: Jobs followed by held_upstream before it gives up (the reference's UPSTREAM_MAX): a deeper chain is not looked through.
UPSTREAM_MAX = 256


def unsatisfiable(root: str, uid: int, spec: Dict[str, Any]) -> List[str]:
    """AFTER-3 seen from the producer: one sentence per dependency of ``spec`` that can never be satisfied now, for a
    warning (the reference's unsatisfiable): a job published with one is cancelled by the first consumer, never run."""
    found = []
    for dependency in spec.get("after", []):
        state, what = dependency_state(root, uid, dependency["job_id"], dependency["when"])
        if state == "never":
            found.append(f"dependency {dependency['job_id']} {what}; this job runs only after it {dependency['when']}, so a worker cancels it (exit 130) instead of running it")
    return found


def held_upstream(root: str, uid: int, job_id: str) -> Optional[str]:
    """The held job (HOLD-1: not released, not cancelled) that the gated job ``job_id`` waits for through its pending
    dependencies, directly or further up, or None (the reference's heldUpstream): it runs only once someone releases
    that one. Each job is looked at once (AFTER-2 makes the graph acyclic; the bound guards a damaged one); an
    unreadable spec is passed over."""
    seen = {job_id}
    following = [job_id]
    while following and len(seen) <= UPSTREAM_MAX:
        current = following.pop(0)
        if place(root, current) != "gated":
            continue
        spec = placed_view(root, current, uid).spec_value()
        if spec is None:
            continue
        directory = gated_dir(root, current)
        if current != job_id and spec.get("hold") is True and not any(
                lstat_or_none(os.path.join(directory, name)) is not None for name in ("cancel.json", "cancel-force.json", "release.json")):
            return current
        for dependency in spec.get("after", []):
            if dependency["job_id"] in seen:
                continue
            seen.add(dependency["job_id"])
            if dependency_state(root, uid, dependency["job_id"], dependency["when"])[0] == "pending":
                following.append(dependency["job_id"])
    return None


def dependency_state(root: str, uid: int, job_id: str, when: str) -> Tuple[str, str]:
    """AFTER-1 for one dependency: ("satisfied" | "pending" | "never", why never)."""
    where = place(root, job_id)
    if where == "gated":
        return "pending", ""
    if where == "missing":
        # Retired after it finished (only GC-1 removes a job, AFTER-2 saw it exist): its outcome is gone.
        return ("satisfied", "") if when == "finished" else ("never", "no longer exists, so its outcome is unknown")
    path = os.path.join(root, "jobs", job_id, "receipt.json")
    if lstat_or_none(path) is None:
        return "pending", ""
    if when == "finished":
        return "satisfied", ""  # REC-9: the entry finishes the job whatever it holds
    receipt = read_record(path, "receipt", RecordName("receipt", job_id=job_id), uid, allow_missing=True)
    if receipt is None or not receipt.ok:
        return "never", "finished, but its receipt is invalid, so it did not provably succeed (SEC-10)"
    if receipt.value["outcome"] == "succeeded":
        return "satisfied", ""
    return "never", f"finished {receipt.value['outcome']} (exit code {receipt.value['exit_code']})"


class Verdict(NamedTuple):
    """GATE-3, AFTER-3, HOLD-1: "open", "cancel" (with why), "held", "blocked" (with the pending dependency) or "newer"."""

    kind: str
    why: str = ""
    awaiting: Optional[str] = None
    priority: int = 0


def verdict(root: str, uid: int, job_id: str) -> Verdict:
    """The verdict on the gated job ``job_id``, from what its directory and its dependencies say now."""
    directory = gated_dir(root, job_id)
    spec = read_record(os.path.join(directory, "spec.json"), "spec", RecordName("spec", job_id=job_id), uid, allow_missing=True)
    valid = spec is not None and spec.ok
    priority = int(spec.value["priority"]) if spec is not None and spec.ok else 0
    if any(lstat_or_none(os.path.join(directory, name)) is not None for name in ("cancel.json", "cancel-force.json")):
        return Verdict("open", priority=priority)
    if spec is None or not valid:
        return Verdict("cancel", "its spec.json is not a valid record, so its gate cannot be judged (AFTER-3)")
    value: Dict[str, Any] = spec.value
    if int(str(value["fsjob"]).split(".")[1]) > PROTOCOL_MINOR:
        return Verdict("newer", priority=priority)  # a newer minor may add gates this reader cannot see
    awaiting: Optional[str] = None
    for dependency in value.get("after", []):
        state, what = dependency_state(root, uid, dependency["job_id"], dependency["when"])
        if state == "never":
            why = f"dependency {dependency['job_id']} {what}; this job runs only after it {dependency['when']} (AFTER-3)"
            return Verdict("cancel", why, priority=priority)
        if state == "pending" and awaiting is None:
            awaiting = dependency["job_id"]
    if value.get("hold") is True and lstat_or_none(os.path.join(directory, "release.json")) is None:
        return Verdict("held", priority=priority)
    if awaiting is not None:
        return Verdict("blocked", awaiting=awaiting, priority=priority)
    return Verdict("open", priority=priority)


def open_gate(root: str, job_id: str, priority: int) -> None:
    """GATE-3: the ready entry first (a 1.1 consumer may have removed it), the rename (the commit point), then fsync of jobs/ (DUR-4)."""
    ready.create(root, priority, job_id)
    target = os.path.join(root, "jobs", job_id)
    if lstat_or_none(target) is None:
        try:
            os.rename(gated_dir(root, job_id), target)
        except FileNotFoundError:
            pass  # another process opened it first
        except OSError as error:
            raise io_error(error, "cannot open the gate", target, "GATE-3") from error
    st = lstat_or_none(target)
    if st is None or not _stat.S_ISDIR(st.st_mode):
        raise FsjobError("IO", f"the gate of job {job_id} did not open: {target} is not its directory", path=target, job_id=job_id, clause="GATE-3")
    fsync_dir(os.path.join(root, "jobs"))


def publish_cancel(directory: str, job_id: str, force: bool, reason: Optional[str]) -> bool:
    """CANCEL-1 in ``directory`` (the job's, gated or open); False when the request stood already."""
    if reason is not None:
        reason = reason.encode("utf-8")[:1024].decode("utf-8", "ignore")
    value = {"fsjob": PROTOCOL_VERSION, "type": "cancel", "job_id": job_id, "force": force, "requested_ms": now_ms(), "by": self_identity(), "reason": reason}
    name = "cancel-force.json" if force else "cancel.json"
    return publish_link(directory, name, encode_record("cancel", value, RecordName("cancel", job_id=job_id, force=force)))


def look(root: str, uid: int, job_id: str, log: Any = None) -> str:
    """AFTER-4 for a job whose ready entry names no open directory: "opened", "pass" or "missing"."""
    where = place(root, job_id)
    if where != "gated":
        return "opened" if where == "open" else "missing"
    found = verdict(root, uid, job_id)
    if found.kind in ("held", "blocked", "newer"):
        return "pass"
    if found.kind == "cancel":
        # AFTER-3: the cancel record first, so that every claimer, a 1.1 one too, ends the job unrun.
        try:
            publish_cancel(gated_dir(root, job_id), job_id, False, found.why)
        except FsjobError:
            if place(root, job_id) == "open":
                return "opened"
            raise
        if log is not None:
            log(f"{job_id}: cancelled: {found.why}")
    open_gate(root, job_id, found.priority)
    return "opened"


class Released(NamedTuple):
    """What release did for one job: published (False: released already), next "open" or "waiting"."""

    job_id: str
    published: bool
    next: str
    waiting_for: Optional[str]


def release(root: str, uid: int, job_id: str) -> Released:
    """HOLD-2: publish release.json in jobs/<id>.gated/, then open the gate when GATE-3 allows."""
    where = place(root, job_id)
    if where == "missing":
        raise FsjobError("NOT_FOUND", f"no job {job_id} in {root}", path=os.path.join(root, "jobs", job_id), job_id=job_id)
    directory = gated_dir(root, job_id) if where == "gated" else os.path.join(root, "jobs", job_id)
    if lstat_or_none(os.path.join(directory, "receipt.json")) is not None:
        raise FsjobError("FINISHED", f"job {job_id} already finished; there is nothing to release (HOLD-2)", job_id=job_id, clause="HOLD-2")
    spec = read_record(os.path.join(directory, "spec.json"), "spec", RecordName("spec", job_id=job_id), uid, allow_missing=True)
    if spec is None or not spec.ok:
        raise FsjobError("INVALID_RECORD", f"job {job_id} has no valid spec.json, so whether it is held cannot be read; cancel it instead", job_id=job_id, clause="HOLD-1")
    if spec.value.get("hold") is not True:
        raise FsjobError("NOT_HELD", f"job {job_id} was not enqueued held, so it cannot be released (HOLD-1)", job_id=job_id, clause="HOLD-1")
    if where == "open":
        return Released(job_id, False, "open", None)
    value = {"fsjob": PROTOCOL_VERSION, "type": "release", "job_id": job_id, "released_ms": now_ms(), "by": self_identity()}
    try:
        published = publish_link(directory, "release.json", encode_record("release", value, RecordName("release", job_id=job_id)))
    except FsjobError:
        if place(root, job_id) == "open":
            return Released(job_id, False, "open", None)
        raise
    found = verdict(root, uid, job_id)
    if found.kind == "open":
        open_gate(root, job_id, found.priority)
        return Released(job_id, published, "open", None)
    waiting = f"dependency {found.awaiting}" if found.kind == "blocked" else found.why or "a consumer of its newer version"
    return Released(job_id, published, "waiting", waiting)


def held_jobs(root: str, uid: int, lane: Optional[str], labels: Optional[Dict[str, str]]) -> List[str]:
    """The held jobs (gated, with hold, not yet released) of a lane and with every given label, in id order."""
    out: List[str] = []
    for name in sorted(os.listdir(os.path.join(root, "jobs"))):
        if not name.endswith(GATED_SUFFIX):
            continue
        job_id = name[: -len(GATED_SUFFIX)]
        directory = gated_dir(root, job_id)
        if lstat_or_none(os.path.join(directory, "release.json")) is not None:
            continue
        spec = read_record(os.path.join(directory, "spec.json"), "spec", RecordName("spec", job_id=job_id), uid, allow_missing=True)
        if spec is None or not spec.ok or spec.value.get("hold") is not True:
            continue
        if lane is not None and spec.value["lane"] != lane:
            continue
        if labels and any(spec.value["labels"].get(k) != v for k, v in labels.items()):
            continue
        out.append(job_id)
    return out
