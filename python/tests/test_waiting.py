"""Waiting on many jobs and which jobs a lane or label means (fsjob.waiting),
and status lines with their start, end, duration and order (fsjob.listing)."""

from __future__ import annotations

from typing import List

from .support import QueueCase, quiet
from fsjob import FsjobError, work
from fsjob.listing import job_lines, select_lines
from fsjob.waiting import summary_exit_code


class WaitMany(QueueCase):
    def test_the_unfinished_jobs_a_selection_means_and_one_exit_status_for_all(self) -> None:
        a = self.queue.enqueue(["true"], cwd=self.outside, lane="render", labels={"batch": "42"})
        b = self.queue.enqueue(["sh", "-c", "exit 3"], cwd=self.outside, labels={"batch": "42"}, priority=5)
        c = self.queue.enqueue(["sleep", "0.2"], cwd=self.outside)
        self.assertEqual(self.queue.unfinished(), [a, b, c])
        self.assertEqual(self.queue.unfinished(lane="render"), [a])
        self.assertEqual(self.queue.unfinished(labels={"batch": "42"}), [a, b])
        self.assertEqual(self.queue.unfinished(lane="render", labels={"batch": "7"}), [])
        # The claim order: highest priority first, then oldest.
        self.assertEqual([line["job_id"] for line in select_lines(job_lines(self.queue)[0], sort="priority")], [b, a, c])
        self.assertEqual(work(self.queue, drain=True, install_signals=False, log=quiet), 0)
        self.assertEqual(self.queue.unfinished(), [])
        seen: List[str] = []
        receipts = self.queue.wait_many([c, b, a, b], on_receipt=lambda receipt: seen.append(receipt.job_id))
        self.assertEqual(seen, [c, b, a])
        self.assertEqual([receipt.job_id for receipt in receipts], [c, b, a])
        self.assertEqual(summary_exit_code(receipts), 3)
        self.assertEqual(summary_exit_code([]), 0)

        lines, unreadable = job_lines(self.queue)
        self.assertEqual(unreadable, [])
        # Finished jobs come after the claim order, newest first (they will not be claimed again).
        self.assertEqual([line["job_id"] for line in select_lines(lines, sort="priority")], [c, b, a])
        # Longest first, judged by the durations the lines report: which job ran
        # longest is the machine's to say (a loaded `true` can outlast the sleep).
        by_duration = select_lines(lines, sort="duration")
        self.assertEqual(sorted(line["job_id"] for line in by_duration), sorted([a, b, c]))
        durations = [line["duration_ms"] for line in by_duration]
        self.assertEqual(durations, sorted(durations, reverse=True))
        self.assertEqual([line["job_id"] for line in select_lines(lines, labels={"batch": "42"})], [b, a])
        slept = next(line for line in lines if line["job_id"] == c)
        self.assertEqual(slept["duration_ms"], slept["finished_ms"] - slept["started_ms"])
        self.assertGreaterEqual(slept["duration_ms"], 200)

    def test_unknown_ids_are_refused_before_waiting_and_a_bounded_wait_names_what_is_unfinished(self) -> None:
        done = self.queue.enqueue(["true"], cwd=self.outside)
        self.assertEqual(work(self.queue, drain=True, install_signals=False, log=quiet), 0)
        waiting = self.queue.enqueue(["true"], cwd=self.outside)
        with self.assertRaises(FsjobError) as missing:
            self.queue.wait_many([done, "1796114669000000000-0123456789abcdef"])
        self.assertEqual(missing.exception.code, "NOT_FOUND")
        seen: List[str] = []
        with self.assertRaises(FsjobError) as late:
            self.queue.wait_many([done, waiting], timeout=0, on_receipt=lambda receipt: seen.append(receipt.job_id))
        self.assertEqual((late.exception.code, late.exception.job_id), ("TIMEOUT", waiting))
        self.assertEqual(seen, [done])

    def test_held_and_blocked_jobs_are_unfinished_and_known(self) -> None:
        build = self.queue.enqueue(["true"], cwd=self.outside)
        tests = self.queue.enqueue(["true"], cwd=self.outside, after=[build], lane="ci")
        held = self.queue.enqueue(["true"], cwd=self.outside, hold=True, lane="ci")
        self.assertEqual(self.queue.unfinished(), [build, tests, held])
        # A gated job's lane is read from jobs/<id>.gated/spec.json (GATE-1).
        self.assertEqual(self.queue.unfinished(lane="ci"), [tests, held])
        with self.assertRaises(FsjobError) as late:
            self.queue.wait_many([tests, held], timeout=0)
        self.assertEqual((late.exception.code, late.exception.job_id), ("TIMEOUT", tests))
        self.queue.release(held)
        self.assertEqual(work(self.queue, drain=True, install_signals=False, log=quiet), 0)
        receipts = self.queue.wait_many([tests, held], timeout=5)
        self.assertEqual([receipt.job_id for receipt in receipts], [tests, held])
        self.assertEqual(summary_exit_code(receipts), 0)
