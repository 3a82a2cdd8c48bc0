"""Dedupe holds (spec/producer.md) and lane holds (spec/lanes.md).

A key's holds are numbered files ``dedupe/<h>/<n>.json`` or
``lanes/<h>/<n>.json``; only the highest one matters, and a new one is
published by link, so two takers can never both get number n + 1.
"""

from __future__ import annotations

import os
import stat as _stat
from typing import List, NamedTuple, Optional

from .clock import now_ms
from .constants import DEDUPE_STAGE_MAX, DEDUPE_TRIES, LEASE_SKEW, PROTOCOL_VERSION
from .errors import FsjobError
from .identity import judge_local, same_host, self_identity
from .judge import Judge
from .jobview import JobView
from .names import RecordName, key_hash, parse_hold_number
from .records import encode_record, read_record
from .safefs import fsync_dir, list_dir, lstat_or_none, make_dir, publish_link, remove_file


class HoldVerdict(NamedTuple):
    """Whether the highest hold of a key is held, and by which job (when readable)."""

    held: bool
    job_id: Optional[str] = None
    gen: Optional[int] = None
    why: str = ""


class Key:
    """One dedupe or lane key of a queue."""

    def __init__(self, root: str, uid: int, kind: str, key: str, slot: int = 1) -> None:
        self.root = root
        self.uid = uid
        self.kind = kind
        self.key = key
        #: LANE-6: slot k of a lane is the SHA-256 of the key, a line feed and k; slot 1 the key's own.
        self.slot = slot if kind == "lane" else 1
        self.hash = key_hash(key if self.slot == 1 else f"{key}\n{self.slot}")
        self.top_dir = os.path.join(root, "dedupe" if kind == "dedupe" else "lanes")
        self.dir = os.path.join(self.top_dir, self.hash)

    def numbers(self) -> List[int]:
        """The hold numbers present, ascending (names that are not hold numbers are unknown and skipped)."""
        out: List[int] = []
        for name in list_dir(self.dir):
            if name.endswith(".json"):
                number = parse_hold_number(name[:-5])
                if number is not None:
                    out.append(number)
        out.sort()
        return out

    def dir_usable(self) -> Optional[str]:
        """Why the key's directory cannot be used (a symlink, not a directory...), None when it is usable or absent."""
        st = lstat_or_none(self.dir)
        if st is None:
            return None
        if _stat.S_ISLNK(st.st_mode) or not _stat.S_ISDIR(st.st_mode) or st.st_uid != self.uid or st.st_mode & 0o022:
            return f"{self.dir} is not a trusted directory (SEC-2, SEC-5, SEC-6)"
        return None

    def judge(self, number: int, judge: Judge) -> HoldVerdict:
        """DEDUPE-3 or LANE-2: whether hold ``number`` is held. An invalid hold counts as held (SEC-10)."""
        record = read_record(os.path.join(self.dir, f"{number}.json"), "hold", RecordName("hold", kind=self.kind, key_hash=self.hash), self.uid, allow_missing=True)
        if record is None:
            return HoldVerdict(False)
        if not record.ok:
            return HoldVerdict(True, why=f"invalid hold counted as held (SEC-10): {record.reason}")
        value = record.value
        job_id: str = value["job_id"]
        gen = value.get("gen")
        view = JobView(self.root, job_id, self.uid).refresh()
        if self.kind == "dedupe":
            if view.exists:
                return HoldVerdict(not view.listing.receipt, job_id)
            if lstat_or_none(os.path.join(self.root, "jobs", job_id + ".gated")) is not None:
                return HoldVerdict(True, job_id)  # a gated job is published and unfinished (GATE-1, GATE-2)
            staged = os.path.join(self.root, "tmp", job_id)
            st = lstat_or_none(staged)
            if st is not None and _stat.S_ISDIR(st.st_mode):
                owner = value["owner"]
                expired = now_ms() > int(value["created_ms"]) + DEDUPE_STAGE_MAX + LEASE_SKEW
                if not expired and not (same_host(owner["boot_id"], owner["pid_ns"]) and judge_local(owner["pid"], owner["start"]) == "dead"):
                    return HoldVerdict(True, job_id)
            # Every "not held" comes after a last look at jobs/ (DEDUPE-3): the
            # producer's rename (ENQ step 7) may have fallen between the looks,
            # and the producer may have exited since, so its pid is dead.
            view.refresh()
            if view.exists:
                return HoldVerdict(not view.listing.receipt, job_id)
            if lstat_or_none(os.path.join(self.root, "jobs", job_id + ".gated")) is not None:
                return HoldVerdict(True, job_id)
            return HoldVerdict(False, job_id)
        if gen is None or not view.exists or view.listing.receipt:
            return HoldVerdict(False, job_id, gen)
        if view.listing.top == gen and view.listing.open:
            if judge.owner(view, gen) != "dead":
                return HoldVerdict(True, job_id, gen)
        if gen in view.listing.execs:
            if judge.group(view, gen).state != "stopped":
                return HoldVerdict(True, job_id, gen)
        return HoldVerdict(False, job_id, gen)

    def held_by_other(self, job_id: str, judge: Judge) -> Optional[HoldVerdict]:
        """LANE-4: the verdict of the highest hold when it is held by another job (or is unreadable), else None. Creates nothing."""
        if self.dir_usable() is not None:
            return HoldVerdict(True, why=self.dir_usable() or "")
        numbers = self.numbers()
        if not numbers:
            return None
        verdict = self.judge(numbers[-1], judge)
        if verdict.held and verdict.job_id != job_id:
            return verdict
        return None

    def take(self, job_id: str, gen: Optional[int], judge: Judge) -> HoldVerdict:
        """DEDUPE-2 or LANE-2: publish hold n + 1 for this job unless hold n is held.

        Returns held False when this job now holds the key; held True (with
        the holder) when another job holds it.
        """
        if make_dir(self.dir, self.uid):
            # A hold in a new key directory is durable only with that directory's entry (PUB-5).
            fsync_dir(self.top_dir)
        for _ in range(DEDUPE_TRIES):
            numbers = self.numbers()
            top = numbers[-1] if numbers else 0
            if top > 0:
                verdict = self.judge(top, judge)
                if verdict.held:
                    if self.kind == "lane" and verdict.job_id == job_id and verdict.gen == gen:
                        return HoldVerdict(False, job_id, gen)
                    return verdict
            value = {
                "fsjob": PROTOCOL_VERSION, "type": "hold", "kind": self.kind, "key": self.key, "job_id": job_id,
                "gen": gen, "owner": self_identity(), "created_ms": now_ms(),
            }
            if self.slot > 1:
                value["slot"] = self.slot  # LANE-6
            data = encode_record("hold", value, RecordName("hold", kind=self.kind, key_hash=self.hash))
            if publish_link(self.dir, f"{top + 1}.json", data):
                # LANE-2, DEDUPE-2 (1.1): one more listing. A higher hold means
                # others took this number and the next while we were between
                # our look and our link, and removed it below the newer hold:
                # the link re-created it and takes nothing.
                if any(number > top + 1 for number in self.numbers()):
                    continue
                # Holds below the highest never matter again (LANE-3, DEDUPE-4, GC-2).
                for number in numbers:
                    path = os.path.join(self.dir, f"{number}.json")
                    st = lstat_or_none(path)
                    if st is not None and _stat.S_ISREG(st.st_mode):
                        remove_file(path)
                return HoldVerdict(False, job_id, gen)
        if self.kind == "lane":
            # LANE-2: after DEDUPE_TRIES lost links the lane counts as busy (a lane_busy end record, CLAIM-6 step 8).
            return HoldVerdict(True, why=f"{DEDUPE_TRIES} links lost in a row (LANE-2)")
        raise FsjobError("DEDUPE_HELD", f"could not take the {self.kind} key {self.key!r} after {DEDUPE_TRIES} tries", path=self.dir, clause="DEDUPE-2")

