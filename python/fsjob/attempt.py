"""One attempt, from the run decision (CLAIM-6 step 9) to its end record or
receipt: a command (command.py) or a payload handler in this process
(PAYLOAD-1), then RETRY-3, EXEC-10, EXEC-14 and RCPT-8."""

from __future__ import annotations

import os
import signal as _signal
import threading
import time
from typing import Any, Callable, Dict, Optional

from .clock import mono_ms, now_ms
from .command import CommandRun, Controls, Outcome
from .constants import CONTROL_POLL, OUTCOME_EXIT, renew_interval
from .decide import Plan
from .errors import FsjobError
from .generation import Generation, Superseded
from .guardian import Guardian
from .safefs import exists


class PayloadJob:
    """What a payload handler receives (PAYLOAD-1): its input and the means to stop early.

    A handler must return promptly once :attr:`abort` is set (a cancel, a
    timeout, a shutdown or a lost claim); what it returns is the receipt's
    ``result`` (any JSON value of at most 262144 bytes serialized).
    """

    def __init__(self, job_id: str, attempt: int, spec: Dict[str, Any], gen: Generation) -> None:
        self.job_id = job_id
        self.attempt = attempt
        self.spec = spec
        self.payload: Any = spec.get("payload")
        self.handler: str = spec["handler"]
        self.abort = threading.Event()
        self._gen = gen
        self._progress: Optional[str] = None

    @property
    def aborted(self) -> bool:
        """Whether the handler has been asked to stop."""
        return self.abort.is_set()

    def progress(self, text: str) -> None:
        """Report progress (state.<g>.json ``progress``, at most 1024 bytes), written with the next renewal."""
        self._progress = text.encode("utf-8")[:1024].decode("utf-8", "ignore")


Handler = Callable[[PayloadJob], Any]


def run_payload(plan: Plan, handler: Handler, controls: Controls) -> Outcome:
    """Run a payload job in this process: exec.<g>.json with group null, then the handler in a thread the owner watches."""
    gen, spec = plan.gen, plan.spec
    try:
        gen.publish_exec(plan.attempt, None, gen.time_ms())
    except Superseded:
        return Outcome(False, "superseded")
    except FsjobError as error:
        return Outcome(False, "start_failed", message=error.message, error=error)
    started = gen.time_ms()
    job = PayloadJob(gen.job_id, plan.attempt, spec, gen)
    box: Dict[str, Any] = {}

    def body() -> None:
        try:
            box["result"] = handler(job)
        except BaseException as error:  # the handler's failure is the attempt's outcome
            import traceback

            box["error"] = "".join(traceback.format_exception_only(type(error), error)).strip()

    thread = threading.Thread(target=body, name=f"fsjob-payload-{gen.job_id}", daemon=True)
    thread.start()
    stopped_by: Optional[str] = None
    deadline = mono_ms() + int(spec["timeout_ms"])
    while thread.is_alive():
        thread.join(CONTROL_POLL / 1000)
        if not thread.is_alive():
            break
        cause = _payload_cause(gen, spec, controls, deadline)
        if cause is not None and (stopped_by is None or cause in ("force", "superseded", "fenced")):
            stopped_by = cause
            job.abort.set()
        if stopped_by in ("superseded", "fenced"):
            continue
        if mono_ms() - gen.renewed_mono >= gen.lease_ms:
            stopped_by = "fenced"
            job.abort.set()
        elif mono_ms() - gen.renewed_mono >= renew_interval(gen.lease_ms):
            try:
                gen.heartbeat("running" if stopped_by is None else "stopping", plan.attempt, progress=job._progress)
            except Superseded:
                stopped_by = "superseded"
                job.abort.set()
            except FsjobError as error:
                controls.log(f"{gen.dir}: cannot renew the lease: {error.message}")
    if "error" in box:
        return Outcome(True, stopped_by, 1, None, started, message=str(box["error"])[:900])
    return Outcome(True, stopped_by, 0, None, started, result=box.get("result"))


def _payload_cause(gen: Generation, spec: Dict[str, Any], controls: Controls, deadline: int) -> Optional[str]:
    if gen.superseded():
        return "superseded"
    if exists(os.path.join(gen.dir, "cancel-force.json")):
        return "force"
    if exists(os.path.join(gen.dir, "cancel.json")):
        return "cancel"
    now = mono_ms()
    if now >= deadline:
        return "timeout"
    shutdown = controls.shutdown_at()
    if shutdown is not None and now >= shutdown:
        return "shutdown"
    return None


def run_plan(plan: Plan, guardian: Optional[Guardian], controls: Controls, handlers: Dict[str, Handler], output_limit: int) -> str:
    """Run the attempt the plan names and publish its end record or receipt; returns the outcome's name."""
    if "argv" in plan.spec:
        if guardian is None:
            outcome = Outcome(False, "start_failed", message="this consumer runs no command jobs")
        else:
            outcome = CommandRun(plan.gen, plan.spec, plan.attempt, plan.view.uid, guardian, controls, output_limit).run()
    else:
        outcome = run_payload(plan, handlers[plan.spec["handler"]], controls)
    controls.started(outcome)
    return finish(plan, outcome, controls.log)


