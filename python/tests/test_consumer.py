"""The consumer on command jobs (spec/claim.md, spec/running.md, spec/control.md): work(..., drain=True) in this process."""

from __future__ import annotations

import os
import threading
import time

from .support import QueueCase, quiet, until
from fsjob import work


class Commands(QueueCase):
    def drain(self, concurrency: int = 1) -> int:
        return work(self.queue, concurrency=concurrency, drain=True, install_signals=False, log=quiet)

    def test_outcomes_exit_codes_and_outputs(self) -> None:
        ok = self.queue.enqueue(["sh", "-c", "printf out; printf err >&2"], cwd=self.outside)
        failed = self.queue.enqueue(["sh", "-c", "exit 3"], cwd=self.outside)
        missing = self.queue.enqueue(["/nonexistent/program"], cwd=self.outside)
        killed = self.queue.enqueue(["sh", "-c", "kill -9 $$"], cwd=self.outside)
        bounded = self.queue.enqueue(["sh", "-c", "head -c 5000 /dev/zero"], cwd=self.outside, max_output_bytes=1000)
        inside = self.queue.enqueue(["true"], cwd=self.queue.root)
        self.assertEqual(self.drain(), 0)
        r = self.queue.wait(ok, timeout=1)
        self.assertEqual((r.outcome, r.exit_code, r.attempts), ("succeeded", 0, 1))
        assert r.stdout is not None and r.stderr is not None
        self.assertEqual((r.stdout.bytes_kept, r.stdout.bytes_total, r.stderr.bytes_kept), (3, 3, 3))
        self.assertEqual(self.queue.logs(ok).stdout, b"out")
        self.assertEqual(self.queue.wait(failed, 1).exit_code, 3)
        self.assertEqual((self.queue.wait(missing, 1).outcome, self.queue.wait(missing, 1).exit_code), ("failed", 127))
        r = self.queue.wait(killed, 1)
        self.assertEqual((r.outcome, r.exit_code, r.status and r.status.signal), ("failed", 137, "SIGKILL"))
        r = self.queue.wait(bounded, 1)
        assert r.stdout is not None
        self.assertEqual((r.stdout.bytes_kept, r.stdout.bytes_total, r.stdout.truncated), (1000, 5000, True))
        self.assertEqual(os.path.getsize(os.path.join(self.job_dir(bounded), "stdout.1")), 1000)
        r = self.queue.wait(inside, 1)
        self.assertEqual((r.outcome, r.reason, r.exit_code), ("rejected", "cwd_unusable", 126))

    def test_the_environment_is_exactly_exec_6(self) -> None:
        os.environ["FSJOB_PY_TEST_MARKER"] = "leak"
        try:
            job = self.queue.enqueue(["env"], env={"X": "1"}, cwd=self.outside)
            mask = self.queue.enqueue(["sh", "-c", "umask; grep -E '^Sig(Ign|Blk)' /proc/self/status"], cwd=self.outside)
            self.drain()
        finally:
            del os.environ["FSJOB_PY_TEST_MARKER"]
        names = sorted(line.split("=", 1)[0] for line in self.queue.logs(job).stdout.decode().splitlines())
        self.assertEqual(names, ["FSJOB_ATTEMPT", "FSJOB_JOB_ID", "FSJOB_QUEUE", "HOME", "PATH", "X"])
        # EXEC-13: umask 0022, no signal ignored or blocked (Python itself ignores SIGPIPE).
        self.assertEqual(self.queue.logs(mask).stdout.decode().split(), ["0022", "SigBlk:", "0000000000000000", "SigIgn:", "0000000000000000"])

    def test_retries_then_success(self) -> None:
        marker = os.path.join(self.outside, "count")
        job = self.queue.enqueue(["sh", "-c", f"echo x >> {marker}; [ $(wc -l < {marker}) -ge 3 ]"], max_attempts=3, cwd=self.outside)
        self.drain()
        r = self.queue.wait(job, 1)
        self.assertEqual((r.outcome, r.attempts, r.gen), ("succeeded", 3, 3))
        self.assertEqual([n for n in self.names(job) if n.startswith("end.")], ["end.1.json", "end.2.json"])

    def test_timeout_stops_the_group_and_counts(self) -> None:
        job = self.queue.enqueue(["sh", "-c", "trap '' TERM; sleep 30 & wait"], timeout=0.5, kill_grace=0.3, cwd=self.outside)
        self.drain()
        r = self.queue.wait(job, 1)
        self.assertEqual((r.outcome, r.exit_code), ("timed_out", 124))

    def test_cancel_of_a_running_job(self) -> None:
        job = self.queue.enqueue(["sleep", "60"], cwd=self.outside)
        worker = threading.Thread(target=self.drain)
        worker.start()
        until(lambda: "exec.1.json" in self.names(job), 30, "the job to start")
        self.queue.cancel(job)
        worker.join(60)
        r = self.queue.wait(job, 1)
        self.assertEqual((r.outcome, r.exit_code, r.status and r.status.signal), ("cancelled", 130, "SIGTERM"))

    def test_concurrency_runs_jobs_at_once_each_once(self) -> None:
        log = os.path.join(self.outside, "starts")
        barrier = os.path.join(self.outside, "barrier")
        # Each job waits until all four have started: only a consumer running four at once finishes them.
        script = f"echo $FSJOB_JOB_ID >> {log}; i=0; while [ $(wc -l < {log}) -lt 4 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; [ $i -lt 600 ]"
        jobs = [self.queue.enqueue(["sh", "-c", script], cwd=self.outside) for _ in range(4)]
        self.assertEqual(self.drain(concurrency=4), 0)
        self.assertFalse(os.path.exists(barrier))
        for job in jobs:
            self.assertEqual(self.queue.wait(job, 1).outcome, "succeeded")
        with open(log) as handle:
            self.assertEqual(sorted(handle.read().split()), sorted(jobs))

    def test_lanes_never_overlap(self) -> None:
        log = os.path.join(self.outside, "lane")
        script = f"echo start >> {log}; sleep 0.2; echo end >> {log}"
        jobs = [self.queue.enqueue(["sh", "-c", script], lane="one", cwd=self.outside) for _ in range(3)]
        self.drain(concurrency=3)
        with open(log) as handle:
            self.assertEqual(handle.read().split(), ["start", "end"] * 3)
        self.assertTrue(all(self.queue.wait(j, 1).succeeded for j in jobs))

    def test_a_planted_invalid_spec_is_rejected_never_run(self) -> None:
        job = self.queue.enqueue(["touch", os.path.join(self.outside, "ran")])
        spec = os.path.join(self.job_dir(job), "spec.json")
        os.chmod(spec, 0o666)
        self.drain()
        r = self.queue.wait(job, 1)
        self.assertEqual((r.outcome, r.reason), ("rejected", "invalid_spec"))
        self.assertFalse(os.path.exists(os.path.join(self.outside, "ran")))


class Shutdown(QueueCase):
    def test_sigterm_drains_and_ends_the_attempt_as_shutdown(self) -> None:
        from .support import start_cli
        import signal as sig

        job = self.queue.enqueue(["sleep", "60"], max_attempts=2, cwd=self.outside)
        worker = start_cli("work", "--queue", self.queue.root, "--shutdown-grace", "0.5")
        until(lambda: "exec.1.json" in self.names(job), 30, "the job to start")
        until(lambda: len(os.listdir(self.queue.path("workers"))) == 1, 30, "the worker registration")
        worker.send_signal(sig.SIGTERM)
        self.assertEqual(worker.wait(60), 0)
        self.assertIn("end.1.json", self.names(job))
        self.assertEqual(self.queue.status(job).status, "queued")
        self.assertEqual(os.listdir(self.queue.path("workers")), [])
        time.sleep(0)
