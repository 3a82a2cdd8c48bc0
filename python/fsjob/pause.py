"""Pausing a queue's consumption (spec/records.md, PAUSE-1, 1.1).

The pause is one root entry, ``pause.json``: while an entry of any kind has
that name no consumer claims a job (its existence decides, as REC-9 says for
job records; the record only says who paused the queue, when and why).
Pausing publishes it by link, so a second pause finds the name taken and
changes nothing (PUB-3); resuming removes it, the only removal PUB-10 allows
for it. Running attempts, recoverers and cancellers are not paused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, NamedTuple, Optional

from .clock import now_ms
from .constants import PROTOCOL_VERSION
from .errors import FsjobError
from .identity import self_identity
from .names import RecordName
from .records import encode_record, read_record
from .safefs import lstat_or_none, publish_link, remove_tree

if TYPE_CHECKING:
    from .queue import Queue

#: The root entry whose existence pauses a queue (spec/records.md).
PAUSE_RECORD = "pause.json"


class PauseState(NamedTuple):
    """Whether the queue is paused, and by which record (None when the entry is not a valid pause record: paused all the same)."""

    paused: bool
    record: Optional[Dict[str, Any]] = None
    #: Why the entry is not a valid record, for people ("" when it is one).
    note: str = ""


def is_paused(queue: "Queue") -> bool:
    """PAUSE-1: one lstat of the root's pause.json, never followed."""
    return lstat_or_none(queue.path(PAUSE_RECORD)) is not None


def pause_state(queue: "Queue") -> PauseState:
    """Whether the queue is paused, with the pause record when it is a valid one."""
    if not is_paused(queue):
        return PauseState(False)
    try:
        read = read_record(queue.path(PAUSE_RECORD), "pause", RecordName("pause"), queue.uid, allow_missing=True)
    except FsjobError as error:
        if error.code == "IO":
            raise
        return PauseState(True, None, error.message)
    if read is None:
        return PauseState(False)  # resumed between the lstat and the read
    return PauseState(True, read.value, "") if read.ok else PauseState(True, None, read.reason)


def pause_queue(queue: "Queue", reason: Optional[str] = None) -> bool:
    """Publish pause.json (PUB-1..PUB-6); True when this call paused the queue, False when it was paused already."""
    value: Dict[str, Any] = {"fsjob": PROTOCOL_VERSION, "type": "pause", "paused_ms": now_ms(), "by": self_identity(), "reason": reason}
    try:
        data = encode_record("pause", value, RecordName("pause"))
    except FsjobError as error:
        raise FsjobError("USAGE", f"cannot write the pause record: {error.message}", clause=error.clause or "REC-5") from error
    return publish_link(queue.root, PAUSE_RECORD, data)


def resume_queue(queue: "Queue") -> bool:
    """Remove pause.json, whatever kind of entry it is (PUB-10); True when the queue was paused."""
    if not is_paused(queue):
        return False
    remove_tree(queue.path(PAUSE_RECORD))
    return True
