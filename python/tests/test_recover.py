"""Recovery (RECOV-1, TEMP-1, TEMP-2) over planted states."""

from __future__ import annotations

import os
import subprocess
import time

from .support import QueueCase, quiet
from fsjob import recover, work
from fsjob.identity import process_start, self_identity
from fsjob.names import RecordName
from fsjob.records import encode_record
from fsjob.safefs import publish_link


class Recover(QueueCase):
    def dead_identity(self) -> dict:  # type: ignore[type-arg]
        child = subprocess.Popen(["sleep", "30"])
        start = process_start(child.pid)
        child.kill()
        child.wait()
        return dict(self_identity(), pid=child.pid, start=start)

    def test_a_dead_owner_s_claim_is_released_and_the_job_runs_again(self) -> None:
        job = self.queue.enqueue(["true"], max_attempts=2, cwd=self.outside)
        owner = self.dead_identity()
        claim = {"fsjob": "1.1", "type": "claim", "job_id": job, "gen": 1, "owner": owner, "worker_id": None, "claimed_ms": 1, "lease_ms": 30000}
        publish_link(self.job_dir(job), "claim.1.json", encode_record("claim", claim, RecordName("claim", job_id=job, gen=1)))
        group = {"pgid": owner["pid"], "start": owner["start"], "boot_id": owner["boot_id"], "pid_ns": owner["pid_ns"]}
        execution = {"fsjob": "1.1", "type": "exec", "job_id": job, "gen": 1, "attempt": 1, "group": group, "recorded_ms": 2}
        publish_link(self.job_dir(job), "exec.1.json", encode_record("exec", execution, RecordName("exec", job_id=job, gen=1)))
        report = recover(self.queue, quiet)
        self.assertEqual(report.left_alone, [])
        self.assertIn("end.2.json", self.names(job))
        work(self.queue, drain=True, install_signals=False, log=quiet)
        receipt = self.queue.wait(job, 1)
        self.assertEqual((receipt.outcome, receipt.attempts, receipt.gen), ("succeeded", 2, 3))

    def test_an_unreadable_claim_is_left_alone_and_reported(self) -> None:
        job = self.queue.enqueue(["true"])
        with open(os.path.join(self.job_dir(job), "claim.1.json"), "w") as handle:
            handle.write("{}")
        os.chmod(os.path.join(self.job_dir(job), "claim.1.json"), 0o600)
        report = recover(self.queue, quiet)
        self.assertEqual(len(report.left_alone), 1)
        work(self.queue, drain=True, install_signals=False, log=quiet)
        self.assertEqual(self.names(job), ["claim.1.json", "spec.json"])

    def test_stale_temporary_files_go_and_a_published_job_s_old_name_stays(self) -> None:
        job = self.queue.enqueue(["true"])
        old = time.time() - 7200
        stale = os.path.join(self.job_dir(job), ".claim.1.json.123.abcd")
        fresh = os.path.join(self.job_dir(job), ".claim.1.json.124.abcd")
        twin = self.queue.path("tmp", job)
        other = self.queue.path("tmp", "1" * 19 + "-" + "b" * 16)
        for path in (stale, fresh):
            with open(path, "w"):
                pass
        os.mkdir(twin, 0o700)
        os.mkdir(other, 0o700)
        for path in (stale, twin, other):
            os.utime(path, (old, old))
        report = recover(self.queue, quiet)
        self.assertFalse(os.path.exists(stale))
        self.assertTrue(os.path.exists(fresh))
        self.assertTrue(os.path.exists(twin))
        self.assertFalse(os.path.exists(other))
        self.assertEqual(sorted(report.removed), sorted([stale, other]))
