"""The worker and the limit on open files (fsjob/descriptors.py), at real limits: ``ulimit -n`` before
``python3 -m fsjob work`` starts, and prlimit on a live worker.

- Below what one attempt needs it claims nothing, and says in one line the limit and the need (exit 1,
  as the reference and fsjob-sh); at the need it stated, it runs the job.
- An attempt that cannot start is given back (EXEC-3: an end record, released, counted false), never left
  claimed: for lack of descriptors the worker stops at once, for other reasons after three in a row; the
  attempts already running finish.
- An attempt whose command ran and that runs out of descriptors (prlimit to 3) waits for them, naming the
  limit, keeps the job (no receipt, no second start), and its owner finishes it once it has them again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest
from typing import IO, Dict, List, Tuple

from .support import PYTHON_DIR, QueueCase, until

NEED = re.compile(r"^fsjob: cannot start: too few file descriptors \(EMFILE\): ulimit -n (\d+), and fsjob work needs (\d+) here \(")


class Limits(QueueCase):
    def work(self, limit: int, *args: str) -> "subprocess.CompletedProcess[str]":
        """``python3 -m fsjob work --drain`` under ``ulimit -n limit``, its stdin, stdout and stderr (pipes) open."""
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        return subprocess.run(["sh", "-c", f'ulimit -n {limit} && exec "$@"', "sh", sys.executable, "-S", "-m", "fsjob", "work",
                               "--queue", self.queue.root, "--drain", *args],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=120)

    def serving(self, *args: str) -> "Tuple[subprocess.Popen[bytes], IO[str]]":
        """``python3 -m fsjob work`` serving the queue (no --drain), its output in a file open for reading."""
        env = dict(os.environ, PYTHONPATH=PYTHON_DIR)
        log = open(os.path.join(self.base, "worker.log"), "w+")
        worker = subprocess.Popen([sys.executable, "-S", "-m", "fsjob", "work", "--queue", self.queue.root, *args],
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, start_new_session=True)
        return worker, log

    def files(self, job_id: str) -> List[str]:
        return self.names(job_id)

    def ready_entries(self, job_id: str) -> List[str]:
        return [name for name in os.listdir(os.path.join(self.queue.root, "ready")) if job_id in name]

    def assert_no_open_claim(self, job_id: str) -> None:
        """Every claim.<g>.json of the job has its end.<g>.json, or the job has its receipt."""
        names = self.files(job_id)
        if "receipt.json" in names:
            return
        for name in names:
            found = re.fullmatch(r"claim\.(\d+)\.json", name)
            if found is not None:
                self.assertIn(f"end.{found.group(1)}.json", names, f"{job_id}: claim {found.group(1)} left open: {names}")

    def end_record(self, job_id: str, gen: int) -> Dict[str, object]:
        with open(os.path.join(self.job_dir(job_id), f"end.{gen}.json"), encoding="utf-8") as handle:
            value = json.load(handle)
        assert isinstance(value, dict)
        return value

    def test_below_its_need_it_claims_nothing_and_names_the_limit_and_the_need(self) -> None:
        job = self.queue.enqueue(["true"], cwd=self.outside)
        run = self.work(13)
        self.assertEqual(run.returncode, 1, run.stderr)
        found = NEED.match(run.stderr)
        self.assertIsNotNone(found, run.stderr)
        assert found is not None
        self.assertEqual(found.group(1), "13")
        self.assertIn("raise the limit (ulimit -n 1024, LimitNOFILE= in a systemd unit)", run.stderr)
        self.assertEqual(len(run.stderr.splitlines()), 1, run.stderr)
        self.assertEqual(self.files(job), ["spec.json"], "nothing claimed")
        self.assertEqual(len(self.ready_entries(job)), 1, "the job is still ready")
        need = int(found.group(2))
        # The need it states is enough: one below it is refused the same way, and at it the job runs.
        below = self.work(need - 1)
        self.assertEqual(below.returncode, 1, below.stderr)
        self.assertRegex(below.stderr, NEED)
        self.assertEqual(self.files(job), ["spec.json"], "nothing claimed")
        at = self.work(need)
        self.assertEqual(at.returncode, 0, at.stderr)
        self.assertEqual(self.queue.wait(job, timeout=1).outcome, "succeeded")

    def test_a_limit_with_room_for_fewer_attempts_than_concurrency_runs_fewer_at_once(self) -> None:
        jobs = [self.queue.enqueue(["true"], cwd=self.outside) for _ in range(3)]
        need = NEED.match(self.work(13).stderr)
        assert need is not None
        run = self.work(int(need.group(2)) + 11, "--concurrency", "8")  # room for two attempts
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertRegex(run.stderr, r"running 2 attempt\(s\) at once, not 8: ulimit -n \d+ has room for no more")
        for job in jobs:
            self.assertEqual(self.queue.wait(job, timeout=1).outcome, "succeeded")

    def test_three_attempts_in_a_row_that_cannot_start_stop_the_run_and_each_is_given_back(self) -> None:
        jobs = [self.queue.enqueue(["true"], cwd=self.outside) for _ in range(4)]
        # A file at stdout.<g> makes generation g's output files impossible to create (EXEC-1), whichever generation comes.
        for job in jobs[:3]:
            for gen in (1, 2, 3):
                with open(os.path.join(self.job_dir(job), f"stdout.{gen}"), "x") as handle:
                    handle.write("planted\n")
        run = self.work(1024)
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn("stopping; the jobs stay queued: 3 attempts in a row could not start", run.stderr)
        for job in jobs[:3]:
            self.assert_no_open_claim(job)
            self.assertNotIn("exec.1.json", self.files(job), "nothing ran")
            end = self.end_record(job, 1)
            self.assertEqual((end["reason"], end["counted"]), ("released", False))
            self.assertEqual(len(self.ready_entries(job)), 1, "still ready")
        self.assertEqual(self.files(jobs[3]), ["spec.json"], "the run stopped before the fourth job")

    @unittest.skipIf(shutil.which("prlimit") is None, "prlimit (util-linux) is not installed")
    def test_descriptors_that_run_short_while_it_runs_stop_it_at_the_attempt_that_cannot_start(self) -> None:
        go = os.path.join(self.outside, "go")
        first = self.queue.enqueue(["sh", "-c", f"until [ -e '{go}' ]; do sleep 0.02; done"], cwd=self.outside)
        worker, log = self.serving("--concurrency", "2")
        try:
            until(lambda: os.path.exists(os.path.join(self.job_dir(first), "exec.1.json")), 60, "the first job to run")
            # What the worker holds while the first job runs (two reads that agree: no choosing pass in between),
            # then room for two descriptors more: a claim and its records still go, the second attempt's files and pipes do not.
            held = self.held(worker.pid)
            lowered = subprocess.run(["prlimit", "--pid", str(worker.pid), f"--nofile={held + 2}:"], capture_output=True, text=True)
            self.assertEqual(lowered.returncode, 0, lowered.stderr)
            second = self.queue.enqueue(["true"], cwd=self.outside)
            until(lambda: "end.1.json" in self.files(second), 60, "the second job to be given back")
            with open(go, "w"):
                pass
            self.assertEqual(worker.wait(timeout=60), 1)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
            log.seek(0)
            output = log.read()
            log.close()
        self.assertRegex(output, rf"stopping; the jobs stay queued: an attempt could not start: too few file descriptors \(EMFILE\): ulimit -n {held + 2}:")
        self.assertEqual(self.queue.wait(first, timeout=1).outcome, "succeeded", "the running job finished")
        self.assertNotIn("exec.1.json", self.files(second), "nothing of the second job ran")
        self.assertEqual(self.end_record(second, 1)["reason"], "released")
        self.assert_no_open_claim(second)
        self.assertEqual(len(self.ready_entries(second)), 1, "the second job is still ready")

    @unittest.skipIf(shutil.which("prlimit") is None, "prlimit (util-linux) is not installed")
    def test_a_command_that_ran_waits_for_descriptors_and_its_owner_finishes_it_itself(self) -> None:
        go = os.path.join(self.outside, "go")
        starts = os.path.join(self.outside, "starts")
        job = self.queue.enqueue(["sh", "-c", f"echo start >> '{starts}'; until [ -e '{go}' ]; do sleep 0.02; done; echo done"], cwd=self.outside)
        # A lease far longer than the fault: the owner may keep trying for all of it (RCPT-7).
        worker, log = self.serving("--lease", "300s")
        try:
            until(lambda: os.path.exists(os.path.join(self.job_dir(job), "exec.1.json")), 60, "the command to start")
            # 3: stdin, stdout and stderr; nothing more can be opened.
            lowered = subprocess.run(["prlimit", "--pid", str(worker.pid), "--nofile=3:"], capture_output=True, text=True)
            self.assertEqual(lowered.returncode, 0, lowered.stderr)
            with open(go, "w"):
                pass

            def said() -> str:
                log.seek(0)
                return log.read()

            until(lambda: "waiting for a file descriptor to prove generation 1's group stopped: too few file descriptors (EMFILE): ulimit -n 3;" in said(),
                  60, "the log to name the limit")
            self.assertNotIn("receipt.json", self.files(job), "nothing was published without descriptors")
            self.assertEqual(self.queue.status(job).status, "running", "the job is still its owner's")
            subprocess.run(["prlimit", "--pid", str(worker.pid), "--nofile=1024:"], check=True)
            until(lambda: "receipt.json" in self.files(job), 60, "the receipt")
            worker.terminate()
            self.assertEqual(worker.wait(timeout=60), 0, said())
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
            log.close()
        receipt = self.queue.wait(job, timeout=1)
        self.assertEqual((receipt.outcome, receipt.attempts), ("succeeded", 1), "its own owner finished it")
        self.assertEqual(self.queue.logs(job).stdout, b"done\n", "with its output")
        with open(starts, encoding="utf-8") as handle:
            self.assertEqual(handle.read(), "start\n", "started exactly once")

    @staticmethod
    def held(pid: int) -> int:
        """The descriptors open in ``pid`` once two reads in a row agree."""
        last = -1
        for _ in range(200):
            count = len(os.listdir(f"/proc/{pid}/fd"))
            if count == last:
                return count
            last = count
            time.sleep(0.05)
        raise AssertionError(f"the descriptors of {pid} never settled")
