"""The consumer: :func:`work` runs command jobs and payload jobs of a queue
(every consumer clause, spec/roles/consumer.md), with a guardian (WORKER-2, LEASE-5), up to
``concurrency`` attempts at once (each supervised by its own thread), a
registration in ``workers/`` (WORKER-1) and the shutdown of WORKER-3."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Set

from . import ready
from .attempt import Handler, run_plan
from .clock import mono_ms, now_ms
from .command import Controls, Outcome
from .constants import CANCEL_GRACE, CONSUME_RETRY_WAIT, LEASE_DEFAULT, OUTPUT_MAX, PROTOCOL_VERSION, renew_interval
from .decide import Plan
from .descriptors import short_of_descriptors, shortage, worker_room
from .errors import FsjobError
from .guardian import Guardian
from .identity import self_identity
from .judge import Judge
from .names import RecordName, random_hex16
from .queue import Queue
from .records import encode_record
from .safefs import probe_filesystem, publish_rename, remove_file
from .select import Chooser, waiting_non_preemptible


#: Attempts in a row that could not start (EXEC-3) after which a worker stops claiming, as fsjob-sh does:
#: each was given back, and a worker that cannot start commands would otherwise claim each job again and
#: again, once a second, until CLAIM-9 ends it as lost.
START_FAILURES_MAX = 3


def _stderr_log(text: str) -> None:
    sys.stderr.write(f"fsjob-py: {text}\n")
    sys.stderr.flush()


class Worker:
    """One consumer of one queue; see :func:`work`."""

    def __init__(self, queue: Queue, handlers: Optional[Dict[str, Handler]] = None, concurrency: int = 1, *, drain: bool = False,
                 commands: bool = True, register: bool = True, lease_ms: int = LEASE_DEFAULT, shutdown_grace_ms: int = CANCEL_GRACE,
                 output_limit: int = OUTPUT_MAX, log: Callable[[str], None] = _stderr_log) -> None:
        if not 1 <= concurrency <= 1024:
            raise FsjobError("USAGE", f"concurrency is 1 to 1024, not {concurrency}")
        self.queue = queue
        self.handlers: Dict[str, Handler] = dict(handlers or {})
        self.concurrency = concurrency
        self.drain = drain
        self.commands = commands
        self.register = register
        self.lease_ms = lease_ms
        self.shutdown_grace_ms = shutdown_grace_ms
        self.output_limit = output_limit
        self.log = log
        self.worker_id = random_hex16() if register else None
        self.judge = Judge()
        self.guardian: Optional[Guardian] = None
        self._running: Dict[str, threading.Thread] = {}
        self._gens: Dict[str, int] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping_at: Optional[int] = None
        self._started_ms = now_ms()
        self._registered = False
        self.failed = False
        self._start_failures = 0
        #: The root no longer holds the queue this worker opened (WORKER-4): nothing more is written or removed there.
        self.lost = False

    # --- what this consumer can run (CLAIM-11) -------------------------------

    def can_run(self, spec: Dict[str, Any]) -> bool:
        """A command job if it runs commands; a payload job if it has the handler."""
        if "argv" in spec:
            return self.commands
        return spec.get("handler") in self.handlers

    def _has_handler(self, name: str) -> bool:
        return name in self.handlers

    # --- shutdown (WORKER-3) -------------------------------------------------

    def request_stop(self, *_: Any) -> None:
        """Stop claiming; running attempts get the shutdown grace to end on their own, then are stopped."""
        if self._stopping_at is None:
            self._stopping_at = mono_ms()
            with self._lock:
                count = len(self._running)
            self.log(f"draining: {count} attempt(s) running; they are stopped after {self.shutdown_grace_ms} ms (WORKER-3)")
        self._wake.set()

    def _shutdown_at(self) -> Optional[int]:
        return None if self._stopping_at is None else self._stopping_at + self.shutdown_grace_ms

    # --- registration (WORKER-1) ---------------------------------------------

    def _publish_registration(self, mode: str) -> None:
        if self.worker_id is None or not self.queue.usable("workers"):
            if self.worker_id is not None and not self._registered:
                self.log("workers/ is unusable: running without a registration (WORKER-5, LAYOUT-10)")
                self.worker_id = None
            return
        with self._lock:
            jobs = [{"job_id": job_id, "gen": gen} for job_id, gen in self._gens.items()]
        value = {
            "fsjob": PROTOCOL_VERSION, "type": "worker", "worker_id": self.worker_id, "owner": self_identity(), "started_ms": self._started_ms,
            "heartbeat_ms": now_ms(), "lease_ms": self.lease_ms, "concurrency": self.concurrency, "mode": mode,
            "jobs": jobs[:1024], "handlers": sorted(self.handlers)[:256],
        }
        try:
            publish_rename(self.queue.path("workers"), f"{self.worker_id}.json", encode_record("worker", value, RecordName("worker", worker_id=self.worker_id)))
            self._registered = True
        except FsjobError as error:
            self.log(f"cannot renew the registration: {error.message}")

    def _unregister(self) -> None:
        if self.worker_id is not None and self._registered and not self.lost:
            try:
                remove_file(self.queue.path("workers", f"{self.worker_id}.json"))
            except FsjobError:
                pass

    # --- running attempts ----------------------------------------------------

    def _controls(self, plan: Plan) -> Controls:
        spec = plan.spec

        def waiter() -> bool:
            return waiting_non_preemptible(self.queue.root, self.queue.uid, spec["lane"], plan.gen.job_id, Judge())

        return Controls(self._shutdown_at, waiter, self.log, self._started)

    def _started(self, outcome: Outcome) -> None:
        """EXEC-3: an attempt that could not start is given back (attempt.finish); too few descriptors, or
        START_FAILURES_MAX such attempts in a row, stop the worker: running attempts finish, nothing more is claimed."""
        if outcome.released or outcome.stopped_by != "start_failed":
            with self._lock:
                self._start_failures = 0
            return
        with self._lock:
            self._start_failures += 1
            count = self._start_failures
        if outcome.error is not None and short_of_descriptors(outcome.error):
            why = f"an attempt could not start: {shortage(outcome.error)}"
        elif count >= START_FAILURES_MAX:
            why = f"{count} attempts in a row could not start, the last: {outcome.message}"
        else:
            return
        self._stop_failed(why)

    def _stop_failed(self, why: str) -> None:
        if self._stopping_at is None:
            self.log(f"stopping; the jobs stay queued: {why}")
        self.failed = True
        self.request_stop()

    def _start(self, plan: Plan) -> None:
        job_id = plan.gen.job_id

        def body() -> None:
            try:
                outcome = run_plan(plan, self.guardian, self._controls(plan), self.handlers, self.output_limit)
                self.log(f"{job_id}: generation {plan.gen.gen}: {outcome}")
            except BaseException as error:  # an attempt's failure must not stop the others
                self.log(f"{job_id}: generation {plan.gen.gen} failed to finish: {error}")
                self.failed = self.failed or isinstance(error, (FsjobError, OSError))
                if short_of_descriptors(error):
                    # RCPT-7 gave up: the claim stays open, and RECOV-1 ends the generation once this owner is gone.
                    self._stop_failed(f"{job_id} could not be finished: {shortage(error)}")
            finally:
                with self._lock:
                    self._running.pop(job_id, None)
                    self._gens.pop(job_id, None)
                self._wake.set()

        thread = threading.Thread(target=body, name=f"fsjob-attempt-{job_id}", daemon=True)
        with self._lock:
            self._running[job_id] = thread
            self._gens[job_id] = plan.gen.gen
        thread.start()

    # --- the loop -------------------------------------------------------------

    def run(self) -> int:
        """Serve the queue until stopped (or, with ``drain``, until nothing remains to make progress on). Returns the exit status."""
        queue = self.queue
        queue.require_layout()
        if self.commands:
            self.guardian = Guardian()
            try:
                self.guardian.start()
            except OSError as error:
                raise FsjobError("IO", f"cannot start the guardian: {error} (WORKER-2)", clause="WORKER-2") from error
        ready.rebuild(queue.root, queue.uid)  # READY-4
        chooser = Chooser(queue.root, queue.uid, self.judge, self.can_run, lambda: queue.usable("lanes"), self._has_handler,
                          self.worker_id, self.lease_ms, self.log)
        self._publish_registration("serving")
        next_renewal = mono_ms() + renew_interval(self.lease_ms)
        next_check = mono_ms() + 5000
        reported: Set[str] = set()
        skip: Dict[str, int] = {}
        paused = False
        short = False
        try:
            while True:
                now = mono_ms()
                # WORKER-4 first, and at each renewal too: a root that now holds another queue gets nothing of this worker.
                if (now >= next_check or now >= next_renewal) and not self.lost and not queue.still_here():
                    self.log(f"{queue.root} no longer holds this queue: stopping (WORKER-4)")
                    self.failed = True
                    self.lost = True
                    self.request_stop()
                    self._stopping_at = 0  # stop running attempts at once
                if now >= next_check:
                    next_check = now + 5000
                if now >= next_renewal and not self.lost:
                    self._publish_registration("serving" if self._stopping_at is None else "stopping")
                    next_renewal = now + renew_interval(self.lease_ms)
                with self._lock:
                    busy = set(self._running)
                if self._stopping_at is not None:
                    if not busy:
                        break
                    self._wake.wait(0.2)
                    self._wake.clear()
                    continue
                if self.guardian is not None and not self.guardian.alive():
                    self.log("the guardian is gone: no command starts without one (WORKER-2)")
                    self.failed = True
                    self.request_stop()
                    continue
                result = None
                if len(busy) < self.concurrency:
                    if not self.drain:
                        skip = {k: v for k, v in skip.items() if now - v < 30_000}
                    try:
                        result = chooser.one_pass(busy, set(skip))
                    except (FsjobError, OSError) as error:
                        if not short_of_descriptors(error) or not busy:
                            raise
                        # The attempts running need descriptors to finish (RCPT-7): claim nothing, wait for them.
                        if not short:
                            self.log(f"claiming nothing while attempts run short of descriptors: {shortage(error)}")
                        short = True
                        self._wake.wait(1.0)
                        self._wake.clear()
                        continue
                    short = False
                    if result.paused != paused:
                        paused = result.paused
                        self.log(f"{queue.root} is paused (pause.json): nothing is claimed (PAUSE-1)" if paused else f"{queue.root} is resumed")
                    for job_id, why in result.left.items():
                        skip[job_id] = now
                        if job_id not in reported:
                            reported.add(job_id)
                            self.log(why)
                    if result.decision is not None and result.decision.kind == "run" and result.decision.plan is not None:
                        self._start(result.decision.plan)
                    if result.progress:
                        continue
                if self.drain and not busy and result is not None:
                    # MANIFEST-4: wait for a watch, a retry or a delayed start (DELAY-1) due within
                    # CONSUME_RETRY_WAIT; a paused queue brings nothing (PAUSE-1).
                    due = [at for at in (result.next_retry, result.next_start) if at is not None]
                    waiting = self.judge.watch_next is not None or (bool(due) and min(due) - now_ms() <= CONSUME_RETRY_WAIT)
                    if not waiting:
                        break
                self._wake.wait(0.2 if busy or self.drain else 0.5)
                self._wake.clear()
        finally:
            self._finish()
        return 1 if self.failed else 0

    def _finish(self) -> None:
        if self._stopping_at is None:
            self._stopping_at = mono_ms() - self.shutdown_grace_ms
        with self._lock:
            threads = list(self._running.values())
        for thread in threads:
            thread.join()
        self._unregister()
        if self.guardian is not None:
            self.guardian.stop()


def work(queue: Queue, handlers: Optional[Dict[str, Handler]] = None, concurrency: int = 1, *, drain: bool = False,
         commands: bool = True, register: bool = True, lease_ms: int = LEASE_DEFAULT, shutdown_grace: float = CANCEL_GRACE / 1000,
         install_signals: Optional[bool] = None, log: Callable[[str], None] = _stderr_log) -> int:
    """Consume jobs of ``queue`` until SIGTERM/SIGINT/SIGHUP (or, with ``drain``, until nothing remains to make progress on).

    ``handlers`` maps payload handler names to callables taking a
    :class:`fsjob.PayloadJob` and returning the receipt's ``result``; payload
    jobs without a handler here are left for another consumer (CLAIM-11).
    With ``commands=False`` command jobs are left too. Signal handlers are
    installed when called from the main thread (``install_signals``
    overrides). Returns 0, or 1 when it had to stop early (WORKER-4, no
    guardian, a generation it could not finish, attempts that could not
    start). Raises FsjobError IO (errno EMFILE) before it claims anything
    when the limit on open files leaves no room for one attempt; with room
    for fewer than ``concurrency`` it runs that many at once and logs so.
    """
    # Before anything is read or claimed: a worker that cannot start an attempt would claim jobs for nothing.
    if 1 <= concurrency <= 1024:  # else Worker refuses it
        concurrency, note = worker_room(concurrency, commands)
        if note is not None:
            log(note)
    # FS-2: a long-running consumer refuses a filesystem without FS-1's operations before it serves the queue.
    probe_filesystem(queue.path("tmp"))
    worker = Worker(queue, handlers, concurrency, drain=drain, commands=commands, register=register, lease_ms=lease_ms,
                    shutdown_grace_ms=int(shutdown_grace * 1000), log=log)
    install = threading.current_thread() is threading.main_thread() if install_signals is None else install_signals
    previous: List[Any] = []
    if install:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            previous.append((sig, signal.signal(sig, worker.request_stop)))
    try:
        return worker.run()
    finally:
        for sig, handler in previous:
            signal.signal(sig, handler)

