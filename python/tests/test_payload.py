"""Payload jobs (PAYLOAD-1): handlers are Python callables in the consumer's process."""

from __future__ import annotations

import threading
from typing import Any

from .support import QueueCase, quiet, until
from fsjob import PayloadJob, work


class Payload(QueueCase):
    def test_a_handler_result_is_the_receipt_result(self) -> None:
        job = self.queue.enqueue(handler="add", payload={"a": 2, "b": 1.5})
        code = work(self.queue, {"add": lambda j: {"sum": j.payload["a"] + j.payload["b"]}}, drain=True, install_signals=False, log=quiet)
        self.assertEqual(code, 0)
        r = self.queue.wait(job, 1)
        self.assertEqual((r.outcome, r.result, r.stdout, r.status and r.status.exit), ("succeeded", {"sum": 3.5}, None, 0))
        self.assertNotIn("stdout.1", self.names(job))

    def test_an_exception_fails_the_attempt_and_retries(self) -> None:
        calls = []

        def flaky(job: PayloadJob) -> Any:
            calls.append(job.attempt)
            if job.attempt < 2:
                raise RuntimeError("not yet")
            return "done"

        job = self.queue.enqueue(handler="flaky", payload=None, max_attempts=2)
        work(self.queue, {"flaky": flaky}, drain=True, install_signals=False, log=quiet)
        self.assertEqual(calls, [1, 2])
        self.assertEqual(self.queue.wait(job, 1).result, "done")

    def test_a_job_without_a_handler_here_is_never_claimed(self) -> None:
        job = self.queue.enqueue(handler="elsewhere")
        work(self.queue, {"other": lambda j: None}, drain=True, install_signals=False, log=quiet)
        self.assertEqual(self.names(job), ["spec.json"])

    def test_cancel_aborts_the_handler(self) -> None:
        started = threading.Event()

        def slow(job: PayloadJob) -> Any:
            started.set()
            job.abort.wait(60)
            return "aborted" if job.aborted else "finished"

        job = self.queue.enqueue(handler="slow")
        worker = threading.Thread(target=lambda: work(self.queue, {"slow": slow}, drain=True, install_signals=False, log=quiet))
        worker.start()
        until(started.is_set, 30, "the handler to start")
        self.queue.cancel(job)
        worker.join(60)
        self.assertEqual(self.queue.wait(job, 1).outcome, "cancelled")

    def test_a_result_that_cannot_be_recorded_fails_the_job(self) -> None:
        job = self.queue.enqueue(handler="big")
        work(self.queue, {"big": lambda j: "x" * 300000}, drain=True, install_signals=False, log=quiet)
        r = self.queue.wait(job, 1)
        self.assertEqual((r.outcome, r.result), ("failed", None))
