"""Choosing and claiming (spec/claim.md, and the loop of spec/roles/consumer.md): one pass
over the ready index in its order (CLAIM-1: priority, then FIFO), which
claims the first job this consumer can make progress on."""

from __future__ import annotations

import os
from typing import Callable, Dict, Optional, Set

from . import gates, ready
from .clock import now_ms
from .constants import GEN_MAX, LEASE_DEFAULT
from .decide import Decision, decide, finish_at_gen_max, give_back, orphan_stopped
from .errors import FsjobError
from .generation import Generation
from .holds import Key
from .judge import Judge
from .jobview import JobView
from .safefs import exists, lstat_or_none


class Pass:
    """What one pass did: ``decision`` when it claimed a job; ``progress`` when it changed anything."""

    def __init__(self) -> None:
        self.decision: Optional[Decision] = None
        self.progress = False
        #: The earliest retry_at_ms of a retrying job this consumer could run (MANIFEST-4 waits for it).
        self.next_retry: Optional[int] = None
        #: The earliest not_before_ms of a delayed job this consumer could run (DELAY-1).
        self.next_start: Optional[int] = None
        #: The queue is paused (PAUSE-1): nothing was looked at, nothing claimed.
        self.paused = False
        #: Jobs left alone this pass (damaged, UNPROVEN): reported, skipped until they change.
        self.left: Dict[str, str] = {}


def waiting_non_preemptible(root: str, uid: int, lane: str, own_id: str, judge: Judge) -> bool:
    """PREEMPT-1, PREEMPT-2: whether a non-preemptible job of ``lane`` is waiting (queued, not retrying, not cancelled)."""
    for _, job_id in ready.entries(root):
        if job_id == own_id:
            continue
        view = JobView(root, job_id, uid).refresh()
        listing = view.listing
        if not view.exists or listing.receipt or listing.open or listing.cancel_kind is not None:
            continue
        spec = view.spec_value()
        if spec is None or spec["lane"] != lane or spec["preemptible"]:
            continue
        g = listing.top
        if g > 0:
            end = view.end(g)
            if end is None or not end.ok or not judge.retry_due(view, g, end.value):
                continue
        return True
    return False


