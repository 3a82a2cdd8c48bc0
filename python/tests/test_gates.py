"""Dependencies, held jobs and lane slots (1.2: spec/gates.md, spec/lanes.md LANE-5) through the library and the CLI."""

from __future__ import annotations

import json
import os

from .support import QueueCase, cli, quiet
from fsjob import FsjobError
from fsjob.worker import work


class Gates(QueueCase):
    def drain(self) -> None:
        work(self.queue, concurrency=2, drain=True, install_signals=False, log=quiet)

    def test_a_job_runs_after_its_dependency_succeeded(self) -> None:
        marker = os.path.join(self.outside, "order")
        first = self.queue.enqueue(["sh", "-c", f"echo first >> {marker}"])
        second = self.queue.enqueue(["sh", "-c", f"echo second >> {marker}"], after=[first], priority=10)
        # GATE-1: published gated, where no 1.1 reader looks.
        self.assertTrue(os.path.isdir(self.job_dir(second) + ".gated"))
        self.assertEqual(self.queue.status(second).status, "blocked")
        self.assertEqual(self.queue.status(second).awaiting, first)
        self.drain()
        with open(marker, encoding="utf-8") as handle:
            self.assertEqual(handle.read().split(), ["first", "second"])
        self.assertEqual(self.queue.wait(second, timeout=10).outcome, "succeeded")

    def test_a_failed_dependency_cancels_the_job_with_a_reason(self) -> None:
        first = self.queue.enqueue(["false"])
        second = self.queue.enqueue(["true"], after=[first])
        after_any = self.queue.enqueue(["true"], after=[(first, "finished")])
        self.drain()
        receipt = self.queue.wait(second, timeout=10)
        self.assertEqual((receipt.outcome, receipt.exit_code), ("cancelled", 130))  # AFTER-3
        self.assertEqual(self.queue.wait(after_any, timeout=10).outcome, "succeeded")

    def test_a_drain_leaves_the_held_and_blocked_jobs_gated_and_counts_them(self) -> None:
        from fsjob.listing import gated_counts

        runnable = self.queue.enqueue(["true"])
        held = self.queue.enqueue(["true"], hold=True)
        behind = self.queue.enqueue(["true"], after=[held])
        self.drain()
        self.assertEqual(self.queue.status(runnable).status, "finished")
        # What work --drain reports as left: the two gated directories still on disk.
        self.assertTrue(os.path.isdir(self.job_dir(held) + ".gated") and os.path.isdir(self.job_dir(behind) + ".gated"))
        self.assertEqual(gated_counts(self.queue), {"held": 1, "blocked": 1})
        self.queue.release(held)
        self.assertEqual(gated_counts(self.queue), {"held": 0, "blocked": 1})
        self.drain()
        self.assertEqual(gated_counts(self.queue), {"held": 0, "blocked": 0})

    def test_a_dependency_must_exist_at_enqueue(self) -> None:
        with self.assertRaises(FsjobError) as caught:
            self.queue.enqueue(["true"], after=["1764476040000000000-0123456789abcdef"])
        self.assertEqual(caught.exception.code, "NOT_FOUND")  # AFTER-2: so no cycle can be built
        self.assertEqual(os.listdir(self.queue.path("jobs")), [])

    def test_a_held_job_waits_for_release_and_may_be_cancelled(self) -> None:
        held = self.queue.enqueue(["true"], hold=True, lane="db")
        other = self.queue.enqueue(["true"], hold=True)
        self.assertEqual(self.queue.status(held).status, "held")
        self.drain()
        self.assertEqual(self.queue.status(held).status, "held")  # HOLD-1: no consumer runs it
        with self.assertRaises(FsjobError) as caught:
            self.queue.release(self.queue.enqueue(["true"]))
        self.assertEqual(caught.exception.code, "NOT_HELD")
        released = self.queue.release_where(lane="db")
        self.assertEqual([(r.job_id, r.published, r.next) for r in released], [(held, True, "open")])
        self.assertFalse(self.queue.release(held).published)  # twice is fine
        self.assertTrue(self.queue.cancel(other))  # HOLD-3
        self.drain()
        self.assertEqual(self.queue.wait(held, timeout=10).outcome, "succeeded")
        self.assertEqual(self.queue.wait(other, timeout=10).outcome, "cancelled")

    def test_the_cli_takes_after_hold_lane_slots_and_release(self) -> None:
        root = self.queue.root
        first = cli("enqueue", "--queue", root, "--lane", "render", "--lane-slots", "2", "--", "true").stdout.decode().strip()
        enqueued = cli("enqueue", "--queue", root, "--hold", "--after", f"{first}:finished", "--json", "--", "true")
        self.assertEqual(enqueued.returncode, 0, enqueued.stderr)
        spec = json.loads(enqueued.stdout)
        self.assertEqual((spec["hold"], spec["after"]), (True, [{"job_id": first, "when": "finished"}]))
        status = json.loads(cli("status", "--queue", root, "--json").stdout)
        self.assertEqual(status["counts"]["statuses"].get("held"), 1)
        released = cli("release", "--queue", root, "--json", spec["id"])
        self.assertEqual(json.loads(released.stdout)["released"][0]["next"], "waiting")
        self.assertEqual(cli("release", "--queue", root).returncode, 2)
        self.assertEqual(cli("release", "--queue", root, first).returncode, 1)  # never held
        with open(os.path.join(self.job_dir(first), "spec.json"), encoding="utf-8") as handle:
            self.assertEqual(json.load(handle)["lane_slots"], 2)
