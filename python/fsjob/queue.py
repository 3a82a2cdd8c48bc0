"""A queue: its root (SEC-1), its queue record (LAYOUT-2) and its directories (LAYOUT-1, LAYOUT-10)."""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .clock import now_ms
from .constants import PROTOCOL_VERSION
from .descriptors import short_of_descriptors
from .errors import FsjobError, io_error
from .names import RecordName, is_job_id, random_hex16
from .records import encode_record, read_record
from .safefs import EUID, check_dir, lstat_or_none, make_dir, probe_filesystem, publish_link

if TYPE_CHECKING:
    from .gates import Released
    from .pause import PauseState
    from .receipt import JobStatus, Logs, Receipt

TOP_DIRS = ("tmp", "jobs", "ready", "dedupe", "lanes", "workers")


def _judge_root(root: str, st: Optional[os.stat_result]) -> None:
    """SEC-1 on the lstat of a queue root."""
    if st is None:
        raise FsjobError("NOT_A_QUEUE", f"{root} does not exist; create a queue there with: fsjob init --queue {root}", path=root, clause="SEC-1")

    def unsafe(reason: str) -> FsjobError:
        return FsjobError("UNSAFE_QUEUE", f"queue root {root} {reason} (SEC-1)", path=root, clause="SEC-1")

    if stat.S_ISLNK(st.st_mode):
        raise unsafe("is a symbolic link; use the real directory path instead")
    if not stat.S_ISDIR(st.st_mode):
        raise unsafe("is not a directory")
    if st.st_uid != EUID:
        raise unsafe(f"is owned by uid {st.st_uid}, not {EUID}")
    if st.st_mode & 0o022:
        raise unsafe(f"has mode 0{st.st_mode & 0o7777:o}, writable by group or others")


