"""CLAIM-6: what the owner of a fresh claim does, in the spec's order.

Steps 0 to 5 are every claimer's (CLAIM-10): a consumer, a one-shot
recoverer (RECOV-1) and a canceller (CANCEL-2) that claim the same job in the
same state publish the same receipt. Only what follows step 5 depends on the
purpose.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Callable, Dict, Optional

from .clock import mono_ms, now_ms
from .constants import GEN_MAX, OUTPUT_MAX, RECOVER_GRACE
from .errors import FsjobError
from .generation import Generation, Superseded
from .holds import Key
from .identity import stop_group
from .judge import Judge
from .jobview import JobView
from .safefs import read_bounded


class Plan:
    """A job to run (CLAIM-6 step 9): the generation, the spec and the attempt number."""

    def __init__(self, gen: Generation, view: JobView, spec: Dict[str, Any], attempts_used: int) -> None:
        self.gen = gen
        self.view = view
        self.spec = spec
        self.attempts_used = attempts_used

    @property
    def attempt(self) -> int:
        """The attempt number of the execution (RETRY-1: attempts used + 1)."""
        return self.attempts_used + 1


class Decision:
    """What the owner did: "receipt", "end", "run" (see ``plan``), "none" or "superseded"."""

    def __init__(self, kind: str, plan: Optional[Plan] = None, outcome: Optional[str] = None) -> None:
        self.kind = kind
        self.plan = plan
        self.outcome = outcome


def cwd_problem(cwd: str, root: str) -> Optional[str]:
    """EXEC-5: why ``cwd`` cannot be a command's working directory, or None. Inside the queue is judged lexically and after resolving links."""
    if not os.path.isabs(cwd):
        return "is not an absolute path"
    if not os.path.isdir(cwd):
        return "does not exist or is not a directory"

    def inside(path: str, base: str) -> bool:
        return path == base or path.startswith(base.rstrip("/") + "/")

    if inside(os.path.normpath(cwd), os.path.normpath(root)):
        return "lies inside the queue"
    if inside(os.path.realpath(cwd), os.path.realpath(root)):
        return "lies inside the queue (through a symbolic link)"
    return None


def dead_output(view: JobView, name: str, gen: int, bound: int) -> Optional[Dict[str, Any]]:
    """RCPT-8: the summary of a dead generation's output file (bytes_total null); null when it cannot be read (SEC-10)."""
    path = view.path(f"{name}.{gen}")
    try:
        read = read_bounded(path, OUTPUT_MAX, view.uid, allow_missing=True)
    except FsjobError:
        return None
    if read is None:
        return None
    data, st = read
    if st.st_nlink != 1:
        return None
    kept = len(data)
    return {"gen": gen, "bytes_total": None, "bytes_kept": kept, "truncated": bound > 0 and kept == bound, "sha256": hashlib.sha256(data).hexdigest()}


def orphan_stopped(view: JobView, gen: int, judge: Judge, log: Callable[[str], None]) -> bool:
    """RECOV-1 step 1: whether the execution of a dead owner's open claim ``gen`` is proven stopped, stopping a same-host group whose identity matches first (the caller reports UNPROVEN)."""
    if gen not in view.listing.execs:
        return True
    group = judge.group(view, gen)
    if group.state == "running" and group.pgid is not None and group.start is not None:
        log(f"{view.dir}: stopping the orphaned group {group.pgid} of generation {gen} (RECOV-1)")
        group.state = stop_group(group.pgid, group.start, RECOVER_GRACE)
    return group.state == "stopped"


def finish_at_gen_max(root: str, view: JobView, gen: int, judge: Judge, log: Callable[[str], None]) -> bool:
    """RECOV-4: the lost receipt (claim_limit) of a job whose claim GEN_MAX died open, published without a claim, once RECOV-1 step 1 proved its execution (which CLAIM-9 forbids) stopped."""
    if not orphan_stopped(view, gen, judge, log):
        return False
    # No claim of ours: the generation's instants start now, on both clocks (time_ms adds the monotonic time since).
    owner = Generation(root, view.job_id, gen, now_ms(), mono_ms(), 30000, None)
    spec = view.spec_value()
    try:
        return owner.publish_receipt("lost", 125, "claim_limit", f"the owner of generation {gen} (GEN_MAX) died before finishing the job (RECOV-4)",
                                     view.attempts(), priority=None if spec is None else int(spec["priority"]))
    except Superseded:
        return False


def decide(purpose: str, gen: Generation, view: JobView, judge: Judge, has_handler: Callable[[str], bool] = lambda name: False,
           log: Callable[[str], None] = lambda text: None) -> Decision:
    """CLAIM-6 for the owner of ``gen``; ``purpose`` is "consume", "recover" or "cancel" (CLAIM-10)."""
    try:
        return _decide(purpose, gen, view, judge, has_handler, log)
    except Superseded:
        log(f"{view.dir}: superseded; generation {gen.gen} publishes nothing more (CLAIM-7)")
        return Decision("superseded")


