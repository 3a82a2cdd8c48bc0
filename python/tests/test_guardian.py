"""The guardian (WORKER-2, LEASE-5) and fencing (LEASE-6): commands are stopped when their owner dies or stops running.

Waits are watchdogs with the spec's bound plus a stated scheduling tolerance, never timings."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Tuple

from .support import QueueCase, alive, start_cli, until
from fsjob.constants import GUARDIAN_LIMIT, LEASE_MIN

#: Scheduling tolerance on a loaded 2-core host, added to every spec bound below.
TOLERANCE = 15.0


class Guardian(QueueCase):
    def start_job(self, lease: float = 30) -> "Tuple[subprocess.Popen[bytes], int, str]":
        pidfile = os.path.join(self.outside, "pid")
        job = self.queue.enqueue(["sh", "-c", f"echo $$ > {pidfile}; trap '' TERM; while :; do sleep 1; done"], cwd=self.outside)
        worker = start_cli("work", "--queue", self.queue.root, "--lease", str(lease))
        until(lambda: os.path.exists(pidfile) and os.path.getsize(pidfile) > 0, 60, "the command to start")
        with open(pidfile) as handle:
            pid = int(handle.read())
        return worker, pid, job

    def test_a_killed_owner_s_command_is_stopped_within_guardian_limit(self) -> None:
        worker, pid, job = self.start_job()
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(30)
        until(lambda: not alive(pid), GUARDIAN_LIMIT / 1000 + TOLERANCE, "the guardian to stop the command (WORKER-2)")
        self.assertEqual(self.queue.status(job).status, "orphaned")

    def test_a_stopped_owner_s_command_is_stopped_and_the_owner_fences_itself(self) -> None:
        worker, pid, job = self.start_job(lease=LEASE_MIN / 1000)
        os.kill(worker.pid, signal.SIGSTOP)
        try:
            until(lambda: not alive(pid), (LEASE_MIN + GUARDIAN_LIMIT) / 1000 + TOLERANCE, "the deadman to stop the command (LEASE-5)")
        finally:
            os.kill(worker.pid, signal.SIGCONT)
        until(lambda: os.path.exists(os.path.join(self.job_dir(job), "receipt.json")), 60, "the resumed owner to finish the generation (LEASE-6)")
        receipt = self.queue.wait(job, 1)
        self.assertEqual((receipt.outcome, receipt.reason, receipt.attempts), ("lost", "owner_lost", 1))
        os.kill(worker.pid, signal.SIGTERM)
        self.assertEqual(worker.wait(60), 0)
