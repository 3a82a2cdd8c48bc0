"""Names inside a queue (LAYOUT-4..LAYOUT-9, SEC-7): every name is matched
against its pattern before it is used to build a path."""

from __future__ import annotations

import hashlib
import re
import time
import os
from typing import NamedTuple, Optional

from .constants import GEN_MAX, INSTANT_MAX

JOB_ID = re.compile(r"[0-9]{19}-[0-9a-f]{16}\Z")
WORKER_ID = re.compile(r"[0-9a-f]{16}\Z")
KEY_HASH = re.compile(r"[0-9a-f]{64}\Z")
_DECIMAL = re.compile(r"[1-9][0-9]*\Z")
READY_NAME = re.compile(r"([0-9]{4})-([0-9]{19}-[0-9a-f]{16})\Z")


def is_job_id(name: str) -> bool:
    """LAYOUT-4: 19 digits, a hyphen, 16 lowercase hex digits."""
    return JOB_ID.match(name) is not None


def parse_gen(text: str) -> Optional[int]:
    """A claim generation 1..GEN_MAX without leading zeros (LAYOUT-5), or None."""
    if _DECIMAL.match(text) is None or len(text) > 5:
        return None
    value = int(text)
    return value if value <= GEN_MAX else None


def parse_hold_number(text: str) -> Optional[int]:
    """A hold number 1..2^53-1 without leading zeros (LAYOUT-8), or None."""
    if _DECIMAL.match(text) is None or len(text) > 16:
        return None
    value = int(text)
    return value if value <= INSTANT_MAX else None


def key_hash(key: str) -> str:
    """LAYOUT-8: the lowercase hex SHA-256 of a key's UTF-8 bytes."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def ready_prefix(priority: int) -> str:
    """LAYOUT-7: four digits of 1000 - priority."""
    return f"{1000 - priority:04d}"


def ready_name(priority: int, job_id: str) -> str:
    """The ready entry name ``<P>-<id>`` of a job (LAYOUT-7)."""
    return f"{ready_prefix(priority)}-{job_id}"


def random_hex16() -> str:
    """16 lowercase hex digits from a secure random source (LAYOUT-4, LAYOUT-9)."""
    return os.urandom(8).hex()


_last_ns = 0


def new_job_id() -> str:
    """A job id (LAYOUT-4): the clock in nanoseconds and 16 random hex digits.

    Ids from one process strictly increase even when the clock does not, so
    that the byte order of ids is this producer's enqueue order (FIFO).
    """
    global _last_ns
    now = time.time_ns()
    if now <= _last_ns:
        now = _last_ns + 1
    _last_ns = now
    return f"{now:019d}-{random_hex16()}"


#: The suffix of a gated job's directory name in jobs/ (GATE-1, LAYOUT-4).
GATED_SUFFIX = ".gated"


def job_id_of_dir_name(name: str) -> Optional[str]:
    """The job id of a directory name in jobs/: ``<id>`` (open) or ``<id>.gated`` (GATE-1); None for any other name."""
    job = name[: -len(GATED_SUFFIX)] if name.endswith(GATED_SUFFIX) else name
    return job if is_job_id(job) else None


class RecordName(NamedTuple):
    """What a path relative to a queue root says about the record stored there (LAYOUT-5, REC-7)."""

    type: str
    job_id: Optional[str] = None
    gen: Optional[int] = None
    force: Optional[bool] = None
    kind: Optional[str] = None
    key_hash: Optional[str] = None
    worker_id: Optional[str] = None


def record_name_of(relative: str) -> Optional[RecordName]:
    """The record type and the members its name fixes, for a path relative to a queue root; None for a name that is no record."""
    parts = relative.split("/")
    if parts == ["fsjob.json"]:
        return RecordName("queue")
    if parts == ["pause.json"]:
        return RecordName("pause")
    if len(parts) == 3 and parts[0] == "jobs" and job_id_of_dir_name(parts[1]) is not None:
        job, name = job_id_of_dir_name(parts[1]), parts[2]
        if name == "spec.json":
            return RecordName("spec", job_id=job)
        if name == "receipt.json":
            return RecordName("receipt", job_id=job)
        if name == "release.json":
            return RecordName("release", job_id=job)
        if name in ("cancel.json", "cancel-force.json"):
            return RecordName("cancel", job_id=job, force=name == "cancel-force.json")
        match = re.match(r"(claim|exec|state|end)\.([^.]+)\.json\Z", name)
        if match is not None:
            gen = parse_gen(match.group(2))
            if gen is None:
                return None
            return RecordName(match.group(1), job_id=job, gen=gen)
        return None
    if len(parts) == 3 and parts[0] in ("dedupe", "lanes") and KEY_HASH.match(parts[1]) and parts[2].endswith(".json"):
        if parse_hold_number(parts[2][:-5]) is None:
            return None
        return RecordName("hold", kind="dedupe" if parts[0] == "dedupe" else "lane", key_hash=parts[1])
    if len(parts) == 2 and parts[0] == "workers" and parts[1].endswith(".json") and WORKER_ID.match(parts[1][:-5]):
        return RecordName("worker", worker_id=parts[1][:-5])
    return None