def _receipt(gen: Generation, spec: Optional[Dict[str, Any]], outcome: str, exit_code: int, reason: Optional[str], message: str, attempts: int, **extra: Any) -> Decision:
    gen.publish_receipt(outcome, exit_code, reason, message, attempts, priority=None if spec is None else int(spec["priority"]), **extra)
    return Decision("receipt", outcome=outcome)


def _decide(purpose: str, gen: Generation, view: JobView, judge: Judge, has_handler: Callable[[str], bool], log: Callable[[str], None]) -> Decision:
    view.refresh()
    listing = view.listing
    # 0: a superseded owner finished the job after the claimer listed it.
    if listing.receipt:
        return Decision("none")
    used = view.attempts()
    inspection = view.spec()
    # 1: the spec is invalid (REC-4, SEC-10).
    if not inspection.ok:
        reason = "unsupported_version" if inspection.unsupported_version else "invalid_spec"
        log(f"{view.dir}/spec.json: rejected: {inspection.reason}")
        return _receipt(gen, None, "rejected", 126, reason, inspection.reason, used)
    spec = inspection.value
    # 2: a cancel record entry exists (REC-9: its content is not needed).
    if listing.cancel_kind is not None:
        return _receipt(gen, spec, "cancelled", 130, None, "cancelled before it ran", used)
    if purpose == "cancel":
        return Decision("none")
    # 3: expired.
    deadline = spec["queue_deadline_ms"]
    if deadline is not None and not listing.execs and now_ms() > int(spec["created_ms"]) + int(deadline):
        return _receipt(gen, spec, "expired", 124, None, f"not started within queue_deadline_ms {deadline} of its creation", used)
    # 4: the last attempt died with its owner (RCPT-8 reports the dead generation).
    if used >= int(spec["max_attempts"]):
        last = max([h for h in listing.execs if h < gen.gen], default=0)
        started = None
        stdout = stderr = None
        if last > 0:
            record = view.exec_record(last)
            if record is not None and record.ok:
                started = record.value["recorded_ms"]
            bound = int(spec["max_output_bytes"])
            stdout = dead_output(view, "stdout", last, bound)
            stderr = dead_output(view, "stderr", last, bound)
        return _receipt(gen, spec, "lost", 125, "owner_lost", f"attempt {used} of {spec['max_attempts']} died with its owner; no attempt remains",
                        used, started_ms=started, stdout=stdout, stderr=stderr)
    # 5: generation GEN_MAX never runs the job (CLAIM-9).
    if gen.gen >= GEN_MAX:
        return _receipt(gen, spec, "lost", 125, "claim_limit", f"generation {gen.gen} is GEN_MAX: no generation may run the job (CLAIM-9)", used)
    if purpose == "recover":
        gen.publish_end("released", False, now_ms(), None)
        return Decision("end")
    # 6: policy (none here) and handlers.
    if "argv" in spec:
        problem = cwd_problem(spec["cwd"], gen.root)
        if problem is not None:
            return _receipt(gen, spec, "rejected", 126, "cwd_unusable", f"cwd {spec['cwd']} {problem} (EXEC-5)", used)
        # 7: stdin (EXEC-7, SEC-10).
        problem = view.stdin_problem(spec)
        if problem is not None:
            return _receipt(gen, spec, "rejected", 126, "stdin_unusable", f"{problem} (EXEC-7)", used)
    elif not has_handler(spec["handler"]):
        return _receipt(gen, spec, "rejected", 126, "no_handler", f"no handler {spec['handler']!r} where it was claimed (PAYLOAD-1)", used)
    # 8: the lane (LANE-2, after claiming), in the first of its slots 1 to lane_slots that can be taken (LANE-5).
    if spec["lane"] is not None:
        for slot in range(1, int(spec.get("lane_slots", 1)) + 1):
            gen.guard()
            verdict = Key(gen.root, view.uid, "lane", spec["lane"], slot).take(view.job_id, gen.gen, judge)
            if not verdict.held:
                break
        if verdict.held:
            gen.publish_end("lane_busy", False, now_ms(), None)
            return Decision("end")
    # 9: run.
    return Decision("run", Plan(gen, view, spec, used))


def give_back(gen: Generation, view: JobView) -> None:
    """Hand an undecided generation back (an end record, reason released, counted false): nothing ran."""
    view.refresh()
    if view.listing.receipt or gen.gen in view.listing.ends:
        return
    try:
        gen.publish_end("released", False, now_ms() + 1000, None)
    except (FsjobError, OSError):
        pass

