"""One generation of ownership of a job: the claim (CLAIM-5) and every record
its owner publishes (exec, state, end, receipt), each after CLAIM-7's check
that no later generation exists."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional

from . import ready
from .clock import mono_ms, now_ms
from .constants import LEASE_DEFAULT, PROTOCOL_VERSION
from .errors import FsjobError
from .identity import self_identity
from .names import RecordName
from .records import encode_record
from .safefs import exists, publish_link, publish_rename


class Superseded(FsjobError):
    """claim.<g+1>.json exists: this owner lost the job (CLAIM-7, OWN-1) and publishes nothing more."""

    def __init__(self, path: str, job_id: str) -> None:
        super().__init__("SUPERSEDED", f"{path} exists: this generation lost the job (CLAIM-7)", path=path, job_id=job_id, clause="CLAIM-7")


class Generation:
    """The owner's side of claim ``gen`` of one job."""

    def __init__(self, root: str, job_id: str, gen: int, claimed_ms: int, claim_mono: int, lease_ms: int, worker_id: Optional[str]) -> None:
        self.root = root
        self.job_id = job_id
        self.dir = os.path.join(root, "jobs", job_id)
        self.gen = gen
        self.claimed_ms = claimed_ms
        #: The claim's first renewal on the monotonic clock (LEASE-5 deadlines count from it).
        self.claim_mono = claim_mono
        self.lease_ms = lease_ms
        self.worker_id = worker_id
        #: The last successful renewal (LEASE-1, LEASE-6): wall time written and its monotonic instant.
        self.renewed_ms = claimed_ms
        self.renewed_mono = claim_mono
        #: The last instant this owner wrote for the generation and its monotonic instant (time_ms).
        self.written_ms = claimed_ms
        self.written_mono = claim_mono

    @classmethod
    def claim(cls, root: str, job_id: str, gen: int, worker_id: Optional[str] = None, lease_ms: int = LEASE_DEFAULT) -> Optional["Generation"]:
        """Publish claim.<gen>.json by link (CLAIM-5): the commit point of the claim. None when another process won."""
        mono = mono_ms()
        claimed = now_ms()
        value = {
            "fsjob": PROTOCOL_VERSION, "type": "claim", "job_id": job_id, "gen": gen, "owner": self_identity(),
            "worker_id": worker_id, "claimed_ms": claimed, "lease_ms": lease_ms,
        }
        data = encode_record("claim", value, RecordName("claim", job_id=job_id, gen=gen))
        if not publish_link(os.path.join(root, "jobs", job_id), f"claim.{gen}.json", data):
            return None
        return cls(root, job_id, gen, claimed, mono, lease_ms, worker_id)

    @property
    def deadline_mono(self) -> int:
        """LEASE-5: the monotonic instant by which the group must be stopped unless renewed (last renewal + lease)."""
        return self.renewed_mono + self.lease_ms

    def superseded(self) -> bool:
        """CLAIM-7: whether claim.<g+1>.json exists (any entry: REC-9)."""
        return exists(os.path.join(self.dir, f"claim.{self.gen + 1}.json"))

    def guard(self) -> None:
        """Raise :class:`Superseded` when a later generation exists."""
        if self.superseded():
            raise Superseded(os.path.join(self.dir, f"claim.{self.gen + 1}.json"), self.job_id)

    def _expect(self, type_: str) -> RecordName:
        return RecordName(type_, job_id=self.job_id, gen=None if type_ == "receipt" else self.gen)

    def publish_exec(self, attempt: int, group: Optional[Dict[str, Any]], recorded_ms: int) -> None:
        """exec.<g>.json (EXEC-3): the commit point of the attempt; durable before this returns (PUB-5)."""
        self.guard()
        value = {"fsjob": PROTOCOL_VERSION, "type": "exec", "job_id": self.job_id, "gen": self.gen, "attempt": attempt, "group": group, "recorded_ms": recorded_ms}
        if not publish_link(self.dir, f"exec.{self.gen}.json", encode_record("exec", value, self._expect("exec"))):
            raise FsjobError("EXISTS", f"{self.dir}/exec.{self.gen}.json already exists", path=self.dir, clause="PUB-3")

    def heartbeat(self, phase: str, attempt: Optional[int], stdout_bytes: int = 0, stderr_bytes: int = 0, progress: Optional[str] = None) -> None:
        """Renew the lease (LEASE-1): state.<g>.json by rename, with a heartbeat_ms never below the last plus the monotonic time since (LEASE-4)."""
        self.guard()
        heartbeat = self.time_ms()
        mono = self.written_mono
        value = {
            "fsjob": PROTOCOL_VERSION, "type": "state", "job_id": self.job_id, "gen": self.gen, "phase": phase, "heartbeat_ms": heartbeat,
            "attempt": attempt, "stdout_bytes": stdout_bytes, "stderr_bytes": stderr_bytes, "progress": progress,
        }
        publish_rename(self.dir, f"state.{self.gen}.json", encode_record("state", value, self._expect("state")))
        self.renewed_ms = heartbeat
        self.renewed_mono = mono

    def time_ms(self, at_least: int = 0) -> int:
        """The instant to write now: the wall clock, but never before the last instant this owner wrote for
        the generation (claimed_ms first) plus the monotonic time since, nor ``at_least`` (LEASE-4).

        A wall clock that went back a day mid-run then gives no record that is
        a day older than the ones before it, and no receipt that finishes
        before it started. Every instant the generation writes (recorded_ms,
        heartbeat_ms, ended_ms, started_ms, finished_ms) comes from here."""
        mono = mono_ms()
        at = max(now_ms(), at_least, self.written_ms + (mono - self.written_mono))
        self.written_ms = at
        self.written_mono = mono
        return at

    def publish_end(self, reason: str, counted: bool, retry_at_ms: int, status: Optional[Dict[str, Any]]) -> None:
        """end.<g>.json (spec/records.md): the generation ends and the job is queued again."""
        self.guard()
        now = now_ms()
        ended = self.time_ms()
        # The caller's retry_at_ms is its now plus the delay: moved with ended_ms, the delay stays what it was.
        value = {
            "fsjob": PROTOCOL_VERSION, "type": "end", "job_id": self.job_id, "gen": self.gen, "reason": reason, "counted": counted,
            "retry_at_ms": retry_at_ms + (ended - now), "status": status, "ended_ms": ended,
        }
        if not publish_link(self.dir, f"end.{self.gen}.json", encode_record("end", value, self._expect("end"))):
            raise FsjobError("EXISTS", f"{self.dir}/end.{self.gen}.json already exists", path=self.dir, clause="PUB-3")

    def publish_receipt(self, outcome: str, exit_code: int, reason: Optional[str], message: Optional[str], attempts: int,
                        status: Optional[Dict[str, Any]] = None, started_ms: Optional[int] = None,
                        stdout: Optional[Dict[str, Any]] = None, stderr: Optional[Dict[str, Any]] = None,
                        result: Any = None, priority: Optional[int] = None) -> bool:
        """receipt.json (RCPT-3): the commit point of the job; then its ready entry goes (READY-2).

        The caller has fsynced the outputs it describes (RCPT-2). Returns
        False when the job already had a receipt (nothing replaced).
        """
        self.guard()
        if message is not None and len(message.encode("utf-8")) > 1024:
            message = message.encode("utf-8")[:1000].decode("utf-8", "ignore") + " [...]"
        value = {
            "fsjob": PROTOCOL_VERSION, "type": "receipt", "job_id": self.job_id, "gen": self.gen, "outcome": outcome, "exit_code": exit_code,
            "reason": reason, "message": message, "attempts": attempts, "status": status, "started_ms": started_ms,
            "finished_ms": self.time_ms(started_ms or 0), "stdout": stdout, "stderr": stderr, "result": result, "by": self_identity(),
        }
        published = publish_link(self.dir, "receipt.json", encode_record("receipt", value, self._expect("receipt")))
        if priority is not None:
            ready.remove_named(self.root, priority, self.job_id)
        else:
            ready.remove(self.root, self.job_id)
        return published
