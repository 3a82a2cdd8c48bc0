"""Helpers shared by the tests: temporary queues, the CLI in a subprocess, bounded waits."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Callable, List, Optional

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(PYTHON_DIR)
sys.path.insert(0, PYTHON_DIR)

from fsjob import Queue  # noqa: E402


def quiet(text: str) -> None:
    """A log function for in-process workers that keeps test output clean."""


class QueueCase(unittest.TestCase):
    """A test with a fresh queue in a private temporary directory (removed afterwards)."""

    def setUp(self) -> None:
        self.base = tempfile.mkdtemp(prefix="fsjob-py-test-")
        os.chmod(self.base, 0o700)
        self.queue = Queue.init(os.path.join(self.base, "q"))
        self.outside = os.path.join(self.base, "outside")
        os.mkdir(self.outside, 0o700)

    def tearDown(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)

    def job_dir(self, job_id: str) -> str:
        return os.path.join(self.queue.root, "jobs", job_id)

    def names(self, job_id: str) -> List[str]:
        return sorted(n for n in os.listdir(self.job_dir(job_id)) if not n.startswith("."))


def cli(*args: str, env: Optional[dict] = None, timeout: float = 120, stdin: Optional[bytes] = None) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    """Run ``python3 -m fsjob ARGS`` with this interpreter; a watchdog kills it after ``timeout`` seconds."""
    full_env = dict(os.environ if env is None else env)
    full_env["PYTHONPATH"] = PYTHON_DIR
    return subprocess.run([sys.executable, "-S", "-m", "fsjob", *args], input=stdin, capture_output=True, env=full_env, timeout=timeout)


def start_cli(*args: str) -> "subprocess.Popen[bytes]":
    """Start ``python3 -m fsjob ARGS`` in its own process group."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR
    return subprocess.Popen([sys.executable, "-S", "-m", "fsjob", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def until(condition: Callable[[], bool], limit: float, what: str) -> None:
    """Wait for ``condition`` (a watchdog, not a timing assertion): fail naming ``what`` after ``limit`` seconds."""
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"still waiting after {limit} s: {what}")
        time.sleep(0.05)


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False