class Chooser:
    """The consumer's side of spec/claim.md for one queue."""

    def __init__(self, root: str, uid: int, judge: Judge, can_run: Callable[[Dict[str, object]], bool], lanes: Callable[[], bool],
                 has_handler: Callable[[str], bool], worker_id: Optional[str], lease_ms: int = LEASE_DEFAULT,
                 log: Callable[[str], None] = lambda text: None) -> None:
        self.root = root
        self.uid = uid
        self.judge = judge
        self.can_run = can_run
        self.lanes = lanes
        self.has_handler = has_handler
        self.worker_id = worker_id
        self.lease_ms = lease_ms
        self.log = log

    def one_pass(self, busy: Set[str], skip: Set[str]) -> Pass:
        """Consider the ready entries in order; claim and decide the first job this consumer can make progress on."""
        result = Pass()
        self.judge.watch_next = None
        if lstat_or_none(os.path.join(self.root, "pause.json")) is not None:
            # PAUSE-1: while an entry of any kind has that name nothing is claimed; one lstat per pass.
            result.paused = True
            return result
        for _, job_id in ready.entries(self.root):
            if job_id in busy or job_id in skip:
                continue  # CLAIM-8: never claim a job whose current claim this consumer owns
            outcome = self._consider(job_id, result)
            if outcome is not None:
                result.decision = outcome
                result.progress = True
                return result
            if result.progress:
                return result
        return result

    def _consider(self, job_id: str, result: Pass) -> Optional[Decision]:
        view = JobView(self.root, job_id, self.uid).refresh()
        if not view.exists and view.dir_problem == "missing" and gates.look(self.root, self.uid, job_id, self.log) == "opened":
            # GATE-2, GATE-3, AFTER-4: a gated job, looked at and opened: it is decided as any job now.
            view.refresh()
            result.progress = True
        if not view.exists:
            if view.dir_problem != "missing":
                result.left[job_id] = f"{view.dir}: {view.dir_problem}; the job is left alone (SEC-10)"
            return None
        listing = view.listing
        if listing.receipt:
            ready.remove(self.root, job_id)  # READY-3
            return None
        g = listing.top
        orphan = False
        if listing.open:
            verdict = self.judge.owner(view, g)
            if verdict != "dead":
                return None  # CLAIM-3: a live, unknown or watched owner means skip
            orphan = True
        if g >= GEN_MAX:
            # CLAIM-4; RECOV-4 for a dead owner of claim GEN_MAX.
            if orphan and finish_at_gen_max(self.root, view, g, self.judge, self.log):
                result.progress = True
            else:
                result.left[job_id] = f"{view.dir}: generation {GEN_MAX} reached; not claimed (CLAIM-4, RECOV-4: an owner alive or unknown, or an execution not proven stopped)"
            return None
        inspection = view.spec()
        spec = inspection.value if inspection.ok else None
        if spec is not None and not self.can_run(spec):
            return None  # CLAIM-11
        if not orphan:
            end = view.end(g) if g > 0 else None
            if g > 0 and (end is None or not end.ok):
                result.left[job_id] = f"{view.dir}/end.{g}.json: {end.reason if end else 'unreadable'}; the job is damaged and left alone (SEC-10)"
                return None
            # STATUS-1 step 3: cancelling and expired come before delayed and retrying.
            if listing.cancel_kind is None and not self._expired(spec, view):
                not_before = None if spec is None else spec.get("not_before_ms")
                if isinstance(not_before, int) and now_ms() < not_before:
                    # DELAY-1: not claimable before not_before_ms, by this consumer's clock.
                    if result.next_start is None or not_before < result.next_start:
                        result.next_start = not_before
                    return None
                due_in = 0 if end is None else self.judge.retry_due_in(view, g, end.value)
                if end is not None and due_in > 0:
                    # RETRY-4: when it is due on this consumer's clock, also after a jump back.
                    retry_at = now_ms() + due_in
                    if result.next_retry is None or retry_at < result.next_retry:
                        result.next_retry = retry_at
                    return None
        if not orphan and spec is not None and spec["lane"] is not None and listing.cancel_kind is None and not self._expired(spec, view):
            if not self.lanes():
                return None  # LAYOUT-10: lanes/ is unusable: jobs with a lane are not claimed
            # LANE-4: every slot the job may use held means skip the job (LANE-5); PREEMPT-2.
            slots = range(1, int(spec.get("lane_slots", 1)) + 1)
            if all(Key(self.root, self.uid, "lane", spec["lane"], slot).held_by_other(job_id, self.judge) is not None for slot in slots):
                return None
            if spec["preemptible"] and waiting_non_preemptible(self.root, self.uid, spec["lane"], job_id, self.judge):
                return None
        if orphan and not orphan_stopped(view, g, self.judge, self.log):
            # RECOV-1 step 1: the dead owner's execution must be proven stopped.
            result.left[job_id] = f"{view.dir}: UNPROVEN: the execution of generation {g} may still run; left alone (RECOV-1)"
            return None
        if exists(view.path(f"claim.{g + 1}.json")):
            result.progress = True  # someone else claimed it meanwhile: look again from the top
            return None
        gen = Generation.claim(self.root, job_id, g + 1, self.worker_id, self.lease_ms)
        if gen is None:
            result.progress = True  # CLAIM-5: another process won
            return None
        try:
            return decide("consume", gen, view, self.judge, self.has_handler, self.log)
        except (FsjobError, OSError):
            give_back(gen, view)
            raise

    @staticmethod
    def _expired(spec: Optional[Dict[str, object]], view: JobView) -> bool:
        if spec is None or spec.get("queue_deadline_ms") is None or view.listing.execs:
            return False
        created, deadline = spec["created_ms"], spec["queue_deadline_ms"]
        assert isinstance(created, int) and isinstance(deadline, int)
        return now_ms() > created + deadline
