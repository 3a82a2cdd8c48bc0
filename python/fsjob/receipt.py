"""What a job tells its producer: the receipt (spec/records.md), the status
(STATUS-1) and the kept output, as typed objects."""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional


class ExecStatus(NamedTuple):
    """How an execution ended: exactly one of ``exit`` (0..255) and ``signal`` ("SIGKILL") is set."""

    exit: Optional[int]
    signal: Optional[str]

    @classmethod
    def of(cls, value: Optional[Dict[str, Any]]) -> Optional["ExecStatus"]:
        """From a record's ``status`` member (None stays None)."""
        return None if value is None else cls(value.get("exit"), value.get("signal"))


class OutputSummary(NamedTuple):
    """A receipt's description of ``stdout.<gen>`` or ``stderr.<gen>`` (RCPT-5)."""

    gen: int
    bytes_total: Optional[int]
    bytes_kept: int
    truncated: bool
    sha256: str

    @classmethod
    def of(cls, value: Optional[Dict[str, Any]]) -> Optional["OutputSummary"]:
        """From a receipt's ``stdout``/``stderr`` member."""
        if value is None:
            return None
        return cls(value["gen"], value["bytes_total"], value["bytes_kept"], value["truncated"], value["sha256"])


class Receipt(NamedTuple):
    """A job's receipt (spec/records.md), read with every REC-4 check.

    ``outcome`` is one of succeeded, failed, timed_out, expired, cancelled,
    force_stopped, lost, rejected; ``exit_code`` follows EXEC-10.
    """

    job_id: str
    gen: int
    outcome: str
    exit_code: int
    reason: Optional[str]
    message: Optional[str]
    attempts: int
    status: Optional[ExecStatus]
    started_ms: Optional[int]
    finished_ms: int
    stdout: Optional[OutputSummary]
    stderr: Optional[OutputSummary]
    result: Any
    by: Dict[str, Any]
    #: The record as read.
    record: Dict[str, Any]

    @property
    def succeeded(self) -> bool:
        """Whether the job finished with outcome ``succeeded``."""
        return self.outcome == "succeeded"

    @classmethod
    def of(cls, value: Dict[str, Any]) -> "Receipt":
        """From a valid receipt record."""
        return cls(
            value["job_id"], value["gen"], value["outcome"], value["exit_code"], value["reason"], value["message"],
            value["attempts"], ExecStatus.of(value["status"]), value["started_ms"], value["finished_ms"],
            OutputSummary.of(value["stdout"]), OutputSummary.of(value["stderr"]), value.get("result"), value["by"], value,
        )


class JobStatus(NamedTuple):
    """A job's status as STATUS-1 derives it.

    ``status`` is one of: finished, running, claimed, orphaned, cancelling,
    expired, held (1.2: enqueued held, not yet released, HOLD-1), blocked
    (1.2: a dependency has not finished as it must, AFTER-1), delayed (1.1:
    not before its ``not_before_ms``), retrying, queued, damaged (a record the status needs is
    invalid: nobody acts on the job) or missing (no such job).
    """

    job_id: str
    status: str
    #: The highest claim generation (0 when never claimed).
    gen: int
    #: Attempts used (RETRY-1).
    attempts: int
    #: The receipt, when finished and valid.
    receipt: Optional[Receipt] = None
    #: Why the job is damaged or its owner unknown, for people.
    note: str = ""
    #: retry_at_ms of the current end record when retrying.
    retry_at_ms: Optional[int] = None
    #: The spec's not_before_ms when delayed (DELAY-1).
    not_before_ms: Optional[int] = None
    #: The dependency a blocked job waits for (AFTER-1).
    awaiting: Optional[str] = None


class Logs(NamedTuple):
    """The kept output of one generation (``gen`` 0: nothing ran yet)."""

    gen: int
    stdout: bytes
    stderr: bytes
    #: Whether bytes were discarded past max_output_bytes (known from the receipt; None while unknown).
    truncated: Optional[bool] = None
    #: The spec's output_keep (EXEC-17): the missing bytes of a truncated output lie after the kept
    #: bytes for "head", before them for "tail", after the first half for "head_tail" (:meth:`gap`).
    output_keep: str = "head"

    def gap(self, kept: bytes) -> int:
        """EXEC-17: the offset in ``kept`` (``stdout`` or ``stderr``) where dropped bytes belong."""
        from .outputs import gap_offset

        return gap_offset(self.output_keep, len(kept))