def _retrying(gen: Generation, step: Callable[[], Any], log: Callable[[str], None]) -> Any:
    """RCPT-7: a publication that failed for another reason than an existing target is tried again for up to lease_ms, CLAIM-7 checked each time."""
    give_up = mono_ms() + gen.lease_ms
    pause = 0.2
    while True:
        try:
            return step()
        except Superseded:
            raise
        except FsjobError as error:
            # A job directory that is gone (its queue moved away, WORKER-4) can never take the record: no retry.
            if error.code in ("EXISTS", "INVALID_RECORD", "TOO_LARGE") or not os.path.lexists(gen.dir) or mono_ms() + pause * 1000 >= give_up:
                raise
            log(f"{gen.dir}: cannot publish yet ({error.message}); trying again (RCPT-7)")
            time.sleep(pause)
            pause = min(pause * 2, 2.0)


def _exit_of(outcome: Outcome) -> int:
    if outcome.signal is not None:
        try:
            code = 128 + int(_signal.Signals[outcome.signal])
        except KeyError:
            code = 1
    else:
        code = outcome.exit if outcome.exit is not None else 1
    return code if 1 <= code <= 255 else 1


def finish(plan: Plan, outcome: Outcome, log: Callable[[str], None]) -> str:
    """Publish what the attempt's outcome calls for (RETRY-3, EXEC-10, EXEC-14, LEASE-6, WORKER-3, RCPT-8)."""
    gen, spec = plan.gen, plan.spec
    if not outcome.group_stopped:
        log(f"{gen.dir}: UNPROVEN: the group of generation {gen.gen} could not be proven stopped; the claim stays open (RECOV-1)")
        return "unproven"
    by = outcome.stopped_by
    if by == "superseded":
        return "superseded"
    used = plan.attempts_used + (1 if outcome.released else 0)
    remain = used < int(spec["max_attempts"])
    status = None if outcome.exit is None and outcome.signal is None else {"exit": outcome.exit, "signal": outcome.signal}
    priority = int(spec["priority"])
    own: Dict[str, Any] = {"status": status, "started_ms": outcome.started_ms, "stdout": outcome.stdout, "stderr": outcome.stderr}

    def end(reason: str, counted: bool, retry_at: int) -> str:
        _retrying(gen, lambda: gen.publish_end(reason, counted, retry_at, status if reason != "released" else None), log)
        return reason

    def receipt(outcome_name: str, code: int, reason: Optional[str], message: Optional[str], result: Any = None) -> str:
        try:
            _retrying(gen, lambda: gen.publish_receipt(outcome_name, code, reason, message, used, result=result, priority=priority, **own), log)
        except FsjobError as error:
            if error.code not in ("INVALID_RECORD", "TOO_LARGE") or result is None:
                raise
            # The handler's result cannot be recorded (not JSON, or over 262144 bytes): the attempt failed.
            _retrying(gen, lambda: gen.publish_receipt("failed", 1, None, f"the handler's result cannot be recorded: {error.message}", used, priority=priority, **own), log)
            return "failed"
        return outcome_name

    try:
        if not outcome.released:
            log(f"{gen.dir}: generation {gen.gen} did not start: {outcome.message}")
            return end("released", False, now_ms() + 1000)
        if by == "fenced":
            if remain:
                return end("failed", True, now_ms() + int(spec["retry_delay_ms"]))
            return receipt("lost", OUTCOME_EXIT["lost"], "owner_lost", "the attempt was stopped because its lease lapsed (LEASE-6)")
        if by == "preempt":
            return end("preempted", False, now_ms())
        if by == "force":
            return receipt("force_stopped", OUTCOME_EXIT["force_stopped"], None, outcome.message)
        if by == "cancel":
            return receipt("cancelled", OUTCOME_EXIT["cancelled"], None, outcome.message)
        if by == "shutdown":
            if remain:
                return end("shutdown", True, now_ms())
            return receipt("lost", OUTCOME_EXIT["lost"], "shutdown", "the consumer stopped the last attempt while shutting down")
        name = "timed_out" if by == "timeout" else "succeeded" if outcome.exit == 0 and outcome.signal is None else "failed"
        if name == "succeeded":
            return receipt("succeeded", 0, None, outcome.message, outcome.result)
        if remain:
            return end(name, True, now_ms() + int(spec["retry_delay_ms"]))
        if name == "timed_out":
            return receipt("timed_out", OUTCOME_EXIT["timed_out"], None, outcome.message or f"timed out after {spec['timeout_ms']} ms")
        return receipt("failed", _exit_of(outcome), None, outcome.message)
    except Superseded:
        log(f"{gen.dir}: superseded; generation {gen.gen} publishes nothing more (CLAIM-7)")
        return "superseded"