class Queue:
    """An fsjob queue directory. Open one with :meth:`open` or create it with :meth:`init`.

    The producer side is a few methods (:meth:`enqueue`, :meth:`wait`,
    :meth:`status`, :meth:`cancel`, :meth:`logs`); the consumer is
    :func:`fsjob.work`.
    """

    def __init__(self, root: str, queue_id: str, created_ms: int) -> None:
        self.root = root
        self.queue_id = queue_id
        self.created_ms = created_ms
        #: The queue root's owner: every entry inside must be owned by it (SEC-6).
        self.uid = EUID

    # --- opening ---------------------------------------------------------

    @classmethod
    def open(cls, path: Union[str, "os.PathLike[str]"]) -> "Queue":
        """Open an existing queue: the root passes SEC-1 and holds a valid ``fsjob.json`` (LAYOUT-2, VER-1)."""
        root = os.path.abspath(os.fspath(path))
        _judge_root(root, lstat_or_none(root))
        record = read_record(os.path.join(root, "fsjob.json"), "queue", RecordName("queue"), allow_missing=True)
        if record is None:
            raise FsjobError("NOT_A_QUEUE", f"{root} is not an fsjob queue: it has no fsjob.json (LAYOUT-2); create one with: fsjob init --queue {root}", path=root, clause="LAYOUT-2")
        if not record.ok:
            code = "UNSUPPORTED_VERSION" if record.unsupported_version else "NOT_A_QUEUE"
            raise FsjobError(code, f"{root} is not a usable queue: {record.reason} (LAYOUT-2)", path=os.path.join(root, "fsjob.json"), clause="LAYOUT-2")
        return cls(root, record.value["queue_id"], record.value["created_ms"])

    @classmethod
    def init(cls, path: Union[str, "os.PathLike[str]"]) -> "Queue":
        """Create a queue, or open it when it exists (INIT-1, INIT-2: init is idempotent)."""
        root = os.path.abspath(os.fspath(path))
        if lstat_or_none(root) is None:
            parent = os.path.dirname(root)
            if parent and not os.path.isdir(parent):
                try:
                    os.makedirs(parent, exist_ok=True)
                except OSError as error:
                    raise io_error(error, "cannot create the parent of the queue root", parent, "INIT-1") from error
            try:
                os.mkdir(root, 0o700)
                os.chmod(root, 0o700)
            except FileExistsError:
                pass
            except OSError as error:
                raise io_error(error, "cannot create the queue root", root, "INIT-1") from error
        _judge_root(root, lstat_or_none(root))
        for name in TOP_DIRS:
            try:
                make_dir(os.path.join(root, name))
            except FsjobError as error:
                raise FsjobError(error.code, f"cannot use {name}/ of the queue: {error.message}", path=error.path, clause=error.clause) from error
        existing = read_record(os.path.join(root, "fsjob.json"), "queue", RecordName("queue"), allow_missing=True)
        if existing is None:
            # FS-2: before a queue is created, a filesystem without hard links or rename over is refused
            # (fsjob.json is not written); an existing queue is only confirmed, also on a read-only mount.
            probe_filesystem(os.path.join(root, "tmp"))
            queue_id, created = random_hex16(), now_ms()
            value: Dict[str, Any] = {"fsjob": PROTOCOL_VERSION, "type": "queue", "queue_id": queue_id, "created_ms": created}
            if publish_link(root, "fsjob.json", encode_record("queue", value)):
                return cls(root, queue_id, created)
            existing = read_record(os.path.join(root, "fsjob.json"), "queue", RecordName("queue"))
        assert existing is not None
        if not existing.ok:
            raise FsjobError("NOT_A_QUEUE", f"{root}/fsjob.json exists but is not a valid queue record: {existing.reason} (INIT-2)", path=os.path.join(root, "fsjob.json"), clause="INIT-2")
        return cls(root, existing.value["queue_id"], existing.value["created_ms"])

    # --- layout ----------------------------------------------------------

    def path(self, *parts: str) -> str:
        """A path inside the queue, from names already checked against their patterns (SEC-7)."""
        return os.path.join(self.root, *parts)

    def job_dir(self, job_id: str) -> str:
        """``jobs/<id>``; INVALID_ID for a name that is not a job id (SEC-7)."""
        if not is_job_id(job_id):
            raise FsjobError("INVALID_ID", f"{job_id!r} is not a job id (LAYOUT-4)", job_id=job_id, clause="LAYOUT-4")
        return os.path.join(self.root, "jobs", job_id)

    def require(self, *names: str) -> None:
        """LAYOUT-10: fail naming the first top-level directory among ``names`` that is missing or unusable."""
        for name in names:
            try:
                check_dir(os.path.join(self.root, name), self.uid)
            except FsjobError as error:
                raise FsjobError(error.code, f"the queue's {name}/ is unusable: {error.message} (LAYOUT-10)", path=os.path.join(self.root, name), clause="LAYOUT-10") from error

    def require_layout(self) -> None:
        """LAYOUT-10: every operation refuses a damaged queue, even when it would not use the damaged entry."""
        self.require(*TOP_DIRS)

    def usable(self, name: str) -> bool:
        """Whether a top-level directory is usable (LAYOUT-10)."""
        try:
            self.require(name)
            return True
        except FsjobError:
            return False

    def still_here(self) -> bool:
        """WORKER-4: the root still holds this queue (the same ``queue_id``)."""
        try:
            _judge_root(self.root, lstat_or_none(self.root))
            record = read_record(os.path.join(self.root, "fsjob.json"), "queue", RecordName("queue"), allow_missing=True)
        except FsjobError as error:
            # No descriptor left to read fsjob.json with says nothing of what the root holds: the next check tells.
            return short_of_descriptors(error)
        return record is not None and record.ok and record.value.get("queue_id") == self.queue_id

    def __repr__(self) -> str:
        return f"Queue({self.root!r})"

    # --- the producer side (fsjob.producer, fsjob.ops) -----------------------

    def enqueue(
        self,
        argv: Optional[Sequence[str]] = None,
        *,
        handler: Optional[str] = None,
        payload: Any = None,
        stdin: Union[bytes, str, None] = None,
        env: Optional[Dict[str, str]] = None,
        cwd: Optional[str] = None,
        timeout: Optional[float] = None,
        kill_grace: Optional[float] = None,
        queue_deadline: Optional[float] = None,
        lane: Optional[str] = None,
        dedupe: Optional[str] = None,
        priority: int = 0,
        max_attempts: int = 1,
        retry_delay: Optional[float] = None,
        preemptible: bool = False,
        max_output_bytes: Optional[int] = None,
        output_keep: Optional[str] = None,
        not_before: Optional[float] = None,
        labels: Optional[Dict[str, str]] = None,
        after: Optional[Sequence[Union[str, Tuple[str, str]]]] = None,
        hold: bool = False,
        lane_slots: Optional[int] = None,
    ) -> str:
        """Enqueue a job and return its id once it is durably accepted (ENQ-4).

        A command job gives ``argv``; a payload job gives ``handler`` (and
        ``payload``, any JSON value). Durations (``timeout``, ``kill_grace``,
        ``queue_deadline``, ``retry_delay``) are in seconds. ``output_keep``
        ("head", "tail" or "head_tail") says which bytes of an output longer
        than ``max_output_bytes`` are kept (EXEC-17); ``not_before`` is an
        instant in seconds since the epoch (as ``time.time()``) before which
        no consumer starts the job (DELAY-1). ``after`` names jobs this one
        runs after: an id (once it succeeded) or ``(id, "finished")`` (once it
        finished, whatever its outcome); a job that cannot succeed any more
        cancels this one (AFTER-1, AFTER-3). ``hold=True`` enqueues it held
        until :meth:`release` (HOLD-1). ``lane_slots`` lets up to N jobs of
        ``lane`` run at once (LANE-5). Raises
        :class:`fsjob.DedupeHeld` when an unfinished job holds ``dedupe``
        (DEDUPE-1), USAGE for an invalid request (ENQ-1).
        """
        from .producer import build_request, enqueue_request

        request = build_request(
            argv=argv, handler=handler, payload=payload, stdin=stdin, env=env, cwd=cwd, timeout=timeout,
            kill_grace=kill_grace, queue_deadline=queue_deadline, lane=lane, dedupe=dedupe, priority=priority,
            max_attempts=max_attempts, retry_delay=retry_delay, preemptible=preemptible,
            max_output_bytes=max_output_bytes, output_keep=output_keep, not_before=not_before, labels=labels,
            after=after, hold=hold, lane_slots=lane_slots,
        )
        return enqueue_request(self, request)

    def enqueue_request(self, request: Union[bytes, Dict[str, Any]]) -> str:
        """Enqueue a request in the form of ``schemas/request.schema.json`` (bytes of a request file, or a dict)."""
        from .producer import enqueue_request

        return enqueue_request(self, request)

    def wait(self, job_id: str, timeout: Optional[float] = None, poll: float = 0.1) -> "Receipt":
        """Wait for the job's receipt and return it (REC-4 checked); TIMEOUT after ``timeout`` seconds (its ``job_ids``: this job, as wait_many's)."""
        from .ops import wait

        return wait(self, job_id, timeout, poll)

    def wait_many(self, job_ids: Sequence[str], timeout: Optional[float] = None, on_receipt: Optional[Callable[["Receipt"], None]] = None) -> List["Receipt"]:
        """Wait for every job's receipt; the receipts in the order given. ``on_receipt`` gets each as its job finishes.

        ``summary_exit_code(receipts)`` (fsjob.waiting) sums them up: 0 only
        when every job succeeded. TIMEOUT after ``timeout`` seconds.
        """
        from .waiting import wait_many

        return wait_many(self, job_ids, timeout, on_receipt)

    def unfinished(self, lane: Optional[str] = None, labels: Optional[Mapping[str, str]] = None) -> List[str]:
        """The jobs without a receipt now, of ``lane`` and with every one of ``labels`` when given, in enqueue order."""
        from .waiting import unfinished_jobs

        return unfinished_jobs(self, lane, labels)

    def status(self, job_id: str) -> "JobStatus":
        """The job's status as STATUS-1 derives it from the records that exist."""
        from .ops import status

        return status(self, job_id)

    def cancel(self, job_id: str, force: bool = False, reason: Optional[str] = None) -> bool:
        """Request cancellation (CANCEL-1); finish the job at once when nobody owns it (CANCEL-2).

        Returns True when this call published the request, False when it was
        already there. Raises FINISHED for a job with a receipt, NOT_FOUND for
        an unknown job.
        """
        from .ops import cancel

        return cancel(self, job_id, force, reason)

    def release(self, job_id: str) -> "Released":
        """Release a job enqueued held (HOLD-2): it runs once its dependencies allow.

        Returns what happened (``published`` False when it was released
        already; ``next`` "open" or "waiting" with ``waiting_for``). Raises
        NOT_HELD for a job not enqueued held, FINISHED for a finished one,
        NOT_FOUND for an unknown one.
        """
        from .gates import release

        self.job_dir(job_id)
        return release(self.root, self.uid, job_id)

    def release_where(self, lane: Optional[str] = None, labels: Optional[Dict[str, str]] = None) -> List["Released"]:
        """Release every held job of ``lane`` and with every label of ``labels``, in id order (HOLD-2)."""
        from .gates import held_jobs, release

        out: List["Released"] = []
        for job_id in held_jobs(self.root, self.uid, lane, labels):
            try:
                out.append(release(self.root, self.uid, job_id))
            except FsjobError as error:
                if error.code not in ("NOT_FOUND", "FINISHED"):
                    raise  # cancelled, retired or released by another process meanwhile: nothing to do
        return out

    def logs(self, job_id: str) -> "Logs":
        """The kept output of the job's latest execution (its receipt's, once finished)."""
        from .ops import logs

        return logs(self, job_id)

    # --- pausing (spec/records.md, PAUSE-1) ------------------------------------

    def pause(self, reason: Optional[str] = None) -> bool:
        """Pause consumption: publish ``pause.json``; no consumer claims a job while it exists (PAUSE-1).

        Running attempts go on. Returns False when the queue was paused already (nothing changes).
        """
        from .pause import pause_queue

        return pause_queue(self, reason)

    def resume(self) -> bool:
        """Remove ``pause.json``; consumers claim again at their next pass. Returns whether the queue was paused."""
        from .pause import resume_queue

        return resume_queue(self)

    def paused(self) -> "PauseState":
        """Whether the queue is paused, with the pause record (None when the entry at that name is not a valid one)."""
        from .pause import pause_state

        return pause_state(self)

    def job_ids(self) -> List[str]:
        """The ids in ``jobs/``, gated ones (``<id>.gated``, GATE-1) too, in enqueue order (names that are not job ids are foreign and skipped, LAYOUT-4)."""
        from .names import GATED_SUFFIX
        from .safefs import list_dir

        ids = {name[: -len(GATED_SUFFIX)] if name.endswith(GATED_SUFFIX) else name for name in list_dir(self.path("jobs"))}
        return sorted(name for name in ids if is_job_id(name))
