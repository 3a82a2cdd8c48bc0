"""Judging owners and executions (ID-6..ID-8, LEASE-3, LEASE-4, RETRY-4).

A same-host owner is judged by the process table (ID-6). A foreign owner is
judged by its lease only, and only by watching it: a claim is broken after
this process has itself seen its last renewal stay unchanged for
``lease_ms + GUARDIAN_LIMIT + LEASE_SKEW`` of its monotonic clock (LEASE-3).
The wall clock alone never kills; it only says when a claim has missed a
renewal, so that a draining consumer knows a watch is worth waiting for
(MANIFEST-4).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from .clock import mono_ms, now_ms
from .constants import GUARDIAN_LIMIT, LEASE_SKEW
from .identity import group_state, judge_local, same_host
from .jobview import JobView


def judge_once(owner: Dict[str, Any], renewed_ms: int, lease_ms: int) -> Tuple[str, str, str]:
    """(verdict, basis, reason) of an owner judged in one look, for people (fsjob status): a same-host owner by the
    process table (ID-6); a foreign one "alive" while its last renewal is within its lease and the grace, else
    "unknown": only a watch of it (LEASE-3) proves it dead, which Judge.owner keeps."""
    if same_host(owner["boot_id"], owner["pid_ns"]):
        verdict = judge_local(owner["pid"], owner["start"])
        reason = {"alive": "its process is alive (ID-6)", "dead": "its process is gone, or its pid now names another process (ID-6)"}
        return verdict, "process", reason.get(verdict, "its process cannot be judged (ID-6)")
    ago = now_ms() - renewed_ms
    if ago > lease_ms + GUARDIAN_LIMIT + LEASE_SKEW:
        return "unknown", "lease", f"on another host; last renewed {ago // 1000} s ago, beyond its lease and the grace: only a watch of it proves it dead (ID-7, LEASE-3)"
    return "alive", "lease", f"on another host; last renewed {max(0, ago) // 1000} s ago, within its lease (ID-7)"


class GroupVerdict:
    """ID-8: "stopped" (proven), "running" (proven the recorded group) or "unknown"; ``pgid``/``start`` when same-host."""

    def __init__(self, state: str, pgid: Optional[int] = None, start: Optional[str] = None, why: str = "") -> None:
        self.state = state
        self.pgid = pgid
        self.start = start
        self.why = why


class Judge:
    """One process's judgments; it keeps the watches of LEASE-3 and RETRY-4 across passes."""

    def __init__(self) -> None:
        # key -> (value last seen, mono when first seen with that value, changed while watched)
        self._watches: Dict[Tuple[str, str, int], Tuple[int, int, bool]] = {}
        #: The shortest watch left (ms) of a foreign claim that missed a renewal by the wall clock.
        self.watch_next: Optional[int] = None

    def _sight(self, key: Tuple[str, str, int], value: int) -> Tuple[int, bool]:
        """(ms watched unchanged, whether the value changed while watched), recording ``value``."""
        now = mono_ms()
        seen = self._watches.get(key)
        if seen is None:
            self._watches[key] = (value, now, False)
            return 0, False
        if seen[0] != value:
            self._watches[key] = (value, now, True)
            return 0, True
        return now - seen[1], seen[2]

    def owner(self, view: JobView, gen: int) -> str:
        """The owner of claim ``gen``: "alive", "dead", "unknown" (never treated as dead) or "watching" (a foreign claim under LEASE-3's watch)."""
        claim = view.claim(gen)
        if claim is None or not claim.ok:
            return "unknown"
        value = claim.value
        owner: Dict[str, Any] = value["owner"]
        if same_host(owner["boot_id"], owner["pid_ns"]):
            return judge_local(owner["pid"], owner["start"])
        renewed = int(value["claimed_ms"])
        lease = int(value["lease_ms"])
        if gen in view.listing.states:
            state = view.state(gen)
            if state is not None:
                if not state.ok:
                    # SEC-10: the renewal of an open foreign claim cannot be read: the owner is unknown.
                    return "unknown"
                renewed = max(renewed, int(state.value["heartbeat_ms"]))
        watched, changed = self._sight(("claim", view.job_id, gen), renewed)
        grace = lease + GUARDIAN_LIMIT + LEASE_SKEW
        if watched > grace:
            return "dead"
        if changed:
            return "alive"
        if now_ms() - renewed > lease // 3 + LEASE_SKEW:
            left = grace + 1 - watched
            if self.watch_next is None or left < self.watch_next:
                self.watch_next = left
            return "watching"
        return "alive"

    def group(self, view: JobView, gen: int) -> GroupVerdict:
        """ID-8 for the execution recorded by exec.<gen>.json."""
        record = view.exec_record(gen)
        if record is None or not record.ok:
            return GroupVerdict("unknown", why=f"exec.{gen}.json cannot be read: {record.reason if record else 'missing'}")
        group = record.value.get("group")
        if group is None:
            # PAYLOAD-1: a payload execution runs inside its owner: stopped exactly when the owner is dead.
            return GroupVerdict("stopped" if self.owner(view, gen) == "dead" else "running")
        if same_host(group["boot_id"], group["pid_ns"]):
            pgid, start = int(group["pgid"]), str(group["start"])
            return GroupVerdict(group_state(pgid, start), pgid, start)
        # Foreign: stopped once its owner's watch completed (the owner, LEASE-6, or its guardian, LEASE-5, stopped it).
        return GroupVerdict("stopped" if self.owner(view, gen) == "dead" else "running")

    def retry_due(self, view: JobView, gen: int, end: Dict[str, Any]) -> bool:
        """RETRY-4: the end record is due once now >= retry_at_ms, or once watched for retry_at_ms - ended_ms."""
        return self.retry_due_in(view, gen, end) == 0

    def retry_due_in(self, view: JobView, gen: int, end: Dict[str, Any]) -> int:
        """RETRY-4: milliseconds until the retry is due (0: due), the earlier of the wall clock and the monotonic watch.

        A wait for it (MANIFEST-4's CONSUME_RETRY_WAIT) is measured on this,
        so a wall clock that jumped back does not stretch it.
        """
        retry_at = int(end["retry_at_ms"])
        now = now_ms()
        if now >= retry_at:
            return 0
        watched, _ = self._sight(("retry", view.job_id, gen), retry_at)
        return max(0, min(retry_at - now, retry_at - int(end["ended_ms"]) - watched))
