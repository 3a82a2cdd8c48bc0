"""Protocol 1.1's operator features: kept output ends (EXEC-17), delayed starts
(DELAY-1) and pausing a queue (PAUSE-1), on disk and through the API."""

from __future__ import annotations

import json
import os
import time
from typing import Callable, List, Tuple

from .support import QueueCase, quiet
from fsjob import FsjobError, constants, work

LINES = b"".join(b"%d\n" % n for n in range(1, 3001))


class OutputKeep(QueueCase):
    def test_head_tail_and_both_ends_are_kept_in_order(self) -> None:
        jobs = {keep: self.queue.enqueue(["seq", "1", "3000"], cwd=self.outside, max_output_bytes=1000, output_keep=keep)
                for keep in ("head", "tail", "head_tail")}
        short = self.queue.enqueue(["seq", "1", "10"], cwd=self.outside, max_output_bytes=1000, output_keep="tail")
        self.assertEqual(work(self.queue, drain=True, install_signals=False, log=quiet), 0)
        want = {"head": LINES[:1000], "tail": LINES[-1000:], "head_tail": LINES[:500] + LINES[-500:]}
        for keep, job in jobs.items():
            with open(os.path.join(self.job_dir(job), "stdout.1"), "rb") as handle:
                self.assertEqual(handle.read(), want[keep], keep)
            receipt = self.queue.wait(job, 1)
            assert receipt.stdout is not None
            self.assertEqual((receipt.stdout.bytes_total, receipt.stdout.bytes_kept, receipt.stdout.truncated), (len(LINES), 1000, True))
            logs = self.queue.logs(job)
            self.assertEqual((logs.output_keep, logs.gap(logs.stdout)), (keep, {"head": 1000, "tail": 0, "head_tail": 500}[keep]))
        self.assertEqual(self.queue.logs(short).stdout, b"".join(b"%d\n" % n for n in range(1, 11)))

    def test_the_1_1_members_are_written_only_when_they_say_something(self) -> None:
        plain = self.queue.enqueue(["true"], cwd=self.outside, output_keep="head")
        tail = self.queue.enqueue(["true"], cwd=self.outside, output_keep="tail")
        specs = {}
        for name, job in (("plain", plain), ("tail", tail)):
            with open(os.path.join(self.job_dir(job), "spec.json"), "rb") as handle:
                specs[name] = json.loads(handle.read())
        # VER-4: a 1.2 writer says 1.2 whatever members it uses.
        self.assertEqual((specs["plain"]["fsjob"], "output_keep" in specs["plain"], "not_before_ms" in specs["plain"]), (constants.PROTOCOL_VERSION, False, False))
        self.assertEqual((specs["tail"]["fsjob"], specs["tail"]["output_keep"]), ("1.2", "tail"))


class DelayedStart(QueueCase):
    def test_not_claimed_before_its_instant_and_cancel_still_ends_it(self) -> None:
        near = self.queue.enqueue(["true"], cwd=self.outside, not_before=time.time() + 1.5)
        far = self.queue.enqueue(["true"], cwd=self.outside, not_before=time.time() + 3600)
        self.assertEqual((self.queue.status(near).status, self.queue.status(far).status), ("delayed", "delayed"))
        # A draining consumer waits for the near one (within CONSUME_RETRY_WAIT) and leaves the far one.
        self.assertEqual(work(self.queue, drain=True, install_signals=False, log=quiet), 0)
        with open(os.path.join(self.job_dir(near), "claim.1.json"), "rb") as handle:
            claimed_ms = json.loads(handle.read())["claimed_ms"]
        with open(os.path.join(self.job_dir(near), "spec.json"), "rb") as handle:
            self.assertGreaterEqual(claimed_ms, json.loads(handle.read())["not_before_ms"])
        self.assertEqual(self.queue.wait(near, 1).outcome, "succeeded")
        self.assertEqual(self.names(far), ["spec.json"])
        self.assertTrue(self.queue.cancel(far))
        self.assertEqual(self.queue.wait(far, 1).outcome, "cancelled")

    def test_a_producer_refuses_a_start_past_delay_max_or_the_queue_deadline(self) -> None:
        with self.assertRaises(FsjobError) as caught:
            self.queue.enqueue(["true"], not_before=time.time() + 366 * 86400)
        self.assertEqual((caught.exception.code, caught.exception.clause), ("USAGE", "DELAY-1"))
        with self.assertRaises(FsjobError) as caught:
            self.queue.enqueue(["true"], not_before=time.time() + 60, queue_deadline=30)
        self.assertEqual(caught.exception.code, "USAGE")
        self.assertEqual(os.listdir(self.queue.path("jobs")), [])


class Pause(QueueCase):
    def test_nothing_is_claimed_while_pause_json_exists_whatever_it_holds(self) -> None:
        job = self.queue.enqueue(["true"], cwd=self.outside)
        self.assertTrue(self.queue.pause("maintenance"))
        self.assertFalse(self.queue.pause("again"))
        state = self.queue.paused()
        self.assertTrue(state.paused)
        assert state.record is not None
        self.assertEqual((state.record["fsjob"], state.record["reason"]), ("1.2", "maintenance"))
        self.assertEqual(work(self.queue, drain=True, install_signals=False, log=quiet), 0)
        self.assertEqual(self.names(job), ["spec.json"])
        # Its existence decides, not its content (PAUSE-1, REC-9).
        self.assertTrue(self.queue.resume())
        with open(self.queue.path("pause.json"), "wb") as handle:
            handle.write(b"not a record\n")
        self.assertEqual(self.queue.paused().record, None)
        self.assertEqual(work(self.queue, drain=True, install_signals=False, log=quiet), 0)
        self.assertEqual(self.names(job), ["spec.json"])
        self.assertTrue(self.queue.resume())
        self.assertFalse(self.queue.resume())
        self.assertEqual(work(self.queue, drain=True, install_signals=False, log=quiet), 0)
        self.assertEqual(self.queue.wait(job, 1).outcome, "succeeded")


class DamagedLayout(QueueCase):
    def test_a_queue_with_a_planted_top_directory_is_refused_by_every_operation(self) -> None:
        job = self.queue.enqueue(["true"], cwd=self.outside)
        lanes = self.queue.path("lanes")
        os.rmdir(lanes)
        os.symlink(self.outside, lanes)
        operations: List[Tuple[str, Callable[[], object]]] = [
            ("enqueue", lambda: self.queue.enqueue(["true"], cwd=self.outside)),
            ("work", lambda: work(self.queue, drain=True, install_signals=False, log=quiet)),
            ("cancel", lambda: self.queue.cancel(job)),
        ]
        for name, operation in operations:
            with self.assertRaises(FsjobError, msg=name) as caught:
                operation()
            self.assertEqual(caught.exception.clause, "LAYOUT-10", name)
        self.assertEqual(self.names(job), ["spec.json"])
